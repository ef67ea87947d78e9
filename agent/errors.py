"""Errors raised by agent/: one root, translated at the seams.

AgentError
 +-- ConfigError   a setting is missing or invalid; the message names the variable
 +-- LLMError      the model endpoint failed after the client's retries; `.kind` says how

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["AgentError", "ConfigError", "LLMError", "LLMErrorKind", "LLM_ERROR_KINDS"]

LLMErrorKind = Literal[
    "unreachable", "timeout", "rate_limited", "auth", "bad_request", "server_error", "bad_response"
]
LLM_ERROR_KINDS: tuple[str, ...] = get_args(LLMErrorKind)


class AgentError(Exception):
    """Base for everything agent/ raises."""


class ConfigError(AgentError):
    """A setting is missing or invalid; the message names the variable, never a secret."""


class LLMError(AgentError):
    """The model endpoint failed (after the client's bounded retries).

    `kind` is one of LLM_ERROR_KINDS; the message names the model and the base URL and never
    contains the API key.
    """

    def __init__(self, message: str, *, kind: LLMErrorKind, model: str = "", base_url: str = "") -> None:
        if kind not in LLM_ERROR_KINDS:
            raise ValueError(f"unknown LLMError kind {kind!r}")
        super().__init__(message)
        self.kind: LLMErrorKind = kind
        self.model = model
        self.base_url = base_url
