"""Side by side: `memory_bench.py --part heavy` outputs of two versions, median of several runs each.

Reads the saved outputs (each run's lines "search k=5 right after an add", "cold first search",
"worst loop stall: searches / adds / cold" and "RSS" at every size) and prints, per size and
figure, the median over the runs of each version and the ratio after / before.

    python bench/heavy_compare.py --before bench/results/*-heavy-before-[123].txt \
        --after bench/results/*-heavy-after-[123].txt
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

FIGURES = {  # name -> (line pattern with the size, value pattern)
    "search p50 ms": (r"search k=5 right after an add \((?P<size>[\d,]+)\)", r"p50\s+([\d.]+) ms"),
    "search p95 ms": (r"search k=5 right after an add \((?P<size>[\d,]+)\)", r"p95\s+([\d.]+) ms"),
    "add p50 ms": (r"add of that user \((?P<size>[\d,]+)\)", r"p50\s+([\d.]+) ms"),
    "cold search p50 ms": (r"cold first search of that user \((?P<size>[\d,]+)\)", r"p50\s+([\d.]+) ms"),
    "stall, searches ms": (r"worst loop stall: searches / adds / cold \((?P<size>[\d,]+)\)", r"\)\s+([\d.]+) /"),
    "stall, adds ms": (r"worst loop stall: searches / adds / cold \((?P<size>[\d,]+)\)", r"/ ([\d.]+) /"),
    "stall, cold loads ms": (r"worst loop stall: searches / adds / cold \((?P<size>[\d,]+)\)", r"/ ([\d.]+) ms$"),
    "RSS MB": (r"RSS \((?P<size>[\d,]+)\)", r"\)\s+([\d.]+) MB"),
}


def figures(path: Path) -> dict[tuple[int, str], float]:
    found: dict[tuple[int, str], float] = {}
    for line in path.read_text().splitlines():
        for name, (where, value) in FIGURES.items():
            head = re.search(where, line)
            number = re.search(value, line) if head else None
            if head and number:
                found[(int(head["size"].replace(",", "")), name)] = float(number.group(1))
    return found


def medians(paths: list[Path]) -> dict[tuple[int, str], float]:
    runs = [figures(p) for p in paths]
    keys = set().union(*runs)
    return {key: statistics.median(run[key] for run in runs if key in run) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", nargs="+", type=Path, required=True)
    parser.add_argument("--after", nargs="+", type=Path, required=True)
    args = parser.parse_args()
    before, after = medians(args.before), medians(args.after)
    print(f"median of {len(args.before)} runs before, {len(args.after)} runs after")
    print(f"{'items':>8}  {'figure':<22} {'before':>10} {'after':>10} {'after/before':>13}")
    for size, name in sorted(set(before) & set(after), key=lambda k: (k[0], list(FIGURES).index(k[1]))):
        old, new = before[(size, name)], after[(size, name)]
        ratio = f"{new / old:.2f}x" if old else "-"
        print(f"{size:>8,}  {name:<22} {old:>10.1f} {new:>10.1f} {ratio:>13}")


if __name__ == "__main__":
    main()
