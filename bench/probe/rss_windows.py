"""Probe: the RSS after each round of a load run's output (`bench/chaos.py load`, its "RSS after
each round" line), as least-squares slopes over windows of rounds: the bot, its whole process
tree, and the tree less the bot (its Chroma worker, and multiprocessing's resource tracker of
about 23 MB, flat). Not part of the product or of the bench's figures: it reads a kept output
again.

    python bench/probe/rss_windows.py FILE [--window N]

One row per window of N rounds (default 10; the last window takes what is left, at least 3
rounds): the rounds, then for the bot, the tree and the tree less the bot the RSS at the
window's last round, its slope (MB a round) and its min-max over the window.
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

_LINE = re.compile(r"RSS after each round, the bot / its whole process tree \(MB\): (.*)$", re.MULTILINE)


def rounds(text: str) -> list[tuple[float, float]]:
    """(bot, tree) after each round, from the first such line of a run's output."""
    found = _LINE.search(text)
    if found is None:
        raise SystemExit("no 'RSS after each round' line in the file")
    return [(float(bot), float(tree)) for bot, tree in
            (pair.split(" / ") for pair in found.group(1).strip().split("; "))]


def windows(count: int, size: int) -> list[range]:
    """Consecutive windows of `size` rounds; a remainder under 3 joins the window before it."""
    starts = list(range(0, count, size))
    cuts = [range(s, min(s + size, count)) for s in starts]
    if len(cuts) > 1 and len(cuts[-1]) < 3:
        last = cuts.pop()
        cuts[-1] = range(cuts[-1].start, last.stop)
    return cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path)
    parser.add_argument("--window", type=int, default=10)
    args = parser.parse_args()
    pairs = rounds(args.file.read_text())
    series = {"bot": [b for b, _ in pairs], "tree": [t for _, t in pairs],
              "tree-bot": [t - b for b, t in pairs]}
    print("rounds   | " + " | ".join(f"{name + ' end':>14} {'slope':>6} {'min-max':>13}" for name in series))
    for window in windows(len(pairs), args.window):
        xs = list(window)
        cells = []
        for values in series.values():
            ys = [values[x] for x in xs]
            slope = statistics.linear_regression(xs, ys).slope if len(xs) > 1 else 0.0
            cells.append(f"{ys[-1]:14.1f} {slope:+6.2f} {f'{min(ys):.1f}-{max(ys):.1f}':>13}")
        print(f"{window.start + 1:3d}-{window.stop:<4d} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
