"""Diagnostics for a bot started by the chaos bench: imported at start-up by every Python
process whose PYTHONPATH holds this folder (`BotProcess(probe=True)` puts it there), active
only under its environment variables; the product holds none of this.

    CHAOS_TRACEMALLOC=<folder>  trace allocations (10 frames) from the first SIGUSR1 on, and
                                on each SIGUSR1 dump a snapshot to
                                <folder>/snap-<pid>-<n>.tracemalloc
    CHAOS_GC_LOG=<seconds>      print each garbage collection that took at least that long
                                (its generation, duration, objects collected, and the objects
                                the collector tracks, by type) to stderr
    CHAOS_STALL_SAMPLE=<seconds> while the event loop has not run for that long, print its
                                thread's stack every 5 ms to stderr ("stall-sample" lines), and
                                when each gateway heartbeat's thread woke and its send ran
                                ("beat-probe" lines)
    CHAOS_STALL_THREADS=1       with it, also every other busy thread's stack at each sample
                                ("stall-thread" lines: who runs while the loop waits)
    CHAOS_MEMSTATS=<file>       on each SIGUSR2 append one JSON line to <file>: this process's
                                RSS, glibc heap (mallinfo2 and malloc_info), the collector's
                                objects by type (its lists by length and first item, and the
                                owners of the newest 300), and the length of every container
                                attribute of the bot's and memory's own objects (kept by the
                                Chroma worker too: not popped)
                                Each line also holds what needs no object walk: the
                                mappings of /proc/self/smaps summed by kind (glibc's main heap,
                                its other arenas, thread stacks, other anonymous memory, files)
                                and each anonymous mapping's RSS by address, CPython's object
                                allocator (sys._debugmallocstats: its 1 MiB arenas and the bytes
                                in blocks), SQLite's own malloc (sqlite3_memory_used) and the
                                threads
    CHAOS_MEMSTATS_TRIM=1       with it, also malloc_trim(0) and the RSS after it
    CHAOS_MEMSTATS_OBJECTS=0    with it, leave out the collector's walk (objects by type, lists,
                                containers): seconds of the loop's time and a list of every
                                object, allocated and freed, in each dump

Slow event-loop callbacks need nothing here: PYTHONASYNCIODEBUG=1 makes asyncio log every
callback over 100 ms (logger "asyncio", WARNING).

Part of bench/.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import itertools
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
import tracemalloc
import types
from collections import Counter
from pathlib import Path


def _start_tracing(folder: Path) -> None:
    """Tracing starts at the first SIGUSR1 (after start-up: tracing the imports slowed the start
    past the bench's connect timeout on a busy machine), so that snapshot is empty and the
    others hold what was allocated since, and still lives."""
    folder.mkdir(parents=True, exist_ok=True)
    counter = itertools.count()

    def dump(_signum: int, _frame: object) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(10)
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


def _stack(frame: types.FrameType | None, *, until: str = "", limit: int = 1_000) -> list[str]:
    """A thread's frames, innermost first, as "folder/file:function:line", up to (not with) the
    frame of function `until` and at most `limit` of them."""
    frames = []
    while frame is not None and frame.f_code.co_name != until and len(frames) < limit:
        code = frame.f_code
        frames.append(f"{'/'.join(code.co_filename.split('/')[-2:])}:{code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return frames


def _print_other_threads(stall: int, loop_ident: int) -> None:
    """The other threads' stacks (innermost 7 frames) but those idle in a wait or the sampler:
    "stall-thread <stall> <name> <frames>"."""
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident in (loop_ident, threading.get_ident()):
            continue
        frames = _stack(frame, limit=7)
        if frames and not frames[0].startswith(("python3.11/threading.py:wait", "python3.11/queue.py:get",
                                                "futures/thread.py:_worker")):
            print(f"stall-thread {stall} {names.get(ident, ident)} {' < '.join(frames)}", file=sys.stderr)


def _sample_stalls(after_s: float, every_thread: bool) -> None:
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
            frames = _stack(sys._current_frames().get(ident), until="_run")
            print(f"stall-sample {stall} {age * 1000:.0f} {time.monotonic():.3f} {' < '.join(frames) or '(idle)'}",
                  file=sys.stderr)
            if every_thread:
                _print_other_threads(stall, ident)

    def ticking_run_forever(self: asyncio.base_events.BaseEventLoop) -> None:
        if threading.current_thread() is threading.main_thread():
            self.call_soon(tick, self)
            threading.Thread(target=sample, args=(threading.get_ident(),), daemon=True).start()
        run_forever(self)

    asyncio.base_events.BaseEventLoop.run_forever = ticking_run_forever  # type: ignore[method-assign]


if _stall := os.environ.pop("CHAOS_STALL_SAMPLE", None):
    _sample_stalls(float(_stall), os.environ.pop("CHAOS_STALL_THREADS", "") == "1")
class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def _containers() -> dict[str, int]:
    """`Class.attr` -> summed length, over the bot's and memory's objects the collector tracks."""
    sizes: Counter[str] = Counter()
    for obj in gc.get_objects():
        module = type(obj).__module__
        if not isinstance(module, str) or not module.startswith(("bot", "memory", "agent")):
            continue
        attrs = getattr(obj, "__dict__", None) or {
            name: getattr(obj, name, None) for name in getattr(type(obj), "__slots__", ())}
        for name, value in attrs.items():
            if isinstance(value, (dict, list, set, tuple)) or hasattr(value, "__len__") and hasattr(value, "keys"):
                try:
                    sizes[f"{type(obj).__name__}.{name}"] += len(value)
                except TypeError:
                    pass
        if type(obj).__name__ == "ItemsCache":
            sizes["ItemsCache.nbytes"] += obj.nbytes
    return dict(sizes)


def _malloc_info(libc: ctypes.CDLL) -> dict[str, object]:
    """glibc's malloc_info over all arenas (mallinfo2 sums them too): arenas, bytes taken from the
    system, bytes free inside them, bytes in mmapped chunks; and per arena ("heaps", main first):
    its bytes taken from the system now and at most, its free bytes in chunks under a page
    (which malloc_trim cannot give back) and in larger ones, and its top chunk (the free end of
    the arena: glibc counts it as free, and malloc_trim gives back only the main arena's)."""
    libc.fopen.restype = ctypes.c_void_p
    libc.malloc_info.argtypes = libc.fclose.argtypes = None
    where = f"/tmp/malloc-info-{os.getpid()}.xml"
    stream = libc.fopen(where.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    text = Path(where).read_text()
    os.unlink(where)
    tail = text[text.rfind("</heap>"):]
    free = sum(int(n) for n in re.findall(r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"', tail))
    mmap = re.search(r'<total type="mmap" count="\d+" size="(\d+)"', tail)
    current = re.search(r'<system type="current" size="(\d+)"', tail)
    heaps = []
    for heap in re.findall(r"<heap nr=\"\d+\">(.*?)</heap>", text, re.DOTALL):
        chunks = [(int(low), int(total)) for low, total in
                  re.findall(r'<(?:size|unsorted) from="(\d+)" to="\d+" total="(\d+)"', heap)]
        system = dict(re.findall(r'<system type="(current|max)" size="(\d+)"', heap))
        heap_free = sum(int(n) for n in re.findall(r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"', heap))
        small = sum(total for low, total in chunks if low < 4096)
        large = sum(total for low, total in chunks if low >= 4096)
        heaps.append({"current": int(system.get("current", 0)), "max": int(system.get("max", 0)),
                      "free_small": small, "free_large": large, "top": heap_free - small - large})
    return {"arenas": text.count("<heap nr="), "system": int(current.group(1)) if current else 0,
            "free": free, "mmap": int(mmap.group(1)) if mmap else 0, "heaps": heaps}


_GLIBC_HEAP_MAX = 64 << 20   # a glibc arena other than the main one: mmapped at a multiple of this


def _smaps() -> tuple[dict[str, dict[str, int]], dict[str, list[int]]]:
    """This process's mappings summed by kind ({kind: {"count", "size_kb", "rss_kb"}}), and each
    anonymous writable mapping's [size_kb, rss_kb] by start address (hex). Kinds: "heap" (glibc's
    main arena, [heap]), "arena" (another glibc arena: starts at a multiple of 64 MiB), "stack"
    (a thread's, right above its no-access guard page, or [stack]), "anon" (the rest of the
    anonymous memory: CPython's object arenas, glibc's mmapped chunks, numpy's buffers...),
    "file" (libraries, data files), "none" (reserved, no access). The kernel merges neighbouring
    anonymous mappings, so a mapping here may hold several of those."""
    kinds: dict[str, dict[str, int]] = {}
    anon: dict[str, list[int]] = {}
    mapping: list[str] = []
    size_kb = rss_kb = 0
    guarded = False          # the mapping starts where a no-access page ends: a thread's stack
    guard_end = ""

    def close() -> None:
        if not mapping:
            return
        start, perms, path = mapping[0], mapping[1], mapping[5] if len(mapping) > 5 else ""
        if "r" not in perms and "w" not in perms:
            kind = "none"
        elif path == "[heap]":
            kind = "heap"
        elif path == "[stack]" or not path and guarded:
            kind = "stack"
        elif not path and int(start, 16) % _GLIBC_HEAP_MAX == 0:
            kind = "arena"
        elif not path:
            kind = "anon"
        else:
            kind = "file"
        total = kinds.setdefault(kind, {"count": 0, "size_kb": 0, "rss_kb": 0})
        total["count"] += 1
        total["size_kb"] += size_kb
        total["rss_kb"] += rss_kb
        if kind in ("anon", "arena", "stack", "heap") and "w" in perms:
            anon[start] = [size_kb, rss_kb]

    with open("/proc/self/smaps") as smaps:
        for row in smaps:
            field_name, _, rest = row.partition(":")
            if field_name == "Size":
                size_kb = int(rest.split()[0])
            elif field_name == "Rss":
                rss_kb = int(rest.split()[0])
            elif " " in field_name and "-" in field_name.split(" ", 1)[0]:   # a mapping's header line
                close()
                head = row.split(maxsplit=5)
                start, end = head[0].split("-")
                guarded = start == guard_end
                guard_end = end if head[1].startswith("---") and int(end, 16) - int(start, 16) == 4096 else ""
                mapping = [start, *head[1:5], head[5].strip() if len(head) > 5 else ""]
                size_kb = rss_kb = 0
    close()
    return kinds, anon


_OBMALLOC_FIGURES = {"# arenas allocated current": "arenas", "# arenas highwater mark": "arenas_highwater",
                     "# bytes in allocated blocks": "allocated", "# bytes in available blocks": "available",
                     "unused pools": "unused_pools"}


def _obmalloc() -> dict[str, int]:
    """CPython's object allocator, from sys._debugmallocstats (which writes to the C stderr:
    fd 2 goes to a file meanwhile): its 1 MiB arenas now and at most, the bytes in blocks in use,
    in free blocks of used pools, and in unused pools."""
    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        libc.fflush(None)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
            libc.fflush(None)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()
    figures = {}
    for row in text.splitlines():
        label, _, value = row.partition("=")
        for prefix, name in _OBMALLOC_FIGURES.items():
            if prefix in label and name not in figures:
                figures[name] = int(value.strip().replace(",", ""))
    return figures


def _sqlite_memory() -> dict[str, int]:
    """SQLite's own malloc in this process (page caches, statements), if its library is loaded."""
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
    except OSError:
        return {}
    lib.sqlite3_memory_used.restype = lib.sqlite3_memory_highwater.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
    return {"used": lib.sqlite3_memory_used(), "highwater": lib.sqlite3_memory_highwater(0)}


def _memstats(path: str, trim: bool, objects: bool) -> None:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _Mallinfo2

    def dump(_signum: int, _frame: object) -> None:
        info = libc.mallinfo2()
        status = dict(row.split(":", 1) for row in Path("/proc/self/status").read_text().splitlines())
        kinds, anon = _smaps()
        line = {"pid": os.getpid(), "at": time.time(), "argv": sys.argv[:2],
                "rss_kb": {k: int(status[k].split()[0]) for k in ("VmRSS", "RssAnon", "RssFile")},
                "threads": int(status["Threads"]),
                "malloc": {name: getattr(info, name) for name, _ in _Mallinfo2._fields_},
                "malloc_all": _malloc_info(libc),
                "smaps": kinds, "anon_maps": anon,
                "obmalloc": _obmalloc(), "sqlite": _sqlite_memory()}
        if trim:
            libc.malloc_trim(0)   # how much of that RSS glibc held free, given back now
            line["rss_kb_after_trim"] = int(dict(row.split(":", 1) for row in Path("/proc/self/status")
                                                 .read_text().splitlines())["VmRSS"].split()[0])
        if objects:
            _walk_objects(line)
        if tracemalloc.is_tracing():
            line["traced"] = tracemalloc.get_traced_memory()[0]
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")

    signal.signal(signal.SIGUSR2, dump)


def _walk_objects(line: dict[str, object]) -> None:
    """The collector's objects by type, its lists by length and first item and the owners of
    the newest 300, and the bot's containers, into `line`."""
    tracked = gc.get_objects()
    line["gc_objects"] = len(tracked)
    line["types"] = dict(Counter(type(o).__name__ for o in tracked).most_common(60))
    line["containers"] = _containers()
    lists = [o for o in tracked if type(o) is list]
    line["list_kinds"] = [f"{k[0]} x {k[1]}: {n}" for k, n in Counter(
        (len(o) if len(o) < 5 else "5+", type(o[0]).__name__ if o else "-") for o in lists).most_common(12)]
    owners: Counter[str] = Counter()
    for o in lists[-300:]:  # the newest tracked lists
        for ref in gc.get_referrers(o):
            if ref is lists or ref is tracked:
                continue
            name = type(ref).__name__
            if isinstance(ref, dict):
                holders = [type(h).__name__ for h in gc.get_referrers(ref) if h is not tracked and h is not lists
                           and not isinstance(h, list)][:2]
                name = f"dict<-{','.join(holders)}"
            owners[name] += 1
    line["list_owners"] = dict(owners.most_common(12))


if _stats := os.environ.get("CHAOS_MEMSTATS"):
    _memstats(_stats, os.environ.get("CHAOS_MEMSTATS_TRIM") == "1", os.environ.get("CHAOS_MEMSTATS_OBJECTS") != "0")
if _threshold := os.environ.pop("CHAOS_GC_LOG", None):
    _log_collections(float(_threshold))
if _folder := os.environ.pop("CHAOS_TRACEMALLOC", None):  # popped: the bot's children are not traced
    _start_tracing(Path(_folder))
