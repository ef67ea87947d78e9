"""LLMClient: chat completions against any OpenAI-compatible endpoint, over openai.AsyncOpenAI.

Retries are the openai library's own: bounded (`max_retries`) with exponential backoff and
jitter on connection errors, timeouts, 408/409/429 and 5xx, honouring the server's
`Retry-After` / `retry-after-ms` headers. We do not add a second, hand-written retry loop on
top. What is left after those retries is translated here, at the seam, into LLMError with a
`.kind`; the message names the model and the base URL and never the API key.

`complete` returns one whole reply. `stream` yields the reply as it is written (`Delta`s of
content, reasoning and tool calls) and then the whole `Completion`, with the token usage the
server sends in its last chunk (`stream_options.include_usage`); a server that sends none gets
its tokens counted here (completion: the chunks that carried text, one token each as servers
send them; prompt: estimated at four characters a token, OpenAI's rule of thumb for English).
A stream cut before it delivered anything is requested again within `max_retries`; once text
has been passed on it cannot be taken back, so a later cut is an LLMError. A server that does
not stream (a 400 naming `stream`, or a plain JSON body instead of server-sent events) gives
its whole reply as the one item, and the client does not ask it to stream again.

Some servers refuse optional parameters: on a 400 naming `stop`, `stream_options` or `stream`
the request is sent once more without it, and this client stops sending it. The content is cut
at the stop sequence client-side anyway, also while streaming, for servers that ignore `stop`.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from agent.config import AgentSettings
from agent.errors import LLMError, LLMErrorKind
from agent.events import Usage
from agent.images import content_chars
from httptls import tls_context

log = logging.getLogger(__name__)

__all__ = ["STREAM_YIELD_EVERY", "Completion", "Delta", "LLMClient", "ToolCall"]

# Given to the openai library, which refuses an empty key, when there is none (a local
# llama.cpp or Ollama, a catalogue entry served elsewhere): each request then omits the
# Authorization header instead of sending it (`_request`).
_NO_KEY = "not-needed"
# Optional request parameters a server may refuse with a 400, most specific name first.
_REFUSABLE = ("stream_options", "stream", "stop")
CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text, for servers that report no usage
# Waits before asking again for a stream cut before its first delta: the openai library's own
# defaults (0.5 s, doubling, at most 8 s).
_RETRY_DELAY_S, _MAX_RETRY_DELAY_S = 0.5, 8.0
# Chunks read from a stream before the event loop gets a turn. Chunks already in the socket's
# buffer are read without any wait, so a reply of many tiny chunks (a hostile one: 100 KB in
# 4-character pieces) would otherwise be decoded, chunk after chunk, in one loop iteration.
STREAM_YIELD_EVERY = 64


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A native tool call as the model sent it; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of a streamed reply: content and reasoning text, and whether a tool call grew."""

    content: str = ""
    reasoning: str = ""
    tool_call: bool = False


@dataclass(frozen=True, slots=True)
class Completion:
    """One reply of the model. Empty content with no tool calls is a valid (if useless) reply."""

    content: str
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None


