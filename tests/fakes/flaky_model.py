"""FlakyModel: FakeOpenAI with latency, faults and hooks, for the chaos bench and its tests.

The same loopback OpenAI-compatible server (tests/fakes/openai_server.py, whose script,
responder and records all still apply), with an aiohttp middleware in front of its routes:

    model = FlakyModel()
    model.latency = (1.0, 5.0)              # every chat answer waits uniform(1, 5) s first
    model.fail_next("500", "truncated")     # the next chat requests fail, one kind each:
        # "500"            HTTP 500 with an OpenAI error body
        # "timeout"        no answer for `hang_s` (the client's timeout fires first)
        # "truncated"      200 whose JSON body is cut in half
        # "empty_choices"  200 with "choices": []
    model.before_chat = hook                # async hook(request_json) before each chat answer
    model.before_embed = hook               # async hook(texts) before each embeddings answer
    model.after_embed = hook                # async hook(texts) once the answer is built
    model.faults_served                     # Counter of the faults sent, by kind

A fault consumes no scripted entry: the entry is still there for the retry. Must not import
the product (agent/, memory/, bot/); it is the far end of the wire.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tests.fakes.openai_server import FakeOpenAI

__all__ = ["FAULT_KINDS", "FlakyModel"]

FAULT_KINDS = ("500", "timeout", "truncated", "empty_choices")

ChatHook = Callable[[dict[str, Any]], Awaitable[None]]
EmbedHook = Callable[[list[str]], Awaitable[None]]


class FlakyModel(FakeOpenAI):
    """FakeOpenAI behind latency, injected faults and hooks; see the module docstring."""

    def __init__(self, *, hang_s: float = 3600.0, seed: int = 0, **options: Any) -> None:
        super().__init__(**options)
        self.latency: tuple[float, float] = (0.0, 0.0)
        self.hang_s = hang_s
        self.before_chat: ChatHook | None = None
        self.before_embed: EmbedHook | None = None
        self.after_embed: EmbedHook | None = None
        self.faults_served: Counter[str] = Counter()
        self._faults: deque[str] = deque()
        self._random = random.Random(seed)

    def reseed(self, seed: int) -> None:
        """Restart the latency draws from `seed` (a run repeats its latencies)."""
        self._random = random.Random(seed)

    def fail_next(self, *kinds: str) -> FlakyModel:
        """Queue faults for the next chat requests, one each, in order."""
        unknown = [k for k in kinds if k not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kind(s) {unknown}; use {', '.join(FAULT_KINDS)}")
        self._faults.extend(kinds)
        return self

    def add_routes(self, app: web.Application) -> None:
        super().add_routes(app)
        app.middlewares.append(self._middleware)

    @web.middleware
    async def _middleware(self, request: web.Request,
                          handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if request.path.endswith("/chat/completions"):
            return await self._chat_with_faults(request, handler)
        if request.path.endswith("/embeddings"):
            return await self._embed_with_hooks(request, handler)
        return await handler(request)

    async def _chat_with_faults(self, request: web.Request,
                                handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        body = await _json_of(request)
        if self.before_chat is not None:
            await self.before_chat(body)
        low, high = self.latency
        if high > 0:
            await asyncio.sleep(self._random.uniform(low, high))
        if self._faults:
            kind = self._faults.popleft()
            self.faults_served[kind] += 1
            self.requests.append(body)
            if kind == "500":
                return web.json_response({"error": {"message": "injected 500", "type": "server_error"}},
                                         status=500)
            if kind == "timeout":
                await asyncio.sleep(self.hang_s)
                return web.json_response({"error": {"message": "too late"}}, status=504)
            if kind == "empty_choices":
                return web.json_response({"id": "chatcmpl-empty", "object": "chat.completion",
                                          "created": 0, "model": body.get("model", ""), "choices": []})
            whole = json.dumps({"id": "chatcmpl-cut", "object": "chat.completion", "created": 0,
                                "model": body.get("model", ""),
                                "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant",
                                                         "content": "Final Answer: never whole"}}]})
            return web.Response(status=200, text=whole[: len(whole) // 2], content_type="application/json")
        return await handler(request)

    async def _embed_with_hooks(self, request: web.Request,
                                handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        body = await _json_of(request)
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [t for t in raw if isinstance(t, str)] if isinstance(raw, list) else []
        if self.before_embed is not None:
            await self.before_embed(texts)
        response = await handler(request)
        if self.after_embed is not None:
            await self.after_embed(texts)
        return response


async def _json_of(request: web.Request) -> dict[str, Any]:
    """The request's JSON object (read once; aiohttp keeps the body for the handler)."""
    try:
        body = json.loads(await request.read())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {}
