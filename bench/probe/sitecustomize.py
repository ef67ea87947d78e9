"""Diagnostics for a bot started by the chaos bench: imported at start-up by every Python
process whose PYTHONPATH holds this folder (`BotProcess(probe=True)` puts it there), active
only under its environment variables; the product holds none of this.

    CHAOS_TRACEMALLOC=<folder>  trace allocations (10 frames) and dump a snapshot to
                                <folder>/snap-<pid>-<n>.tracemalloc on each SIGUSR1
    CHAOS_GC_LOG=<seconds>      print each garbage collection that took at least that long
                                (its generation, duration, objects collected, and the objects
                                the collector tracks, by type) to stderr
    CHAOS_STALL_SAMPLE=<seconds> while the event loop has not run for that long, print its
                                thread's stack every 5 ms to stderr ("stall-sample" lines), and
                                when each gateway heartbeat's thread woke and its send ran
                                ("beat-probe" lines)

Slow event-loop callbacks need nothing here: PYTHONASYNCIODEBUG=1 makes asyncio log every
callback over 100 ms (logger "asyncio", WARNING).

Part of bench/.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
import itertools
import os
import signal
import sys
import threading
import time
import tracemalloc
import types
from pathlib import Path


def _start_tracing(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tracemalloc.start(10)
    counter = itertools.count()

    def dump(_signum: int, _frame: object) -> None:
        tracemalloc.take_snapshot().dump(str(folder / f"snap-{os.getpid()}-{next(counter)}.tracemalloc"))

    signal.signal(signal.SIGUSR1, dump)


def _log_collections(at_least_s: float) -> None:
    started = [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = time.perf_counter() - started[0]
        if took >= at_least_s:
            tracked = gc.get_objects()
            kinds = Counter(type(o).__name__ for o in tracked).most_common(8)
            print(f"{time.strftime('%H:%M:%S')} gc: generation {info['generation']} took {took * 1000:.0f} ms, "
                  f"{info['collected']} collected, {len(tracked)} objects tracked: "
                  + ", ".join(f"{name} {n}" for name, n in kinds), file=sys.stderr)

    gc.callbacks.append(timed)


def _time_heartbeats(gateway: types.ModuleType) -> None:
    """Print, per heartbeat, when discord.py's keep-alive thread woke to send it and when the
    loop ran the send: "beat-probe <woke> <ran> <ran - woke in ms>" (monotonic seconds)."""
    handler, ws = gateway.KeepAliveHandler, gateway.DiscordWebSocket
    if getattr(ws.send_heartbeat, "probed", False):
        return
    woke: dict[int, float] = {}
    get_payload, send_heartbeat = handler.get_payload, ws.send_heartbeat

    def timed_payload(self: object) -> dict[str, object]:
        woke[id(self)] = time.monotonic()  # the thread calls it right after its interval's wait
        return get_payload(self)

    async def timed_send(self: object, data: object) -> None:
        ran = time.monotonic()
        at = woke.get(id(getattr(self, "_keep_alive", None)), ran)
        print(f"beat-probe {at:.3f} {ran:.3f} {(ran - at) * 1000:.0f}", file=sys.stderr)
        await send_heartbeat(self, data)

    timed_send.probed = True  # type: ignore[attr-defined]
    handler.get_payload, ws.send_heartbeat = timed_payload, timed_send


def _sample_stalls(after_s: float) -> None:
    """A ticker on the main thread's event loop notes each run; a sampler thread, every 5 ms
    while the loop has not ticked for `after_s`, prints the loop thread's stack (innermost
    first, up to the running callback) to stderr: "stall-sample <stall> <age_ms> <frames>".
    (faulthandler's watchdog, which dumps without the GIL, crashed the bot mid-dump here; the
    sampler takes the GIL, which the stalled loop thread hands over every switch interval.)"""
    run_forever = asyncio.base_events.BaseEventLoop.run_forever
    last = [time.monotonic()]

    def tick(loop: asyncio.AbstractEventLoop) -> None:
        last[0] = time.monotonic()
        if "discord.gateway" in sys.modules:
            _time_heartbeats(sys.modules["discord.gateway"])
        loop.call_later(after_s / 10, tick, loop)

    def sample(ident: int) -> None:
        stall, in_stall = 0, False
        while True:
            time.sleep(0.005)
            age = time.monotonic() - last[0]
            if age < after_s:
                in_stall = False
                continue
            if not in_stall:
                stall, in_stall = stall + 1, True
            frame = sys._current_frames().get(ident)
            frames = []
            while frame is not None and frame.f_code.co_name != "_run":
                code = frame.f_code
                frames.append(f"{'/'.join(code.co_filename.split('/')[-2:])}:{code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            print(f"stall-sample {stall} {age * 1000:.0f} {time.monotonic():.3f} {' < '.join(frames) or '(idle)'}",
                  file=sys.stderr)

    def ticking_run_forever(self: asyncio.base_events.BaseEventLoop) -> None:
        if threading.current_thread() is threading.main_thread():
            self.call_soon(tick, self)
            threading.Thread(target=sample, args=(threading.get_ident(),), daemon=True).start()
        run_forever(self)

    asyncio.base_events.BaseEventLoop.run_forever = ticking_run_forever  # type: ignore[method-assign]


if _stall := os.environ.pop("CHAOS_STALL_SAMPLE", None):
    _sample_stalls(float(_stall))
if _threshold := os.environ.pop("CHAOS_GC_LOG", None):
    _log_collections(float(_threshold))
if _folder := os.environ.pop("CHAOS_TRACEMALLOC", None):  # popped: the bot's children are not traced
    _start_tracing(Path(_folder))