class LLMClient:
    """Chat completions against one model at one OpenAI-compatible base URL."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        temperature: float = 0.2,
        timeout_s: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        if not model:
            raise ValueError("model is required")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._api_key = api_key
        self._refused: set[str] = set()  # parameters this server refused (see _REFUSABLE)
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key or _NO_KEY,
            timeout=timeout_s,
            max_retries=max_retries,  # the library's bounded retries with backoff, see above
            http_client=openai.DefaultAsyncHttpxClient(verify=tls_context()),  # openai's defaults, one CA load
        )

    @classmethod
    def from_settings(cls, s: AgentSettings) -> LLMClient:
        return cls(
            base_url=s.base_url,
            api_key=s.api_key,
            model=s.model,
            temperature=s.temperature,
            timeout_s=s.timeout_s,
            max_retries=s.max_retries,
        )

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, base_url={self.base_url!r})"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """One chat completion. Raises LLMError once the library's retries are spent."""
        response = await self._create(self._request(messages, stop, tools, stream=False))
        return self._completion(response, stop)

    async def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> AsyncIterator[Delta | Completion]:
        """The reply as it streams: Deltas, then the whole Completion, always last.

        Raises LLMError as `complete` does; see the module docstring for cuts and for servers
        that do not stream.
        """
        if "stream" in self._refused:
            yield await self.complete(messages, stop=stop, tools=tools)
            return
        for attempt in range(self.max_retries + 1):
            joiner = _Joiner(stop)
            response = await self._create(self._request(messages, stop, tools, stream=True))
            if not isinstance(response, openai.AsyncStream):  # it refused `stream`
                yield self._completion(response, stop)
                return
            try:
                if "text/event-stream" not in response.response.headers.get("content-type", ""):
                    yield await self._whole_body(response.response, stop)
                    return
                async for chunk in response:
                    if delta := joiner.add(chunk):
                        yield delta
                    if joiner.stopped:  # the rest would be the model imagining an Observation
                        break
                    if joiner.chunks % STREAM_YIELD_EVERY == 0:
                        await asyncio.sleep(0)  # a bare yield: one turn of the loop
            except openai.APIError as exc:
                if joiner.delivered or attempt == self.max_retries:
                    raise self._cut(exc, joiner) from exc
                log.warning("%s at %s: the stream broke before its first delta (%s); asking again",
                            self.model, self.base_url, type(exc).__name__)
                await asyncio.sleep(min(_RETRY_DELAY_S * 2**attempt, _MAX_RETRY_DELAY_S))
                continue
            except (json.JSONDecodeError, AttributeError, TypeError, KeyError, IndexError) as exc:
                raise self._error(
                    "bad_response", f"a chunk of the stream is not a chat completion chunk ({exc})"
                ) from exc
            finally:
                await response.close()
            if tail := joiner.flush():
                yield tail
            yield self._joined(joiner, messages)
            return

    async def aclose(self) -> None:
        await self._client.close()

    def _request(
        self,
        messages: list[dict[str, Any]],
        stop: list[str] | None,
        tools: list[dict[str, Any]] | None,
        *,
        stream: bool,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if tools:
            request["tools"] = tools
        if stop and "stop" not in self._refused:
            request["stop"] = stop
        if not self._api_key:
            request["extra_headers"] = {"Authorization": openai.Omit()}
        if stream:
            request["stream"] = True
            if "stream_options" not in self._refused:
                request["stream_options"] = {"include_usage": True}
        return request

    async def _create(self, request: dict[str, Any]) -> Any:
        """Send the request (a ChatCompletion, or an AsyncStream to read); errors left after the
        library's retries are translated into LLMError."""
        try:
            return await self._send(request)
        except openai.APIError as exc:
            raise self._translate(exc) from exc
        except json.JSONDecodeError as exc:  # a body that claims to be JSON but is not
            raise self._error("bad_response", f"the reply is not valid JSON ({exc})") from exc

    async def _send(self, request: dict[str, Any]) -> Any:
        """Send the request; a parameter the server refuses is dropped (here and from now on)."""
        while True:
            try:
                return await self._client.chat.completions.create(**request)
            except openai.BadRequestError as exc:
                if (param := _refused_parameter(exc, request)) is None:
                    raise
                log.warning(
                    "%s at %s refused the %s parameter; retrying without it", self.model,
                    self.base_url, param,
                )
                self._refused.add(param)
                del request[param]
                if param == "stream":
                    request.pop("stream_options", None)

    async def _whole_body(self, response: Any, stop: Sequence[str] | None) -> Completion:
        """A server that answered a streaming request with one JSON body: read it whole."""
        body = await response.aread()
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self._error(
                "bad_response", f"the reply is neither a stream nor JSON: {body[:200]!r}"
            ) from exc
        completion = self._completion(openai.types.chat.ChatCompletion.construct(**data), stop)
        log.warning("%s at %s does not stream; asking for whole replies from now on",
                    self.model, self.base_url)
        self._refused.add("stream")
        return completion

    def _joined(self, joiner: _Joiner, messages: list[dict[str, Any]]) -> Completion:
        if not joiner.chunks:
            raise self._error("bad_response", "the stream ended before its first chunk")
        usage = joiner.usage
        if usage is None:
            log.debug("%s at %s sent no usage; counting tokens locally", self.model, self.base_url)
            chars = sum(content_chars(m.get("content")) for m in messages)  # an image as its tokens, not its base64
            usage = Usage(math.ceil(chars / CHARS_PER_TOKEN), joiner.pieces)
        return Completion(
            content=joiner.content,
            reasoning="".join(joiner.reasoning) or None,
            tool_calls=joiner.tool_calls(),
            usage=usage,
            finish_reason=joiner.finish_reason,
        )

    def _cut(self, exc: openai.APIError, joiner: _Joiner) -> LLMError:
        """The error for a stream that broke while it was read."""
        after = f"after {joiner.chunks} chunks"
        if isinstance(exc, openai.APITimeoutError):
            return self._error("timeout", f"the stream stalled {after}: no chunk within {self.timeout_s:g}s")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return self._error(
                "unreachable", f"the stream was cut {after} ({type(cause).__name__}: {cause})"
            )
        return self._error("server_error", f"the stream reported an error {after}: {_error_text(exc)}")

    def _completion(self, response: Any, stop: Sequence[str] | None) -> Completion:
        try:
            choice = response.choices[0]
            message = choice.message
            content = message.content or ""
            reasoning = _reasoning(message)
            tool_calls = [
                ToolCall(
                    id=getattr(tc, "id", None) or f"call_{i}",
                    name=tc.function.name or "",
                    arguments=tc.function.arguments or "",
                )
                for i, tc in enumerate(message.tool_calls or ())
                if getattr(tc, "function", None) is not None
            ]
            finish_reason = choice.finish_reason
        except (AttributeError, IndexError, TypeError, KeyError) as exc:
            snippet = str(response)[:200]
            raise self._error(
                "bad_response", f"the reply is not a chat completion: {snippet!r}"
            ) from exc
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, default=str)
        if stop:
            content = _cut_at_stop(content, stop)
        return Completion(
            content=content,
            reasoning=reasoning,
            tool_calls=tool_calls,
            usage=_usage(getattr(response, "usage", None)),
            finish_reason=finish_reason,
        )

    def _translate(self, exc: openai.APIError) -> LLMError:
        kind: LLMErrorKind
        if isinstance(exc, openai.APITimeoutError):
            kind, detail = "timeout", f"no reply within {self.timeout_s:g}s"
        elif isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            kind, detail = "unreachable", f"cannot connect ({type(cause).__name__}: {cause})"
        elif isinstance(exc, openai.RateLimitError):
            kind, detail = "rate_limited", f"rate limited (429): {_error_text(exc)}"
        elif isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            kind, detail = "auth", f"the API key was refused ({exc.status_code}): {_error_text(exc)}"
        elif isinstance(exc, openai.APIStatusError) and exc.status_code >= 500:
            kind, detail = "server_error", f"server error ({exc.status_code}): {_error_text(exc)}"
        elif isinstance(exc, openai.APIStatusError):
            kind, detail = "bad_request", f"request refused ({exc.status_code}): {_error_text(exc)}"
        else:  # APIResponseValidationError and anything else the library could not read
            kind, detail = "bad_response", f"unreadable reply: {exc}"
        if kind in ("rate_limited", "server_error", "timeout", "unreachable") and self.max_retries:
            detail += f" (after {self.max_retries} retries)"
        return self._error(kind, detail)

    def _error(self, kind: LLMErrorKind, detail: str) -> LLMError:
        message = f"model {self.model!r} at {self.base_url}: {detail}"
        if len(self._api_key) >= 4:
            message = message.replace(self._api_key, "[redacted]")
        return LLMError(message, kind=kind, model=self.model, base_url=self.base_url)


