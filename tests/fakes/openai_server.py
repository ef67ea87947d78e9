"""FakeOpenAI: a loopback OpenAI-compatible server for tests and benches (real HTTP, aiohttp).

The real `openai` client (and anything else speaking the OpenAI REST dialect) talks to it over
127.0.0.1 on a random port, so retries, timeouts and response parsing run for real. A request
with `"stream": true` gets server-sent events, as OpenAI sends them (a role chunk, reasoning,
content and tool-call pieces, a finish chunk, the usage chunk when `stream_options.include_usage`
asks for it, then `[DONE]`), unless `stream_mode` says otherwise.

Endpoints
    POST /v1/chat/completions   replays the script (below), then the fallback
    POST /v1/embeddings         deterministic pseudo-embeddings (hashed bag of words, unit
                                length; texts sharing words are close), float or base64
    GET  /v1/models             lists `fake.models`

Use
    async with FakeOpenAI() as fake:              # or the `fake_openai` fixture (tests/agent)
        fake.reply("Final Answer: 4")            # content only
        fake.reply(content="", reasoning="...")  # DeepSeek-style reasoning_content
        fake.reply(tool_calls=[{"name": "calculator", "arguments": {"expression": "2+2"}}])
        fake.reply("hi", usage={"prompt_tokens": 3, "completion_tokens": 1})
        fake.reply("hi", usage=None)             # no usage object at all
        fake.error(429, headers={"retry-after-ms": "1"})   # body defaults to an OpenAI error
        fake.error(500, body={"error": {"message": "boom"}})
        fake.garbage("<html>oops</html>")         # 200 with a non-JSON body
        fake.delay(2.0).reply("slow")            # the next scripted entry waits 2 s first
        fake.reply("Final Answer: 4", chunks=["Fin", "al Answer: ", "4"])  # exact stream pieces
        fake.reply("Final Answer: long", cut_after=3)   # stream: connection dropped after 3 chunks
        fake.reply("Final Answer: slow", pause_after=2)  # stream: waits for fake.resume()
        fake.reply("Final Answer: typed", chunk_delay_s=0.01)  # stream: a pause before each chunk
        gate = fake.hold_embeddings("42")        # embedding requests of a text with "42" wait
        gate.set()                               # ... until the returned event is set
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="test")

    Every scripting method returns the fake, so calls chain. Each chat request consumes one
    scripted entry, in order (a retried request consumes the next one). When the script is
    exhausted the fallback answers: `fake.responder(request_json)` if set (sync or async; it
    returns a str (the content), a dict of `reply()` keyword arguments, or an entry built with
    `FakeOpenAI.make_reply/make_error/make_garbage`), else a reply with `fake.default_content`
    (default "Final Answer: (fake default reply)").

    Options (constructor keywords or attributes):
        default_content  fallback content, see above
        responder        fallback callable, see above
        reject_stop      answer 400 "Unsupported parameter: 'stop'" to any request carrying
                         `stop` (some servers do), without consuming the script
        honor_stop       cut reply content at the request's first stop sequence, as most
                         servers do (default False: like servers that ignore `stop`)
        stream_mode      what a request with `stream: true` gets: "sse" (default, events),
                         "ignore" (one JSON body, as servers that ignore `stream` send),
                         "reject" (400 naming `stream`), "reject_options" (400 naming
                         `stream_options`, as some servers answer); rejections consume nothing
        stream_usage     "requested" (default: the usage chunk when include_usage asks) or
                         "never" (a server that sends no usage in streams)
        chunk_chars      characters of content (and of reasoning, and of tool arguments) per
                         streamed chunk when a reply gives no `chunks` (default 4)
        models           names listed by GET /v1/models (default ["fake-model"])
        embedding_dim    length of embedding vectors (default 384)

    Recorded: `.requests` (parsed JSON bodies of chat requests, in order, including ones
    answered with errors), `.embedding_requests`, `.headers` (the request headers of each chat
    request, as dicts). `.remaining` is the number of unconsumed scripted entries. `.streams`
    counts the streams sent to the end; `.paused` is set while a stream waits at `pause_after`.
    `fake.embed(text)` returns the vector the server would send for `text`.

Default usage, when `usage` is not given: prompt_tokens = words in the request's messages,
completion_tokens = words in the reply (deterministic, so sums can be asserted).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import itertools
import json
import math
import re
import struct
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackServer

__all__ = ["FakeOpenAI", "Reply", "ErrorReply", "Garbage"]

_DEFAULT_USAGE: Any = object()  # sentinel: compute usage from word counts


@dataclass
class Reply:
    """A successful chat completion."""

    content: str | None = ""
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage: Any = _DEFAULT_USAGE
    finish_reason: str | None = None
    delay: float = 0.0
    chunks: list[str] | None = None  # streamed content pieces (joined, they are the content)
    cut_after: int | None = None  # streamed: drop the connection after this many chunks
    pause_after: int | None = None  # streamed: wait for FakeOpenAI.resume() after this many
    chunk_delay_s: float = 0.0  # streamed: wait this long before each chunk (a model writing)


@dataclass
class ErrorReply:
    """An HTTP error status with an (OpenAI-shaped by default) JSON body."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Garbage:
    """A body that is not a chat completion (non-JSON text, or JSON of the wrong shape)."""

    body: str = "<html><body>502 Bad Gateway (not JSON)</body></html>"
    status: int = 200
    content_type: str = "text/html"
    delay: float = 0.0


