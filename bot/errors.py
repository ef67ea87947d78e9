"""The bot's errors and the one-sentence replies a person sees when a turn cannot be answered.

    BotError
     +-- ConfigError      a setting is missing or invalid (names the variable, never a secret)

Every user-facing sentence lives here, so that the console and Discord say the same thing.
Part of bot/: imports nothing from agent/ or memory/.
"""

from __future__ import annotations

__all__ = ["MEMORY_UNAVAILABLE_NOTE", "BotError", "ConfigError", "sentence_for", "with_memory_notice"]


class BotError(Exception):
    """Base for everything bot/ raises on purpose."""


class ConfigError(BotError):
    """A setting is invalid; the one-line message names the variable (never a secret's value)."""


# error_kind -> what the person reads. Kinds of agent.errors.LLMError map 1:1 where they exist.
_SENTENCES: dict[str, str] = {
    "empty": "Ask me something: your message was empty.",
    "cooldown": "You're going a bit fast. Wait a few seconds and ask again.",
    "busy": "I'm still answering your other questions. Ask again when one of them is done.",
    "unreachable": "I can't reach the language model right now. Please try again in a minute.",
    "rate_limited": "The language model is rate limiting me right now. Please try again shortly.",
    "timeout": "The language model took too long to answer. Please try again.",
    "turn_timeout": "This took too long, so I stopped. Please try a simpler question.",
    "auth": "The language model refused my credentials. An operator needs to check the API key.",
    "bad_request": "The language model rejected the request. Try rephrasing or shortening it.",
    "server_error": "The language model had an internal error. Please try again.",
    "bad_response": "The language model sent an answer I could not read. Please try again.",
    "step_limit": "I ran out of steps before finding an answer. Try a simpler or more specific question.",
    "no_answer": "The language model did not give a usable answer. Please try again.",
    "memory_unavailable": "My memory store is unavailable right now, so I could not answer. Please try again later.",
    "shutting_down": "I'm restarting right now. Please ask again in a moment.",
    "internal": "Something went wrong on my side while answering. Please try again.",
}


def sentence_for(kind: str) -> str:
    """The one sentence shown for an error kind; unknown kinds get the generic sentence."""
    return _SENTENCES.get(kind, _SENTENCES["internal"])


# added to an answer made without the person's memories (the memory store was down)
MEMORY_UNAVAILABLE_NOTE = "(My memory is unavailable right now, so I answered without it.)"


def with_memory_notice(answer: str) -> str:
    """An answer made without memory, saying so in one short line after it."""
    return f"{answer}\n\n{MEMORY_UNAVAILABLE_NOTE}"
