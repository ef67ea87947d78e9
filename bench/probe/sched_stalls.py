"""Probe: what the event loop's thread was doing during each stall of the heavy memory bench,
from the kernel's scheduler events (docs/decisions/0018-gil-switch-interval.md).

Not part of the product or of the bench's figures: a diagnosis tool. Three steps:

    # 1. the heavy bench, its ticker logging every stall over 12 ms (CLOCK_MONOTONIC, as perf's
    #    -k CLOCK_MONOTONIC), the bench's phase lines and the native id of every thread
    python bench/probe/sched_stalls.py run STALLS.jsonl -- --part heavy --heavy-sizes 10000 50000 \\
        --vector-cache /tmp/memory-bench-vectors.npz &
    # 2. while it grows the heavy user: perf, either every CPU's switches and wakeups
    perf record -e sched:sched_switch -e sched:sched_wakeup -a -k CLOCK_MONOTONIC -o cpu.data -- sleep 35
    #    or the bench process's own switches with the native stack of each (why a thread slept)
    perf record -e sched:sched_switch --call-graph dwarf,16384 -k CLOCK_MONOTONIC -p PID -o stacks.data -- sleep 35
    # 3. the report
    perf script -i cpu.data -F comm,tid,cpu,time,event,trace > cpu.txt
    python bench/probe/sched_stalls.py cpu STALLS.jsonl cpu.txt --at-least 20
    perf script -i stacks.data -F tid,time,event,trace,ip,sym,dso > stacks.txt
    python bench/probe/sched_stalls.py stacks STALLS.jsonl stacks.txt --at-least 20

`cpu` gives, per stall, the loop thread's time on a CPU, waiting for one (runnable) and asleep
(in the GIL's wait, or elsewhere), and what ran on each CPU; then the CPU time in the stalls
where the loop waited for a CPU, by occupant. `stacks` gives each time the loop thread left
its CPU inside a stall with the native frames it left from (`take_gil`: waiting for the GIL;
`epoll_wait`: idle), and the other threads' switches.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
LOGGED_OVER_S = 0.012


def run_bench(log_path: str, bench_args: list[str]) -> None:
    """memory_bench's main with its Ticker logging stalls, its lines and the threads' ids."""
    sys.path.insert(0, str(BENCH.parent))
    sys.path.insert(0, str(BENCH))
    import memory_bench

    log = open(log_path, "w", encoding="utf-8")
    names: dict[int, str] = {}

    def note_threads() -> None:
        for thread in threading.enumerate():
            if thread.native_id is not None:
                names[thread.native_id] = thread.name

    observed = memory_bench.Ticker.observe

    def observe(self: memory_bench.Ticker, due: float, woke: float) -> None:
        observed(self, due, woke)
        if woke - due > LOGGED_OVER_S:
            log.write(json.dumps({"start": due, "end": woke, "late_ms": (woke - due) * 1000}) + "\n")
            log.flush()
            note_threads()

    printed = memory_bench.line

    def line(label: str, value: str) -> None:
        printed(label, value)
        log.write(json.dumps({"line": label, "at": time.perf_counter()}) + "\n")
        log.flush()
        note_threads()

    memory_bench.Ticker.observe = observe  # type: ignore[method-assign]
    memory_bench.line = line
    sys.argv = ["memory_bench.py", *bench_args]
    try:
        memory_bench.main()
    finally:
        note_threads()
        log.write(json.dumps({"threads": {str(k): v for k, v in names.items()},
                              "loop": threading.main_thread().native_id}) + "\n")
        log.close()


@dataclass
class Logged:
    stalls: list[dict[str, float]] = field(default_factory=list)
    lines: list[tuple[float, str]] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)
    loop: int = 0

    def phase(self, at: float) -> str:
        before = [label for when, label in self.lines if when <= at]
        return before[-1] if before else "?"


def read_log(path: str) -> Logged:
    logged = Logged()
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        if "late_ms" in record:
            logged.stalls.append(record)
        elif "line" in record:
            logged.lines.append((record["at"], record["line"]))
        elif "threads" in record:
            logged.names = {int(k): v for k, v in record["threads"].items()}
            # logs without "loop" (the first probe's): the main thread runs the loop
            logged.loop = int(record.get("loop") or next(t for t, n in logged.names.items() if n == "MainThread"))
    logged.names[logged.loop] = "LOOP"
    return logged


_EVENT = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)$")
_SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
_WAKEUP = re.compile(r"comm=(.*?) pid=(\d+)")


def cpu_report(logged: Logged, script: str, at_least_ms: float) -> None:
    """Per stall: the loop thread on a CPU / runnable / asleep, and each CPU's occupants."""
    spans: dict[int, list[tuple[str, float, float]]] = collections.defaultdict(list)
    on_cpu: dict[int, list[tuple[int, float, float]]] = collections.defaultdict(list)
    state: dict[int, tuple[str, float]] = {}
    running: dict[int, tuple[int, float]] = {}
    comms: dict[int, str] = {}
    first = last = None

    def become(tid: int, new: str, ts: float) -> None:
        if tid in state:
            old, since = state[tid]
            spans[tid].append((old, since, ts))
        state[tid] = (new, ts)

    for raw in Path(script).read_text(encoding="utf-8", errors="replace").splitlines():
        match = _EVENT.match(raw)
        if not match:
            continue
        ts, cpu, kind, rest = float(match.group(4)), int(match.group(3)), match.group(5), match.group(6)
        first = ts if first is None else first
        last = ts
        if kind == "sched_switch" and (sw := _SWITCH.search(rest)):
            prev, nxt = int(sw.group(2)), int(sw.group(5))
            comms[prev], comms[nxt] = sw.group(1), sw.group(4)
            become(prev, "runnable" if sw.group(3).startswith("R") else "asleep", ts)
            become(nxt, "on a CPU", ts)
            if cpu in running:
                on_cpu[cpu].append((running[cpu][0], running[cpu][1], ts))
            running[cpu] = (nxt, ts)
        elif kind == "sched_wakeup" and (wk := _WAKEUP.search(rest)):
            tid = int(wk.group(2))
            comms.setdefault(tid, wk.group(1))
            if state.get(tid, ("asleep", 0.0))[0] == "asleep":
                become(tid, "runnable", ts)
    if first is None or last is None:
        print("no sched events in", script)
        return

    def within(items: list[tuple[object, float, float]], a: float, b: float) -> collections.Counter[object]:
        out: collections.Counter[object] = collections.Counter()
        for key, t0, t1 in items:
            if (overlap := min(b, t1) - max(a, t0)) > 0:
                out[key] += overlap * 1000
        return out

    def who(tid: int) -> str:
        return logged.names.get(tid) or f"{comms.get(tid, '?')}:{tid}"

    waited: collections.Counter[str] = collections.Counter()
    shown = 0
    for stall in sorted(logged.stalls, key=lambda s: -s["late_ms"]):
        a, b = stall["start"], stall["end"]
        if stall["late_ms"] < at_least_ms or a < first or b > last:
            continue
        shown += 1
        loop = within(spans[logged.loop], a, b)  # type: ignore[arg-type]
        print(f"== stall {stall['late_ms']:.1f} ms (after '{logged.phase(a)}'): the loop thread on a CPU "
              f"{loop['on a CPU']:.1f}, runnable {loop['runnable']:.1f}, asleep {loop['asleep']:.1f} ms")
        for cpu in sorted(on_cpu):
            ran = within(on_cpu[cpu], a, b)  # type: ignore[arg-type]
            print(f"   cpu{cpu}: " + ", ".join(f"{who(t)} {ms:.1f}" for t, ms in ran.most_common(4)))  # type: ignore[arg-type]
            if loop["runnable"] >= 8:
                for tid, ms in ran.items():
                    waited[_occupant(logged, comms, tid)] += ms  # type: ignore[arg-type]
    print(f"\n{shown} stalls of {at_least_ms:g} ms or more in the recorded window")
    if waited:
        print("CPU time in those where the loop thread was runnable for 8 ms or more, by occupant:")
        for kind, ms in waited.most_common():
            print(f"   {kind:<28} {ms:8.1f} ms")