def _error_text(exc: openai.APIError) -> str:
    """The server's own error message (from an OpenAI-shaped body), or the exception text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"][:500]
        if isinstance(inner, str):
            return inner[:500]
    if isinstance(body, str) and body.strip():
        return " ".join(body.split())[:200]
    return str(getattr(exc, "message", None) or exc)[:500]


def _reasoning(message: Any) -> str | None:
    """DeepSeek's `reasoning_content` (or `reasoning`, as vLLM and OpenRouter send it)."""
    extra = getattr(message, "model_extra", None) or {}
    declared = getattr(type(message), "model_fields", None) or {}
    for name in ("reasoning_content", "reasoning"):
        # a field the library declares, else an extra one (looked up without pydantic's
        # __getattr__, which raises and catches for every missing name: slow on every chunk)
        value = getattr(message, name, None) if name in declared or not declared else extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    return Usage(
        prompt_tokens=prompt if isinstance(prompt, int) else 0,
        completion_tokens=completion if isinstance(completion, int) else 0,
    )


def _cut_at_stop(content: str, stop: Sequence[str]) -> str:
    cut = len(content)
    for seq in stop:
        if seq and (i := content.find(seq)) != -1:
            cut = min(cut, i)
    return content[:cut]


def _refused_parameter(exc: openai.BadRequestError, request: dict[str, Any]) -> str | None:
    """The optional parameter a 400 refuses, if it names one the request carries."""
    param = getattr(exc, "param", None)
    if param in _REFUSABLE and param in request:
        return param
    text = _error_text(exc).lower()
    for name in _REFUSABLE:
        if name in request and name in text:
            if name == "stream" and name not in text.replace("stream_options", ""):
                continue
            return name
    return None


