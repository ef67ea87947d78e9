"""What the bot does with its libraries, run inside the bot unit's sandbox by test_sandbox.py:
imports its network stack, resolves a name, opens its SQLite database (memory.stores.database: WAL,
migrations, aiosqlite's thread) and its per-user memory (memory.semantic: the bundled model on
ONNX Runtime, its graph exported by a child process on PyTorch's CPU kernels, embedded Chroma
under DATA_DIR), stores and recalls.
Prints `cpu=<torch's CPU capability>`, `embedder=<runtime>` and `ok` on success.

Usage: python sandbox_workload.py   (DATA_DIR and HF_HUB_OFFLINE set by the unit's Environment=)
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
from contextlib import closing
from pathlib import Path

import aiohttp  # noqa: F401
import discord  # noqa: F401
import httpx  # noqa: F401
import openai  # noqa: F401
import torch

from memory.stores.database import Database
from memory.semantic.embeddings import LocalEmbedder
from memory.semantic import open_user_memory


async def main() -> None:
    data = Path(os.environ["DATA_DIR"])
    data.mkdir(parents=True, exist_ok=True)
    socket.getaddrinfo("localhost", 443, type=socket.SOCK_STREAM)
    socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()

    async with Database.open(data / "bot.sqlite3"):
        pass
    with closing(sqlite3.connect(data / "bot.sqlite3")) as db:
        assert db.execute("pragma journal_mode").fetchone()[0] == "wal"

    embedder = LocalEmbedder()
    async with open_user_memory(data / "chroma", embedder=embedder) as memory:
        await memory.add("u1", "My cat is called Miso and she loves tuna.")
        await memory.add("u1", "I work as a nurse in Lyon.")
        hits = await memory.search("u1", "what is the name of my pet?", k=1)
    assert [hit.text for hit in hits] == ["My cat is called Miso and she loves tuna."], hits

    print(f"cpu={torch.backends.cpu.get_cpu_capability()}")
    print(f"embedder={embedder.runtime}")
    print("ok")


if __name__ == "__main__":
    asyncio.run(main())
