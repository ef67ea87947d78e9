"""Platform-free request and result of one turn: what a front end hands the pipeline and gets back.

Part of bot/: plain data; imports agent.images for the image type only, nothing from memory/.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.images import ImageInput

__all__ = ["TurnRequest", "TurnResult"]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """Who asks what, where. ``guild_id`` None means a DM. ``want_trace`` is carried for the
    front end (the pipeline always stores a trace of an answered turn). ``parent_channel_id``:
    the channel a thread belongs to, whose settings the thread inherits (bot.settings.place);
    the thread keeps its own buffer under ``channel_id``. ``images`` go to the model with the
    question (bot.turn.images); ``text`` names them, and only the text is stored. ``private``:
    answered only to the asker (a private /ask): the turn never enters the channel's buffer, and
    what it stores is recalled only in the asker's private answers (bot.turn.privacy).
    ``scheduled``: a question the person scheduled earlier (bot.reminders), asked by the bot at
    its time: no cooldown, and no `remind` tool (a scheduled question sets no more of them)."""

    user_id: str
    display_name: str
    guild_id: str | None
    channel_id: str
    text: str
    message_id: str | None = None
    interaction_id: str | None = None
    want_trace: bool = False
    parent_channel_id: str | None = None
    images: tuple[ImageInput, ...] = ()
    private: bool = False
    scheduled: bool = False

    @property
    def place_channels(self) -> tuple[str, ...]:
        """The channels whose settings apply, outermost first (a thread's parent, then it)."""
        return (self.channel_id,) if self.parent_channel_id is None else (self.parent_channel_id, self.channel_id)


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What the person should read, and what happened.

    ``outcome``: "answered", "step_limit", "no_answer" (the agent's own endings), or
    "error", "empty", "cooldown", "busy" (two turns of the person in flight already),
    "over_budget" (the pipeline's). ``ok`` is True only for "answered".
    ``error_kind`` names the failure (see bot.errors.sentence_for) when ``ok`` is False.
    ``trace_id`` is set when a trace was stored (answered and step-limit turns).
    ``elapsed_ms`` is the whole turn; ``queued_ms`` the part spent waiting for the channel's
    earlier turns and for a free slot (MAX_CONCURRENT_TURNS); ``recall_ms`` reading the buffer
    and searching memory; ``store_ms`` storing the turn (memory add + SQLite transaction).
    """

    ok: bool
    text: str
    outcome: str
    trace_id: str | None = None
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_ms: float = 0.0
    error_kind: str | None = None
    memories_used: int = 0
    queued_ms: float = 0.0
    recall_ms: float = 0.0
    store_ms: float = 0.0

    @property
    def unqueued(self) -> bool:
        """Refused before it joined its channel's queue ("empty", "cooldown", "busy"): outside
        its order."""
        return self.outcome in ("empty", "cooldown", "busy")

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