@dataclass
class _CallPieces:
    """One streamed tool call: its id, and its name and arguments as they came."""

    id: str = ""
    name: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)


class _Joiner:
    """Joins the chunks of one streamed reply, and cuts its content at a stop sequence.

    Written here rather than using openai's ChatCompletionStreamState, which dumps and rebuilds
    the whole message on every chunk (its cost per chunk grows with the reply; both measured in
    docs/decisions/0002-stream-chunk-joiner.md): we need only the content, the reasoning and the tool calls. Content is
    passed on as it comes, less any tail that could be the start of a stop sequence. Text and
    arguments are kept as lists of pieces, joined once at the end: a string grown piece by piece
    is copied whole at every piece (a megabyte in 4-character pieces took 37 CPU-s).
    """

    def __init__(self, stop: Sequence[str] | None) -> None:
        self._stop = [seq for seq in stop or () if seq]
        self._sent: list[str] = []  # content passed on
        self._unsent = ""  # a tail held back: it may begin a stop sequence
        self.stopped = False
        self.reasoning: list[str] = []
        self._calls: dict[int, _CallPieces] = {}  # by the call's index
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.chunks = 0  # chunks received
        self.pieces = 0  # chunks that carried text (the local token count)
        self.delivered = 0  # Deltas passed on

    @property
    def content(self) -> str:
        return "".join(self._sent)

    def add(self, chunk: Any) -> Delta | None:
        self.chunks += 1
        if getattr(chunk, "usage", None) is not None:
            self.usage = _usage(chunk.usage)
        choices = getattr(chunk, "choices", None) or ()
        if not choices:
            return None
        choice = choices[0]
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return None
        text = delta.content if isinstance(delta.content, str) else ""
        content = self._take(text) if text and not self.stopped else ""
        reasoning = _reasoning(delta) or ""
        if reasoning:
            self.reasoning.append(reasoning)
        grew = False
        for i, call in enumerate(delta.tool_calls or ()):
            index = call.index if isinstance(call.index, int) else i
            pieces = self._calls.setdefault(index, _CallPieces())
            pieces.id = pieces.id or (call.id or "")
            if call.function is not None:
                pieces.name.append(call.function.name or "")
                pieces.arguments.append(call.function.arguments or "")
            grew = True
        if text or reasoning or grew:
            self.pieces += 1
        return self._deliver(Delta(content, reasoning, grew)) if content or reasoning or grew else None

    def flush(self) -> Delta | None:
        """What was held back at the end of the stream (a tail that was not a stop sequence)."""
        if self.stopped or not self._unsent:
            return None
        rest, self._unsent = self._unsent, ""
        self._sent.append(rest)
        return self._deliver(Delta(rest))

    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=pieces.id or f"call_{i}", name="".join(pieces.name), arguments="".join(pieces.arguments))
            for i, pieces in sorted(self._calls.items())
        ]

    def _take(self, text: str) -> str:
        # What was passed on holds no beginning of a stop sequence (it was held back), so one
        # can only begin in the held tail or the new text.
        pending = self._unsent + text
        cut = min((i for seq in self._stop if (i := pending.find(seq)) != -1), default=-1)
        if cut != -1:
            self.stopped, self.finish_reason = True, "stop"
            end = cut
        else:
            end = len(pending) - self._held_tail(pending)
        out, self._unsent = pending[:end], pending[end:]
        if out:
            self._sent.append(out)
        return out

    def _held_tail(self, text: str) -> int:
        """Length of the longest tail of ``text`` that begins a stop sequence."""
        size, longest = len(text), 0
        for seq in self._stop:
            i = text.find(seq[0], max(size - len(seq) + 1, 0))
            while i != -1 and size - i > longest:
                if seq.startswith(text[i:]):
                    longest = size - i
                    break
                i = text.find(seq[0], i + 1)
        return longest

    def _deliver(self, delta: Delta) -> Delta:
        self.delivered += 1
        return delta
