"""Another bot process for the two-process tests: a UserMemory on a Chroma server, driven by stdin.

    python -m tests.memory.memory_peer HOST PORT

Reads one JSON command per line ({"op": "add" | "search" | "list" | "delete" | "forget",
"collection", "user", "text" (the query, or the id to delete), "scope"}) and answers each with one JSON line: {"ok": result} or
{"error": message}. It opens one memory per collection on first use, with the offline model.
"""

from __future__ import annotations

import asyncio
import json
import sys

from memory.semantic.embeddings import LocalEmbedder
from memory.semantic import UserMemory, open_user_memory


async def serve(host: str, port: int) -> None:
    embedder = LocalEmbedder()
    embedder.load()
    memories: dict[str, UserMemory] = {}
    print(json.dumps({"ok": "ready"}), flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        command = json.loads(line)
        name = command["collection"]
        if name not in memories:
            memories[name] = open_user_memory(host=host, port=port, embedder=embedder, collection=name)
        memory = memories[name]
        user, scope = command["user"], command.get("scope")
        try:
            if command["op"] == "add":
                result: object = await memory.add(user, command["text"], scope=scope)
            elif command["op"] == "search":
                result = [h.text for h in await memory.search(user, command["text"], k=10, scope=scope)]
            elif command["op"] == "list":
                result = [h.text for h in await memory.list(user, scope)]
            elif command["op"] == "delete":
                result = await memory.delete(user, command["text"])
            else:
                result = await memory.forget(user, scope)
            print(json.dumps({"ok": result}), flush=True)
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
    for memory in memories.values():
        await memory.close()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], int(sys.argv[2])))
