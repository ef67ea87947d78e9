"""Turning Discord objects into the pipeline's platform-free request, and back to access facts.

Mentions of the bot are stripped from the text; a text attachment (by file extension, up to a
size limit) is read into the question, an image goes its own way (bot.discord_app.images), any
other attachment is only named. Nothing here sends anything to Discord; imports discord.py and
bot.turn.requests, never the pipeline.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import PurePath

import aiohttp
import discord

from agent.images import ImageInput
from bot.discord_app.access import Where
from bot.turn.requests import TurnRequest

__all__ = [
    "TEXT_ATTACHMENT_SUFFIXES",
    "attachments_text",
    "parent_ids",
    "place_of",
    "request_from_interaction",
    "request_from_message",
    "strip_bot_mention",
    "where_of",
]

log = logging.getLogger(__name__)

TEXT_ATTACHMENT_SUFFIXES = frozenset(
    ".txt .md .markdown .rst .py .json .jsonl .csv .tsv .log .yaml .yml .toml .ini .cfg .conf "
    ".js .ts .tsx .jsx .html .css .c .h .cpp .hpp .java .kt .go .rs .rb .php .sh .sql .xml".split()
)


def strip_bot_mention(text: str, bot_id: int, role_id: int | None = None) -> str:
    """Remove `<@id>` / `<@!id>` mentions of the bot (and `<@&role_id>` of its managed role)
    and tidy the spaces they leave."""
    stripped = re.sub(rf"<@!?{bot_id}>", " ", text)
    if role_id is not None:
        stripped = re.sub(rf"<@&{role_id}>", " ", stripped)
    return re.sub(r"[ \t]{2,}", " ", stripped).strip()


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n >= 1024 else f"{n} bytes"


async def attachments_text(attachments: list[discord.Attachment], max_bytes: int) -> str:
    """The attachments as text to append to a question: text files read, others named."""
    blocks: list[str] = []
    for att in attachments:
        suffix = PurePath(att.filename).suffix.lower()
        if suffix not in TEXT_ATTACHMENT_SUFFIXES:
            blocks.append(f"[Attachment not read: {att.filename} ({att.content_type or 'unknown type'}, {_size(att.size)})]")
            continue
        if att.size > max_bytes:
            blocks.append(f"[Attachment not read: {att.filename} is {_size(att.size)}, over the {_size(max_bytes)} limit]")
            continue
        try:
            data = await att.read()
        except (discord.HTTPException, aiohttp.ClientError, asyncio.TimeoutError) as exc:
            # NotFound and Forbidden included; an unreachable host fails in aiohttp itself
            log.warning("could not download attachment %s: %s", att.filename, exc)
            blocks.append(f"[Attachment not read: {att.filename} could not be downloaded]")
            continue
        body = data[:max_bytes].decode("utf-8", errors="replace").replace("```", "`\u200b``")
        blocks.append(f"[Attached file: {att.filename}]\n```\n{body}\n```")
    return "\n\n".join(blocks)


def parent_ids(channel: object) -> tuple[str, ...]:
    """A channel's parent channel (a thread's) and categories, as access rules name them."""
    ids: list[str] = []
    parent = getattr(channel, "parent", None)
    if parent is not None:
        ids.append(str(parent.id))
        if (category_id := getattr(parent, "category_id", None)) is not None:
            ids.append(str(category_id))
    elif (parent_id := getattr(channel, "parent_id", None)) is not None:  # a thread whose parent is not cached
        ids.append(str(parent_id))
    if (category_id := getattr(channel, "category_id", None)) is not None:
        ids.append(str(category_id))
    return tuple(dict.fromkeys(ids))


def where_of(user: discord.abc.User, channel: object, guild: discord.Guild | None) -> Where:
    """The access facts of a request: person, place, parent channel/category, roles."""
    roles = tuple(str(r.id) for r in getattr(user, "roles", ()) if not r.is_default())
    return Where(
        user_id=str(user.id),
        guild_id=str(guild.id) if guild is not None else None,
        channel_id=str(getattr(channel, "id", "")),
        parent_ids=parent_ids(channel),
        role_ids=roles,
    )


def place_of(channel: object) -> tuple[str, str | None]:
    """(channel id, parent channel id): a thread's settings are its parent's (bot.settings.place)."""
    parent_id = getattr(channel, "parent_id", None) if isinstance(channel, discord.Thread) else None
    return str(getattr(channel, "id", "")), str(parent_id) if parent_id is not None else None


def request_from_message(message: discord.Message, text: str, thread: discord.Thread | None = None, *,
                         images: tuple[ImageInput, ...] = ()) -> TurnRequest:
    """A mention (or DM, or reply to the bot, or a free-response message) as a turn request;
    in ``thread`` when the bot opened one for the answer (its buffer is the thread's own)."""
    channel_id, parent_id = place_of(thread if thread is not None else message.channel)
    return TurnRequest(
        user_id=str(message.author.id),
        display_name=message.author.display_name,
        guild_id=str(message.guild.id) if message.guild is not None else None,
        channel_id=channel_id,
        text=text,
        message_id=str(message.id),
        parent_channel_id=parent_id,
        images=images,
    )


def request_from_interaction(interaction: discord.Interaction, text: str, *, want_trace: bool,
                             thread: discord.Thread | None = None,
                             images: tuple[ImageInput, ...] = (), private: bool = False) -> TurnRequest:
    """A slash command as a turn request (answered in ``thread`` when the bot opened one;
    ``private``: answered only to the asker)."""
    channel_id, parent_id = place_of(thread if thread is not None else interaction.channel)
    return TurnRequest(
        user_id=str(interaction.user.id),
        display_name=interaction.user.display_name,
        guild_id=str(interaction.guild_id) if interaction.guild_id is not None else None,
        channel_id=channel_id if channel_id else str(interaction.channel_id),
        parent_channel_id=parent_id,
        text=text,
        interaction_id=str(interaction.id),
        want_trace=want_trace,
        images=images,
        private=private,
    )
