"""Probe: one line per event-loop stall from a run made with `bench/probe/sitecustomize.py`'s
`CHAOS_STALL_SAMPLE` (and `CHAOS_STALL_THREADS=1`): its longest age, the last
line the program printed before it, the loop thread's commonest stacks and the other busy
threads'. Not part of the product or of the bench's figures: a diagnosis tool.

    python bench/probe/stall_summary.py OUTPUT [--at-least MS]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Stall:
    after: str
    longest_ms: int = 0
    loop: Counter[str] = field(default_factory=Counter)
    others: Counter[str] = field(default_factory=Counter)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--at-least", type=int, default=20, help="stalls at least this long (ms)")
    args = parser.parse_args()
    stalls: dict[int, Stall] = {}
    printed = "(start)"
    with open(args.output, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if sample := re.match(r"stall-sample (\d+) (\d+) \S+ (.*)", line):
                stall = stalls.setdefault(int(sample[1]), Stall(printed))
                stall.longest_ms = max(stall.longest_ms, int(sample[2]))
                stall.loop[sample[3][:160]] += 1
            elif other := re.match(r"stall-thread (\d+) (\S+) (.*)", line):
                if int(other[1]) in stalls:
                    stalls[int(other[1])].others[f"{other[2]}: {other[3][:170]}"] += 1
            elif line.strip() and not line.startswith(("beat-probe", "#")) and " gc: generation" not in line:
                printed = line.strip()[:90]
    for number, stall in stalls.items():
        if stall.longest_ms < args.at_least:
            continue
        print(f"== stall {number}: {stall.longest_ms} ms, after the line '{stall.after}'")
        for stack, count in stall.loop.most_common(2):
            print(f"   loop   {count:4d}x {stack}")
        for stack, count in stall.others.most_common(3):
            print(f"   other  {count:4d}x {stack}")


if __name__ == "__main__":
    main()
