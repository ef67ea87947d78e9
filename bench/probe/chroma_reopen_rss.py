"""Probe: how much RSS an embedded Chroma folder takes once opened and its indexes loaded, in a
fresh process. Compared with the Chroma worker's RSS at the end of a load run on the same folder
(`bench/chaos.py load --workdir DIR`: DIR/load/data/chroma), it says how much of what the worker
grew is the stored items themselves (a fresh process holds them and nothing else). Not part of
the product or of the bench's figures: a diagnosis tool. Run it on a copy of the folder (opening
it may write).

    python bench/probe/chroma_reopen_rss.py FOLDER

Prints the RSS (MB) after importing chromadb, after opening the client, and after each
collection's count and one nearest-neighbour query (which loads its HNSW index), then after
malloc_trim(0) (the worker trims every second); with each collection's item count and the
size of its index files on disk; and at the end glibc's bytes in use (mallinfo2: in arenas,
in mmapped blocks), to set beside the worker's memstats line ("malloc": uordblks, hblkhd).
"""

from __future__ import annotations

import argparse
import ctypes
from pathlib import Path


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def rss_mb() -> float:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    print(f"start: {rss_mb():.1f} MB")
    import chromadb
    from chromadb.config import Settings

    print(f"chromadb imported: {rss_mb():.1f} MB")
    client = chromadb.PersistentClient(path=str(args.folder), settings=Settings(anonymized_telemetry=False))
    print(f"client open: {rss_mb():.1f} MB")
    for collection in client.list_collections():
        count = collection.count()
        print(f"collection {collection.name!r}: {count} items; after count: {rss_mb():.1f} MB")
        first = collection.get(limit=1, include=["embeddings"])["embeddings"]
        if count and first is not None and len(first):
            collection.query(query_embeddings=[list(first[0])], n_results=1)
            print(f"  after one query (its HNSW index loaded): {rss_mb():.1f} MB")
    for index in sorted(p for p in args.folder.iterdir() if p.is_dir()):
        size = sum(f.stat().st_size for f in index.iterdir()) / 2**20
        print(f"index folder {index.name}: {size:.1f} MB on disk")
    libc = ctypes.CDLL(None)
    libc.malloc_trim(0)
    print(f"after malloc_trim(0): {rss_mb():.1f} MB")
    libc.mallinfo2.restype = _Mallinfo2
    info = libc.mallinfo2()
    print(f"glibc in use: {info.uordblks / 2**20:.1f} MB in arenas, {info.hblkhd / 2**20:.1f} MB in "
          f"{info.hblks} mmapped blocks; free in arenas {info.fordblks / 2**20:.1f} MB")


if __name__ == "__main__":
    main()
