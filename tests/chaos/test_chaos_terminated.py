"""`bench/chaos.py` sent SIGTERM in the middle of a part stops the bot it started (and the
bot's Chroma worker) before it exits, instead of leaving them running."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from bench.chaos_world import REPO

pytestmark = pytest.mark.slow  # starts the real bot process


def _running_in(folder: Path) -> list[int]:
    """The processes (not zombies) whose working directory is in ``folder``: the bot and its
    children run there."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and Path(cwd).is_relative_to(folder):
            found.append(int(entry.name))
    return found


async def test_sigterm_stops_the_bot_it_started_before_it_exits(tmp_path: Path) -> None:
    workdir = tmp_path / "run"
    chaos = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "bench" / "chaos.py"), "kill", "--kills", "4", "--workdir", str(workdir),
        cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        for _ in range(1200):  # the bot and its Chroma worker, both up
            assert chaos.returncode is None, "bench/chaos.py exited before its bot started"
            if len(_running_in(workdir)) >= 2:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("bench/chaos.py never started its bot and the bot's worker")
        chaos.send_signal(signal.SIGTERM)
        chaos.send_signal(signal.SIGTERM)   # a second one does not cut the clean-up short
        _, err = await asyncio.wait_for(chaos.communicate(), 60)
        assert chaos.returncode == 128 + signal.SIGTERM, err.decode()[-2000:]
        assert "SIGTERM: stopped, with any bot it ran" in err.decode()
        assert _running_in(workdir) == []
    finally:
        if chaos.returncode is None:
            chaos.kill()
            await chaos.communicate()
        for _ in range(100):  # anything the test's failure left: killed, and gone before the next test
            left = _running_in(workdir)
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.1)
