"""Discord API payload builders and Discord's mention rules, for the FakeDiscord test server.

Pure functions and small records: snowflakes, user/member/role/channel/message/thread payloads
in the shapes discord.py parses, permission arithmetic, and the computation of which pings a
message would actually trigger given its content and ``allowed_mentions``.
Must not import the server (tests/fakes/discord_server.py) nor anything from the product.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1420070400000

# Permission bits used by the fake (values from Discord's API documentation).
ADMINISTRATOR = 1 << 3
MANAGE_GUILD = 1 << 5
MANAGE_MESSAGES = 1 << 13
MENTION_EVERYONE = 1 << 17
ALL_PERMISSIONS = (1 << 53) - 1
# Discord's default @everyone permissions plus slash commands and public threads.
DEFAULT_EVERYONE_PERMISSIONS = 104324673 | (1 << 31) | (1 << 35) | (1 << 38)

# Channel types.
GUILD_TEXT = 0
DM = 1
GUILD_CATEGORY = 4
PUBLIC_THREAD = 11
PRIVATE_THREAD = 12

# Message flags.
EPHEMERAL = 1 << 6
LOADING = 1 << 7

_USER_MENTION = re.compile(r"<@!?(\d{15,20})>")
_ROLE_MENTION = re.compile(r"<@&(\d{15,20})>")
_EVERYONE = re.compile(r"@(everyone|here)\b")

_lock = threading.Lock()
_last_id = 0
_increment = itertools.count()


def snowflake() -> str:
    """A new Discord snowflake (decimal string), strictly increasing within the process."""
    global _last_id
    with _lock:
        now_ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        candidate = (now_ms << 22) | (next(_increment) & 0xFFF)
        _last_id = max(_last_id + 1, candidate)
        return str(_last_id)


def iso_now() -> str:
    """The current time as Discord writes timestamps (ISO 8601, UTC)."""
    return datetime.now(UTC).isoformat()


def user_payload(user_id: str, name: str, *, bot: bool = False) -> dict[str, Any]:
    """A user object."""
    return {
        "id": user_id,
        "username": name,
        "global_name": name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
        "flags": 0,
    }


def role_payload(role_id: str, name: str, permissions: int, *, position: int = 0,
                 mentionable: bool = False) -> dict[str, Any]:
    """A guild role object."""
    return {
        "id": role_id,
        "name": name,
        "permissions": str(permissions),
        "position": position,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "managed": False,
        "mentionable": mentionable,
        "flags": 0,
        "icon": None,
        "unicode_emoji": None,
    }


@dataclass(slots=True)
class Pings:
    """Who a message would notify: user ids, role ids, @everyone/@here, the replied-to author."""

    users: set[str] = field(default_factory=set)
    roles: set[str] = field(default_factory=set)
    everyone: bool = False
    replied_user: str | None = None

    @property
    def nobody(self) -> bool:
        """True when the message notifies no one at all."""
        return not (self.users or self.roles or self.everyone)

    def merge(self, other: Pings) -> None:
        """Add another version's pings (an edit) to these."""
        self.users |= other.users
        self.roles |= other.roles
        self.everyone = self.everyone or other.everyone
        self.replied_user = self.replied_user or other.replied_user


def compute_pings(
    content: str,
    allowed_mentions: dict[str, Any] | None,
    *,
    author_id: str,
    in_guild: bool,
    can_mention_everyone: bool,
    mentionable_roles: set[str],
    replied_user_id: str | None = None,
) -> Pings:
    """Discord's rules for which mentions in ``content`` notify, given ``allowed_mentions``.

    With no ``allowed_mentions`` every user mention, every role mention the author may use and
    @everyone/@here (when the author has Mention Everyone) notify, and so does the author of the
    message replied to. With ``allowed_mentions``, ``parse`` lists the kinds parsed from the
    content, ``users``/``roles`` whitelist ids (only when they appear in the content), and
    ``replied_user`` (default false) decides the reply ping. The author never pings themself.
    """
    user_ids = set(_USER_MENTION.findall(content or ""))
    role_ids = set(_ROLE_MENTION.findall(content or "")) if in_guild else set()
    says_everyone = bool(_EVERYONE.search(content or "")) and in_guild
    usable_roles = {r for r in role_ids if r in mentionable_roles or can_mention_everyone}
    if allowed_mentions is None:
        users, roles = user_ids, usable_roles
        everyone = says_everyone and can_mention_everyone
        replied = replied_user_id
    else:
        parse = set(allowed_mentions.get("parse") or [])
        if "users" in parse:
            users = user_ids
        else:
            users = user_ids & {str(u) for u in allowed_mentions.get("users") or []}
        if "roles" in parse:
            roles = usable_roles
        else:
            roles = usable_roles & {str(r) for r in allowed_mentions.get("roles") or []}
        everyone = "everyone" in parse and says_everyone and can_mention_everyone
        replied = replied_user_id if allowed_mentions.get("replied_user") else None
    if replied is not None:
        users = users | {replied}
    users = users - {author_id}
    if replied == author_id:
        replied = None
    return Pings(users=set(users), roles=set(roles), everyone=everyone, replied_user=replied)


def channel_payload(channel_id: str, name: str, kind: int, *, guild_id: str | None,
                    parent_id: str | None = None, position: int = 0,
                    last_message_id: str | None = None) -> dict[str, Any]:
    """A guild text channel or category object."""
    return {
        "id": channel_id,
        "type": kind,
        "guild_id": guild_id,
        "name": name,
        "position": position,
        "parent_id": parent_id,
        "permission_overwrites": [],
        "topic": None,
        "nsfw": False,
        "last_message_id": last_message_id,
        "rate_limit_per_user": 0,
        "flags": 0,
    }


def dm_channel_payload(channel_id: str, recipient: dict[str, Any],
                       last_message_id: str | None = None) -> dict[str, Any]:
    """A DM channel object."""
    return {"id": channel_id, "type": DM, "recipients": [recipient],
            "last_message_id": last_message_id, "flags": 0}


def thread_payload(thread_id: str, name: str, *, guild_id: str, parent_id: str, owner_id: str,
                   kind: int = PUBLIC_THREAD, auto_archive_duration: int = 1440,
                   message_count: int = 0) -> dict[str, Any]:
    """A thread channel object (type 11 public, 12 private)."""
    now = iso_now()
    return {
        "id": thread_id,
        "type": kind,
        "guild_id": guild_id,
        "parent_id": parent_id,
        "owner_id": owner_id,
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": message_count,
        "member_count": 1,
        "total_message_sent": message_count,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": auto_archive_duration,
            "archive_timestamp": now,
            "locked": False,
            "invitable": True,
            "create_timestamp": now,
        },
    }


def attachment_payload(attachment_id: str, filename: str, size: int, url: str,
                       content_type: str | None) -> dict[str, Any]:
    """A message attachment object whose ``url`` the fake serves itself."""
    return {
        "id": attachment_id,
        "filename": filename,
        "size": size,
        "url": url,
        "proxy_url": url,
        "content_type": content_type,
    }
