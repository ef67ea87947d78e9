"""What a start imports: a bot without MCP_CONFIG never loads the mcp SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = ("import sys, bot.__main__, bot.process.runtime, bot.console\n"
         "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp'}))\n")


def test_the_bots_modules_load_without_the_mcp_sdk() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_mcp_names_are_still_there_on_first_use() -> None:
    from agent.tools import mcp

    assert mcp.McpTools.__name__ == "McpTools"
    assert mcp.read_mcp_config(None, {}).servers == ()
