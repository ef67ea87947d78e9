"""bot.process.gil: the GIL's switch interval is shortened to 1 ms, and `python -m bot run`, the real
entry point, does it before it serves. What that buys the event loop is measured in
bench/memory_bench.py (`--switch-interval-ms`), never timed here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.process.gil import SWITCH_INTERVAL_S
from tests.bot.test_shutdown import stderr_of_a_served_run
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]

# in a fresh interpreter: the interval is the whole process's, and this one's is left as it is
_SCRIPT = ("import json, sys; from bot.process.gil import shorten_switch_interval; before = sys.getswitchinterval(); "
           "now = shorten_switch_interval(); print(json.dumps([before, now, sys.getswitchinterval()]))")


def test_the_switch_interval_goes_from_pythons_5_ms_to_1_ms() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    before, returned, after = json.loads(done.stdout)
    assert before == pytest.approx(0.005)
    assert SWITCH_INTERVAL_S == 0.001 and returned == after == pytest.approx(SWITCH_INTERVAL_S)


async def test_python_m_bot_run_shortens_the_switch_interval(
        dc: FakeDiscord, fake: FakeOpenAI, tmp_path: Path) -> None:
    err = await stderr_of_a_served_run(dc, fake, tmp_path)
    said = [line for line in err.splitlines() if "GIL switch interval:" in line]
    assert len(said) == 1 and "GIL switch interval: 1 ms" in said[0], err