def _occupant(logged: Logged, comms: dict[int, str], tid: int) -> str:
    if tid == logged.loop:
        return "the loop thread"
    if tid in logged.names:
        return "the bench's other threads"
    comm = comms.get(tid, "?")
    if tid == 0:
        return "idle"
    if comm.startswith(("tokio-rt-worker", "sqlx-sqlite", "python")):
        return "the Chroma worker process"
    return f"other: {re.split(r'[/:]', comm)[0]}"


def _switches(script: str) -> Iterator[tuple[float, int, str, str, list[str]]]:
    head = re.compile(r"^\s*(\d+)\s+([\d.]+):\s+sched:sched_switch:.*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
    current: tuple[float, int, str, str, list[str]] | None = None
    for raw in Path(script).read_text(encoding="utf-8", errors="replace").splitlines():
        if match := head.match(raw):
            if current is not None:
                yield current
            current = (float(match.group(2)), int(match.group(1)), match.group(3),
                       f"{match.group(4)}:{match.group(5)}", [])
        elif current is not None and raw.strip():
            address, _, rest = raw.strip().partition(" ")
            if not address.startswith("ffffffff"):  # user space frames only
                current[4].append(rest.split(" (")[0])
    if current is not None:
        yield current


def stacks_report(logged: Logged, script: str, at_least_ms: float) -> None:
    """Per stall: each time the loop thread left its CPU, and the frames it left from."""
    events = list(_switches(script))
    if not events:
        print("no sched_switch events in", script)
        return
    first, last = events[0][0], events[-1][0]

    def frames(stack: list[str]) -> str:
        return " < ".join([f for f in stack if not f.startswith("_PyEval")][:6])

    for stall in sorted(logged.stalls, key=lambda s: -s["late_ms"]):
        a, b = stall["start"], stall["end"]
        if stall["late_ms"] < at_least_ms or a < first or b > last:
            continue
        print(f"== stall {stall['late_ms']:.1f} ms (after '{logged.phase(a)}')")
        others: collections.Counter[tuple[str, str, str]] = collections.Counter()
        for ts, tid, state, nxt, stack in events:
            if tid == logged.loop and a - 0.003 <= ts <= b:
                print(f"   {1000 * (ts - a):+7.1f} ms the loop thread off its CPU ({state}) for {nxt}: {frames(stack)}")
            elif a <= ts <= b and tid != logged.loop:
                others[(logged.names.get(tid, str(tid)), state, frames(stack)[:150])] += 1
        for (name, state, where), n in others.most_common(5):
            print(f"      {name} off its CPU ({state}) x{n}: {where}")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "run":
        split = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
        run_bench(sys.argv[2], sys.argv[split + 1:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", choices=("cpu", "stacks"))
    parser.add_argument("stalls")
    parser.add_argument("script", help="perf script's output")
    parser.add_argument("--at-least", type=float, default=20.0, help="stalls of at least this many ms")
    args = parser.parse_args()
    logged = read_log(args.stalls)
    (cpu_report if args.report == "cpu" else stacks_report)(logged, args.script, args.at_least)


if __name__ == "__main__":
    main()
