"""Where the test suite's CPU goes: a pytest plugin noting each test's CPU, and a table by file.

As a plugin (`PYTHONPATH=bench/probe pytest -p cpu_per_test ...`, with TEST_CPU_DIR set to a folder):
each worker appends one JSON line per test to `<TEST_CPU_DIR>/cpu-<pid>.jsonl` with the test's
id, its own process's CPU seconds (user + system, threads included), the CPU of the child
processes it waited for, its wall time and when it ended. As a script (`python
bench/probe/cpu_per_test.py DIR [--top N]`): the totals, when each worker's last test ended, and
the files that took the most CPU. A diagnosis tool, not a bench:
children that outlive a test (a session's server) are counted when they are reaped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import IO

import pytest

_out: IO[str] | None = None


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    global _out
    if _out is None:
        folder = Path(os.environ.get("TEST_CPU_DIR", "."))
        folder.mkdir(parents=True, exist_ok=True)
        _out = (folder / f"cpu-{os.getpid()}.jsonl").open("a")
    own, children = _cpu()
    started = time.perf_counter()
    yield
    own_after, children_after = _cpu()
    _out.write(json.dumps({"id": item.nodeid, "self": own_after - own, "children": children_after - children,
                           "wall": time.perf_counter() - started, "ended": time.time()}) + "\n")
    _out.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    workers = {path.stem: [json.loads(line) for line in path.open()]
               for path in sorted(args.folder.glob("cpu-*.jsonl"))}
    rows = [row for mine in workers.values() for row in mine]
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for row in rows:
        totals = by_file[row["id"].split("::")[0]]
        totals[0] += row["self"]
        totals[1] += row["children"]
        totals[2] += row["wall"]
        totals[3] += 1
    own, children = sum(r["self"] for r in rows), sum(r["children"] for r in rows)
    print(f"{len(rows)} tests: own {own:.0f} CPU-s, children {children:.0f} CPU-s")
    # when each worker ran its last test: a long tail is one worker left with a slow file
    if rows and all("ended" in row for row in rows):
        first = min(row["ended"] - row["wall"] for row in rows)
        for worker, mine in workers.items():
            last = max(mine, key=lambda row: row["ended"])
            print(f"worker {worker}: last test ended at {last['ended'] - first:.0f} s ({last['id']})")
    print(f"{'CPU-s':>7} {'own':>6} {'children':>8} {'wall s':>7} {'tests':>5}  file")
    for name, (o, c, wall, n) in sorted(by_file.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:args.top]:
        print(f"{o + c:7.1f} {o:6.1f} {c:8.1f} {wall:7.1f} {int(n):5d}  {name}")


if __name__ == "__main__":
    main()
