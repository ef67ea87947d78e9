"""bot.process.allocator: with glibc's malloc thresholds pinned, memory a thread frees goes back to the
system even after a large block was freed (which, unpinned, raises the thresholds for good); and
`python -m bot run`, the real entry point, pins them before it serves.

Each case runs in a fresh interpreter: the thresholds are the whole process's, and the test
process's own have long been raised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.process.allocator import THRESHOLD_BYTES
from tests.bot.test_shutdown import stderr_of_a_served_run
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import FakeOpenAI


ROOT = Path(__file__).resolve().parents[2]

# A thread takes 12 blocks of 1 MiB, writes them, frees them all; the script prints how much of
# that the process still holds resident afterwards (KiB), and whether the thresholds were pinned.
# Before it, an 8 MiB block is freed: unpinned, glibc then serves 1 MiB blocks from the thread's
# arena and keeps up to 16 MiB free at its end (twice the freed block), resident.
_SCRIPT = textwrap.dedent("""
    import json, sys, threading
    from pathlib import Path
    from bot.process.allocator import pin_malloc_thresholds

    def rss_anon_kib():
        status = Path("/proc/self/status").read_text().splitlines()
        return int(next(row for row in status if row.startswith("RssAnon:")).split()[1])

    big = bytearray(8 << 20)
    del big
    pinned = pin_malloc_thresholds(json.loads(sys.argv[1])) if sys.argv[2] == "pin" else False
    threading.Thread(target=lambda: None).start()   # the threading machinery's own allocations
    before = rss_anon_kib()

    def churn():
        blocks = [bytearray(b"x" * (1 << 20)) for _ in range(12)]
        del blocks

    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    print(json.dumps({"pinned": pinned, "held_kib": rss_anon_kib() - before}))
""")


def _held_after_a_thread_frees_12_mib(pin: bool, environ: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(environ or {}), "pin" if pin else "no"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    return json.loads(done.stdout)


_GLIBC = sys.platform.startswith("linux") and "glibc" in (os.confstr("CS_GNU_LIBC_VERSION") or "")
needs_glibc = pytest.mark.skipif(not _GLIBC, reason="glibc's malloc thresholds: Linux with glibc only")


@needs_glibc
def test_unpinned_a_freed_large_block_leaves_what_a_thread_frees_resident() -> None:
    # the condition the bot is in after its imports: what pinning is for
    held = _held_after_a_thread_frees_12_mib(pin=False)
    assert held["held_kib"] >= 10 * 1024


@needs_glibc
def test_pinned_what_a_thread_frees_goes_back_to_the_system() -> None:
    held = _held_after_a_thread_frees_12_mib(pin=True)
    assert held["pinned"] is True
    assert held["held_kib"] < 2 * 1024


@needs_glibc
@pytest.mark.parametrize("environ", [{"MALLOC_MMAP_THRESHOLD_": "1048576"}, {"MALLOC_TRIM_THRESHOLD_": "0"},
                                     {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=65536"}])
def test_the_operators_own_glibc_setting_is_left_alone(environ: dict[str, str]) -> None:
    held = _held_after_a_thread_frees_12_mib(pin=True, environ=environ)
    assert held["pinned"] is False
    assert held["held_kib"] >= 10 * 1024   # nothing was changed: as unpinned


@needs_glibc
def test_other_glibc_tunables_do_not_stop_the_pinning() -> None:
    held = _held_after_a_thread_frees_12_mib(pin=True, environ={"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert held["pinned"] is True
    assert held["held_kib"] < 2 * 1024


@needs_glibc
async def test_python_m_bot_run_pins_the_thresholds_before_it_serves(dc: FakeDiscord, fake: FakeOpenAI,
                                                                      tmp_path: Path) -> None:
    err = await stderr_of_a_served_run(dc, fake, tmp_path)
    said = [line for line in err.splitlines() if "malloc thresholds:" in line]
    assert len(said) == 1 and f"malloc thresholds: pinned at {THRESHOLD_BYTES} bytes" in said[0], err
