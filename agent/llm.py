"""LLMClient: one chat completion against any OpenAI-compatible endpoint, over openai.AsyncOpenAI.

Retries are the openai library's own: bounded (`max_retries`) with exponential backoff and
jitter on connection errors, timeouts, 408/409/429 and 5xx, honouring the server's
`Retry-After` / `retry-after-ms` headers. We do not add a second, hand-written retry loop on
top. What is left after those retries is translated here, at the seam, into LLMError with a
`.kind`; the message names the model and the base URL and never the API key.

The text protocol passes a stop sequence (`Observation:`) so the model does not imagine tool
replies. Some servers reject `stop`: on a 400 that mentions it we retry once without it and
stop sending it on this client; the content is cut at the stop sequence client-side anyway,
for servers that ignore it.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from agent.config import AgentSettings
from agent.errors import LLMError, LLMErrorKind
from agent.events import Usage

log = logging.getLogger(__name__)

__all__ = ["Completion", "LLMClient", "ToolCall"]

# Sent as the API key to servers that need none (a local llama.cpp or Ollama); the openai
# library refuses an empty key.
_NO_KEY = "not-needed"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A native tool call as the model sent it; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


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
        self._send_stop = True
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key or _NO_KEY,
            timeout=timeout_s,
            max_retries=max_retries,  # the library's bounded retries with backoff, see above
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
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if tools:
            request["tools"] = tools
        if stop and self._send_stop:
            request["stop"] = stop
        try:
            try:
                response = await self._client.chat.completions.create(**request)
            except openai.BadRequestError as exc:
                if "stop" not in request or "stop" not in _error_text(exc).lower():
                    raise
                log.warning(
                    "%s at %s rejected the stop parameter; retrying without it", self.model,
                    self.base_url,
                )
                self._send_stop = False
                del request["stop"]
                response = await self._client.chat.completions.create(**request)
        except openai.APIError as exc:
            raise self._translate(exc) from exc
        except json.JSONDecodeError as exc:  # a body that claims to be JSON but is not
            raise self._error("bad_response", f"the reply is not valid JSON ({exc})") from exc
        return self._completion(response, stop)

    async def aclose(self) -> None:
        await self._client.close()

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
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if value is None:
            value = (getattr(message, "model_extra", None) or {}).get(name)
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
