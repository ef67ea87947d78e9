"""What a start imports: reading the settings loads none of the heavy libraries (a wrong
setting is reported in a second), and a bot without MCP_CONFIG never loads the mcp SDK."""

from __future__ import annotations

import subprocess
import sys

from tests.child_env import with_repo_on_path

HEAVY = ("mcp", "openai", "chromadb", "onnxruntime", "discord", "numpy")


def imported(modules: str) -> list[str]:
    """Which of HEAVY a fresh interpreter has loaded after importing `modules`."""
    probe = f"import sys, {modules}\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))\n"
    done = subprocess.run([sys.executable, "-c", probe], env=with_repo_on_path(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_reading_the_settings_imports_none_of_the_heavy_libraries() -> None:
    assert imported("bot.__main__, bot.settings.config") == []


def test_the_bots_modules_load_without_the_mcp_sdk() -> None:
    assert "mcp" not in imported("bot.__main__, bot.process.runtime, bot.console")


def test_the_mcp_names_are_still_there_on_first_use() -> None:
    from agent.tools import mcp

    assert mcp.McpTools.__name__ == "McpTools"
    assert mcp.read_mcp_config(None, {}).servers == ()
