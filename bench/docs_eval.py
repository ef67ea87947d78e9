"""Retrieval of server documents: recall@1/5 and MRR of `search_docs` against plain BM25 and
plain dense, on the self-written set of bench/data/server_documents.py.

Run: `python bench/docs_eval.py` (about a minute). The five documents of the set and ten
distractor documents made from templates on the same subjects (`distractor_documents`) are
in one server. Every document is extracted and split as
`/docs add` does it (memory.documents), and embedded by the offline all-MiniLM-L6-v2. A
question is a hit at k when a passage of its section is among the first k. Variants:

- plain dense / plain BM25: each passage's text alone (no title, no heading path), one signal.
- dense / BM25: the text as it is indexed, after its title and heading path.
- hybrid w names: both, fused by `memory.documents.index.PassageIndex` with BM25 weighted w
  (names: for questions that name things); the weights are chosen on the tuning half (even
  questions) and reported on the held-out half (odd questions) too.
- store: `ServerDocuments.search` itself (embedded Chroma + SQLite), its default ranking, as
  a check that the product ranks as the variant it claims; with its median search time.

Prints one table; the output is kept in bench/results/YYYY-MM-DD-docs_eval.txt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data.server_documents import DOCUMENTS, QUESTIONS, distractor_documents  # noqa: E402
from bench.figures import percentile  # noqa: E402
from memory.documents import open_server_documents  # noqa: E402
from memory.documents.extract import extract  # noqa: E402
from memory.documents.index import DOCS_RANKING, DocHit, IndexedPassage, PassageIndex  # noqa: E402
from memory.documents.passages import split_passages  # noqa: E402
from memory.semantic.embeddings import LocalEmbedder  # noqa: E402
from memory.stores.database import Database  # noqa: E402

GUILD = "1"
WEIGHTS = (0.2, 0.5, 1.0, 2.0)
NAME_WEIGHTS = (None, 1.0)  # BM25's weight for a question naming things (None: as for the others)


def _passages(documents: list[tuple[str, str]]) -> list[IndexedPassage]:
    out = []
    for title, text in documents:
        for p in split_passages(extract(text.encode(), "markdown")):
            out.append(IndexedPassage(f"{title}-{p.ordinal}", title, title, p.section, p.text))
    return out


def _scores(ranked: list[list[str]], gold: list[set[str]], rows: range | list[int]) -> tuple[float, float, float]:
    """recall@1, recall@5, MRR@10 over the questions ``rows``: ranked and gold hold passage texts."""
    r1 = r5 = mrr = 0.0
    for i in rows:
        ranks = [n for n, text in enumerate(ranked[i][:10], 1) if text in gold[i]]
        r1 += bool(ranks and ranks[0] == 1)
        r5 += bool(ranks and ranks[0] <= 5)
        mrr += 1 / ranks[0] if ranks else 0.0
    count = len(rows)
    return r1 / count, r5 / count, mrr / count


def _texts(hits: list[DocHit]) -> list[str]:
    return [h.text for h in hits]


async def main() -> None:
    embedder = LocalEmbedder()
    embedder.load()
    documents = DOCUMENTS + distractor_documents()
    passages = _passages(documents)
    gold = [{p.text for p in passages if (p.title, p.section) == (title, section)} for _, title, section in QUESTIONS]
    missing = [q for (q, *_), g in zip(QUESTIONS, gold, strict=True) if not g]
    if missing:
        raise SystemExit(f"questions without a passage of their section: {missing}")
    headed = PassageIndex(passages, embedder.embed([f"{p.title}\n{p.section}\n{p.text}" for p in passages]))
    bare = [dataclasses.replace(p, title="", section="") for p in passages]
    plain = PassageIndex(bare, embedder.embed([p.text for p in passages]))
    vectors = embedder.embed([q for q, *_ in QUESTIONS])

    def run(index: PassageIndex, mode: str, weight: float | None = None,
            names: float | None = None) -> list[list[str]]:
        config = DOCS_RANKING if weight is None else dataclasses.replace(
            DOCS_RANKING, keyword_weight=weight, name_keyword_weight=names)
        return [_texts(index.search(q, vectors[i], k=10, mode=mode, config=config))
                for i, (q, *_) in enumerate(QUESTIONS)]

    variants: list[tuple[str, list[list[str]]]] = [
        ("plain dense", run(plain, "dense")),
        ("plain BM25", run(plain, "keyword")),
        ("dense (title + headings)", run(headed, "dense")),
        ("BM25 (title + headings)", run(headed, "keyword")),
    ]
    grid = [(w, n) for n in NAME_WEIGHTS for w in WEIGHTS]
    variants += [(f"hybrid w={w} names={n or w}", run(headed, "hybrid", w, n)) for w, n in grid]

    with tempfile.TemporaryDirectory() as folder:
        async with Database.open(Path(folder) / "bot.sqlite3") as db:
            store = await asyncio.to_thread(open_server_documents, db, embedder, path=Path(folder) / "documents")
            await store.load()
            for title, text in documents:
                await store.add(GUILD, title=title, source=f"{title}.md", kind="markdown", data=text.encode(),
                                added_by="bench")
            ranked, times = [], []
            for q, *_ in QUESTIONS:
                started = time.perf_counter()
                ranked.append(_texts(await store.search(GUILD, q, k=10)))
                times.append((time.perf_counter() - started) * 1000)
            await store.close()
    variants.append((f"store (default: w={DOCS_RANKING.keyword_weight} "
                     f"names={DOCS_RANKING.name_keyword_weight or DOCS_RANKING.keyword_weight})", ranked))

    tune, held = list(range(0, len(QUESTIONS), 2)), list(range(1, len(QUESTIONS), 2))
    print(f"server documents: {len(DOCUMENTS)} documents + {len(documents) - len(DOCUMENTS)} distractors, "
          f"{len(passages)} passages, {len(QUESTIONS)} questions "
          f"(tune {len(tune)} / held-out {len(held)}); embedder {embedder.name} ({embedder.runtime})")
    print(f"{'variant':34} {'R@1':>6} {'R@5':>6} {'MRR':>6} | {'tune R@5':>8} {'held R@5':>8} {'held MRR':>8}")
    for name, ranked in variants:
        r1, r5, mrr = _scores(ranked, gold, range(len(QUESTIONS)))
        _, t5, _ = _scores(ranked, gold, tune)
        _, h5, hmrr = _scores(ranked, gold, held)
        print(f"{name:34} {r1:6.3f} {r5:6.3f} {mrr:6.3f} | {t5:8.3f} {h5:8.3f} {hmrr:8.3f}")
    best = max(grid, key=lambda g: _scores(dict(variants)[f"hybrid w={g[0]} names={g[1] or g[0]}"], gold, tune)[2])
    print(f"best BM25 weights on the tuning half (by MRR): w={best[0]} names={best[1] or best[0]}")
    print(f"store search: median {statistics.median(times):.1f} ms, p95 "
          f"{percentile(times, 95):.1f} ms over {len(times)} questions (query embedding included)")


if __name__ == "__main__":
    asyncio.run(main())
