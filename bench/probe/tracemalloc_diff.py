"""Probe: what grew between two tracemalloc snapshots of the bot (`bench/chaos.py load
--tracemalloc FOLDER` dumps one after each round). Not part of the product or of the bench's
figures: a diagnosis tool.

    python bench/probe/tracemalloc_diff.py BEFORE AFTER [--by lineno|traceback] [--top N]

Prints the traced heap's total in each, then the top N allocation sites by growth.
"""

from __future__ import annotations

import argparse
import tracemalloc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--by", choices=("lineno", "traceback"), default="lineno")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    skip = [tracemalloc.Filter(False, "<frozen importlib._bootstrap>"), tracemalloc.Filter(False, tracemalloc.__file__)]
    before = tracemalloc.Snapshot.load(args.before).filter_traces(skip)
    after = tracemalloc.Snapshot.load(args.after).filter_traces(skip)
    total_before = sum(trace.size for trace in before.traces) / 2**20
    total_after = sum(trace.size for trace in after.traces) / 2**20
    print(f"traced: {total_before:.2f} -> {total_after:.2f} MB ({total_after - total_before:+.2f})")
    for stat in after.compare_to(before, args.by)[:args.top]:
        frame = stat.traceback[0]
        print(f"{stat.size_diff / 1024:+9.1f} KB {stat.count_diff:+7d}  {frame.filename.split('site-packages/')[-1]}:{frame.lineno}")
        if args.by == "traceback":
            for line in stat.traceback.format()[-12:]:
                print("     ", line)


if __name__ == "__main__":
    main()
