"""Who may use the bot: the operator's allow and block lists, as pure decisions on ids.

An empty allow list means "no restriction" for that dimension. A channel is allowed when it, its
parent channel (for a thread) or its category is listed. Roles only exist in guilds, so a role
allow list never admits a DM; DMs are governed by ALLOW_DMS alone (plus the block list).
Pure: imports nothing, not even discord.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["AccessPolicy", "Where"]


@dataclass(frozen=True, slots=True)
class Where:
    """The place and person of a request, reduced to the ids the policy looks at."""

    user_id: str
    guild_id: str | None
    channel_id: str
    parent_ids: tuple[str, ...] = ()
    role_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """The operator's lists; `allows` answers whether a request may be served."""

    allowed_guild_ids: frozenset[str] = frozenset()
    allowed_channel_ids: frozenset[str] = frozenset()
    allowed_role_ids: frozenset[str] = frozenset()
    blocked_user_ids: frozenset[str] = frozenset()
    allow_dms: bool = True

    @classmethod
    def from_lists(
        cls,
        *,
        guilds: Iterable[str] = (),
        channels: Iterable[str] = (),
        roles: Iterable[str] = (),
        blocked: Iterable[str] = (),
        allow_dms: bool = True,
    ) -> AccessPolicy:
        return cls(frozenset(guilds), frozenset(channels), frozenset(roles), frozenset(blocked), allow_dms)

    def allows(self, where: Where) -> bool:
        if where.user_id in self.blocked_user_ids:
            return False
        if where.guild_id is None:
            return self.allow_dms
        if self.allowed_guild_ids and where.guild_id not in self.allowed_guild_ids:
            return False
        if self.allowed_channel_ids and not (
            where.channel_id in self.allowed_channel_ids
            or any(pid in self.allowed_channel_ids for pid in where.parent_ids)
        ):
            return False
        if self.allowed_role_ids and not any(r in self.allowed_role_ids for r in where.role_ids):
            return False
        return True