Entry = Reply | ErrorReply | Garbage
Responder = Callable[[dict[str, Any]], Any]


class FakeOpenAI(LoopbackServer):
    """A scripted OpenAI-compatible chat/embeddings server on 127.0.0.1. See module docstring."""

    client_max_size = 64 * 1024 * 1024

    def __init__(
        self,
        *,
        default_content: str = "Final Answer: (fake default reply)",
        responder: Responder | None = None,
        reject_stop: bool = False,
        honor_stop: bool = False,
        stream_mode: str = "sse",
        stream_usage: str = "requested",
        chunk_chars: int = 4,
        models: Sequence[str] = ("fake-model",),
        embedding_dim: int = 384,
    ) -> None:
        super().__init__()
        self.stream_mode = stream_mode
        self.stream_usage = stream_usage
        self.chunk_chars = chunk_chars
        self.streams = 0
        self.paused = asyncio.Event()
        self._resumed = asyncio.Event()
        self.default_content = default_content
        self.responder = responder
        self.reject_stop = reject_stop
        self.honor_stop = honor_stop
        self.models = list(models)
        self.embedding_dim = embedding_dim
        self.requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: deque[Entry] = deque()
        self._pending_delay = 0.0
        self._ids = itertools.count(1)
        self._embedding_holds: list[tuple[str, asyncio.Event]] = []

    # -- scripting -------------------------------------------------------------------------

    @staticmethod
    def make_reply(
        content: str | None = "",
        *,
        reasoning: str | None = None,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        usage: Any = _DEFAULT_USAGE,
        finish_reason: str | None = None,
        chunks: Sequence[str] | None = None,
        cut_after: int | None = None,
        pause_after: int | None = None,
        chunk_delay_s: float = 0.0,
    ) -> Reply:
        if chunks is not None:
            content = "".join(chunks)
        return Reply(
            content=content,
            reasoning=reasoning,
            tool_calls=[dict(tc) for tc in tool_calls] if tool_calls is not None else None,
            usage=usage,
            finish_reason=finish_reason,
            chunks=list(chunks) if chunks is not None else None,
            cut_after=cut_after,
            pause_after=pause_after,
            chunk_delay_s=chunk_delay_s,
        )

    @staticmethod
    def make_error(
        status: int, *, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> ErrorReply:
        return ErrorReply(status=status, body=body, headers=dict(headers or {}))

    @staticmethod
    def make_garbage(
        body: str = Garbage.body, *, status: int = 200, content_type: str = "text/html"
    ) -> Garbage:
        return Garbage(body=body, status=status, content_type=content_type)

    def _push(self, entry: Entry) -> FakeOpenAI:
        entry.delay += self._pending_delay
        self._pending_delay = 0.0
        self._script.append(entry)
        return self

    def reply(
        self,
        content: str | None = "",
        *,
        reasoning: str | None = None,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        usage: Any = _DEFAULT_USAGE,
        finish_reason: str | None = None,
        chunks: Sequence[str] | None = None,
        cut_after: int | None = None,
        pause_after: int | None = None,
        chunk_delay_s: float = 0.0,
    ) -> FakeOpenAI:
        """Queue a completion. tool_calls: [{"name", "arguments": dict | str, "id"?}]; the
        stream-only options are described in the module docstring."""
        return self._push(
            self.make_reply(
                content, reasoning=reasoning, tool_calls=tool_calls, usage=usage,
                finish_reason=finish_reason, chunks=chunks, cut_after=cut_after,
                pause_after=pause_after, chunk_delay_s=chunk_delay_s,
            )
        )

    def resume(self) -> None:
        """Let a stream waiting at `pause_after` go on."""
        self._resumed.set()

    def replies(self, *contents: str) -> FakeOpenAI:
        """Queue several content-only completions."""
        for content in contents:
            self.reply(content)
        return self

    def error(
        self, status: int, *, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> FakeOpenAI:
        """Queue an HTTP error. body: dict/list (sent as JSON), str (sent as text), or None
        (an OpenAI-style {"error": {...}} body)."""
        return self._push(self.make_error(status, body=body, headers=headers))

    def garbage(
        self, body: str = Garbage.body, *, status: int = 200, content_type: str = "text/html"
    ) -> FakeOpenAI:
        """Queue a body that is not a chat completion."""
        return self._push(self.make_garbage(body, status=status, content_type=content_type))

    def hold_embeddings(self, needle: str) -> asyncio.Event:
        """Embedding requests with ``needle`` in one of their texts wait (recorded in
        `embedding_requests` first) until the returned event is set."""
        gate = asyncio.Event()
        self._embedding_holds.append((needle, gate))
        return gate

    def delay(self, seconds: float) -> FakeOpenAI:
        """Hold back the next queued entry by `seconds` before it is sent."""
        self._pending_delay += seconds
        return self

    @property
    def remaining(self) -> int:
        return len(self._script)

    # -- routes ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"{super().base_url}/v1"

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)

    # -- handlers --------------------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(dict(request.headers))
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.requests.append({})
            return _error_response(400, "request body is not JSON")
        if not isinstance(body, dict):
            self.requests.append({})
            return _error_response(400, "request body must be a JSON object")
        self.requests.append(body)
        if self.reject_stop and body.get("stop"):
            return _error_response(
                400, "Unsupported parameter: 'stop' is not supported with this model.",
                param="stop",
            )
        streaming = body.get("stream") is True
        if streaming and self.stream_mode == "reject":
            return _error_response(400, "stream is not supported by this server", param="stream")
        if streaming and self.stream_mode == "reject_options" and "stream_options" in body:
            return _error_response(
                400, "Unrecognized request argument supplied: stream_options", param="stream_options"
            )
        entry = self._script.popleft() if self._script else await self._fallback(body)
        if entry.delay:
            await asyncio.sleep(entry.delay)
        if isinstance(entry, ErrorReply):
            if entry.body is None:
                return _error_response(entry.status, f"scripted error {entry.status}", headers=entry.headers)
            if isinstance(entry.body, str):
                return web.Response(status=entry.status, text=entry.body, headers=entry.headers)
            return web.json_response(entry.body, status=entry.status, headers=entry.headers)
        if isinstance(entry, Garbage):
            return web.Response(
                status=entry.status, body=entry.body.encode(), content_type=entry.content_type
            )
        if streaming and self.stream_mode in ("sse", "reject_options"):
            return await self._stream(request, body, entry)
        return web.json_response(self._completion(body, entry))

    async def _stream(self, request: web.Request, body: dict[str, Any], entry: Reply) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        sent = 0
        for event in self._events(body, entry):
            if entry.cut_after is not None and sent >= entry.cut_after:
                assert request.transport is not None
                request.transport.close()  # mid-body: the client sees an incomplete chunked read
                return response
            if entry.pause_after is not None and sent == entry.pause_after:
                self.paused.set()
                await self._resumed.wait()
                self._resumed.clear()
                self.paused.clear()
            if entry.chunk_delay_s:
                await asyncio.sleep(entry.chunk_delay_s)
            await response.write(f"data: {event}\n\n".encode())
            sent += 1
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        self.streams += 1
        return response

    def _events(self, body: dict[str, Any], entry: Reply) -> list[str]:
        """The data of each server-sent event of a streamed reply, as JSON text."""
        whole = self._completion(body, entry)
        message = whole["choices"][0]["message"]
        base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            return json.dumps(base | {"choices": [choice]})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"reasoning_content": p}) for p in self._pieces(entry.reasoning)]
        content = message["content"]
        pieces = entry.chunks if entry.chunks is not None and content == entry.content else self._pieces(content)
        events += [chunk({"content": p}) for p in pieces]
        for index, call in enumerate(message.get("tool_calls") or ()):
            function = call["function"]
            events.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                  "function": {"name": function["name"], "arguments": ""}}]}))
            events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
                       for p in self._pieces(function["arguments"])]
        events.append(chunk({}, whole["choices"][0]["finish_reason"]))
        wants_usage = (body.get("stream_options") or {}).get("include_usage") is True
        if wants_usage and self.stream_usage == "requested" and "usage" in whole:
            events.append(json.dumps(base | {"choices": [], "usage": whole["usage"]}))
        return events

    def _pieces(self, text: str | None) -> list[str]:
        if not text:
            return []
        return [text[i : i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)]

    async def _fallback(self, body: dict[str, Any]) -> Entry:
        if self.responder is None:
            return Reply(content=self.default_content)
        result = self.responder(body)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, (Reply, ErrorReply, Garbage)):
            return result
        if isinstance(result, str):
            return Reply(content=result)
        if isinstance(result, Mapping):
            return self.make_reply(**result)
        raise TypeError(f"responder returned {type(result).__name__}; expected str, dict or entry")

    def _completion(self, body: dict[str, Any], entry: Reply) -> dict[str, Any]:
        content = entry.content
        stop = body.get("stop")
        if self.honor_stop and content and stop:
            for seq in [stop] if isinstance(stop, str) else list(stop):
                if isinstance(seq, str) and seq and seq in content:
                    content = content[: content.index(seq)]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if entry.reasoning is not None:
            message["reasoning_content"] = entry.reasoning
        if entry.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tc.get("id") or f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {
                        "name": tc["name"],
                        "arguments": tc["arguments"]
                        if isinstance(tc.get("arguments"), str)
                        else json.dumps(tc.get("arguments") or {}),
                    },
                }
                for tc in entry.tool_calls
            ]
        finish = entry.finish_reason or ("tool_calls" if entry.tool_calls else "stop")
        result: dict[str, Any] = {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        }
        if entry.usage is _DEFAULT_USAGE:
            prompt = sum(_words(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict))
            completion = _words(content) + _words(entry.reasoning)
            result["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        elif entry.usage is not None:
            usage = dict(entry.usage)
            usage.setdefault(
                "total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
            )
            result["usage"] = usage
        return result

    async def _embeddings(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error_response(400, "request body is not JSON")
        if not isinstance(body, dict) or "input" not in body:
            return _error_response(400, "'input' is required", param="input")
        self.embedding_requests.append(body)
        texts = body["input"]
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error_response(400, "'input' must be a string or a list of strings", param="input")
        for needle, gate in self._embedding_holds:
            if any(needle in text for text in texts):
                await gate.wait()
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vector = self.embed(text)
            encoded: Any = (
                base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                if as_base64
                else vector
            )
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(_words(t) for t in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake-embedding"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
                    for name in self.models
                ],
            }
        )

    def embed(self, text: str) -> list[float]:
        """The unit vector for `text`: each lower-cased word adds +-1 at a hashed index."""
        vector = [0.0] * self.embedding_dim
        words = re.findall(r"\w+", text.lower()) or [""]
        for word in words:
            digest = hashlib.sha256(word.encode()).digest()
            index = int.from_bytes(digest[:4], "little") % self.embedding_dim
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]


def _words(text: Any) -> int:
    if isinstance(text, list):  # content parts
        return sum(_words(part.get("text")) for part in text if isinstance(part, dict))
    return len(text.split()) if isinstance(text, str) else 0


def _error_response(
    status: int, message: str, *, param: str | None = None, headers: Mapping[str, str] | None = None
) -> web.Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": param, "code": None}},
        status=status,
        headers=dict(headers or {}),
    )

