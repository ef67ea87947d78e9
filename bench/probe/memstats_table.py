"""Probe: the bot's memstats lines (`bench/chaos.py load --memstats FILE`, bench/probe/sitecustomize.py)
as one table row per round: where its RSS is. Not part of the product or of the bench's figures:
a diagnosis tool.

    python bench/probe/memstats_table.py FILE [--arenas ROUND ...] [--worker]

Columns (MB unless said): RSS; the mappings by kind (glibc's main heap, its other arenas,
anonymous memory besides them: CPython's object arenas, mmapped blocks; files); glibc over all
arenas: taken from the system, free inside (with each arena's free end, its "top"), in mmapped
blocks, and in use in the arenas other than the main one (taken less free, top included); CPython's object allocator: 1 MiB arenas (a count), bytes in blocks in use; SQLite's own
malloc; threads; and, with CHAOS_MEMSTATS_TRIM=1, the RSS after malloc_trim(0). `--arenas`
also prints each glibc arena at those rounds. The bot is the process with the lowest pid among
those whose command is `bot run` (a parent starts before its child; which process writes first
after a signal varies); `--worker` takes its Chroma worker instead, the next such pid (a "spawn"
child carries its parent's argv; the resource tracker's is `-c`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

MB = 2**20


def process_lines(path: Path, worker: bool = False) -> list[dict[str, Any]]:
    """The lines of the bot, or with `worker` of its Chroma worker, in order."""
    lines = [json.loads(row) for row in path.read_text().splitlines() if row.strip()]
    pids = sorted({line["pid"] for line in lines if line["argv"][1:2] == ["run"]})
    if len(pids) <= worker:
        return []
    return [line for line in lines if line["pid"] == pids[worker]]


def row(n: int, line: dict[str, Any]) -> str:
    kinds = {kind: figures["rss_kb"] / 1024 for kind, figures in line["smaps"].items()}
    glibc, objects = line["malloc_all"], line["obmalloc"]
    heaps = glibc.get("heaps", [])   # older lines have neither the arenas one by one nor their tops
    by_arena = bool(heaps) and "top" in heaps[0]
    tops = f"{sum(heap['top'] for heap in heaps) / MB:5.1f}" if by_arena else "    -"
    others = (f"{sum(h['current'] - h['free_small'] - h['free_large'] - h['top'] for h in heaps[1:]) / MB:5.1f}"
              if by_arena else "    -")
    trimmed = f"{line['rss_kb_after_trim'] / 1024:6.1f}" if "rss_kb_after_trim" in line else "     -"
    return (f"{n:5d} {line['rss_kb']['VmRSS'] / 1024:6.1f} | {kinds.get('heap', 0):5.1f} {kinds.get('arena', 0):5.1f} "
            f"{kinds.get('anon', 0):5.1f} {kinds.get('file', 0):5.1f} | {glibc['system'] / MB:5.1f} "
            f"{glibc['free'] / MB:5.1f} {tops} {glibc['mmap'] / MB:5.1f} {others} | {objects['arenas']:4d} "
            f"{objects['allocated'] / MB:5.1f} | {line['sqlite'].get('used', 0) / MB:5.2f} {line['threads']:3d} | {trimmed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path)
    parser.add_argument("--arenas", type=int, nargs="*", default=[], metavar="ROUND")
    parser.add_argument("--worker", action="store_true", help="the Chroma worker's lines, not the bot's")
    args = parser.parse_args()
    lines = process_lines(args.file, args.worker)
    print("round    RSS | mappings: heap arena  anon  file | glibc: system free (tops) mmap others' in-use "
          "| obmalloc: arenas in-use | sqlite threads | RSS after trim")
    for n, line in enumerate(lines, 1):
        print(row(n, line))
    for n in args.arenas:
        print(f"round {n}, glibc's arenas (main first): size now / at most, free in chunks under a page, "
              "over a page, top (MB)")
        for i, heap in enumerate(lines[n - 1]["malloc_all"]["heaps"]):
            print(f"  {i:2d}: {heap['current'] / MB:5.2f} / {heap['max'] / MB:5.2f}  {heap['free_small'] / MB:5.2f}  "
                  f"{heap['free_large'] / MB:5.2f}  {heap['top'] / MB:5.2f}")


if __name__ == "__main__":
    main()
