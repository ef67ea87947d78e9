"""Who may use the bot: the operator's allow and block lists, as pure decisions on ids.

An empty allow list means "no restriction" for that dimension. A channel is allowed when it, its
parent channel (for a thread) or its category is listed.

DMs need ALLOW_DMS, and, when an allow list is set, a person who passes it: with a guild or
role list, someone who is a member of a listed guild (or of any guild the bot is in, with a
role list only) and holds a listed role there (when roles are listed); with a channel list, no
one (a DM is no listed channel). The front end looks up those memberships (``Where.memberships``,
bot.discord_app.translate); the policy only decides. Pure: imports nothing, not even discord.py.
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
    # for a DM: (guild id, the person's role ids there) of the guilds looked up (dm_guilds_to_check)
    memberships: tuple[tuple[str, tuple[str, ...]], ...] = ()


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

    @property
    def dms_need_membership(self) -> bool:
        """Whether a DM is decided by the person's guild memberships (a guild or role list)."""
        return bool(self.allowed_guild_ids or self.allowed_role_ids) and not self.allowed_channel_ids

    def dm_guilds_to_check(self, bot_guilds: dict[str, frozenset[str]]) -> list[str]:
        """The guilds whose membership decides a DM, from the bot's guilds and their role ids:
        the listed guilds the bot is in, or, with a role list only, those holding a listed role."""
        if not self.dms_need_membership:
            return []
        return [g for g, roles in bot_guilds.items()
                if (not self.allowed_guild_ids or g in self.allowed_guild_ids)
                and (not self.allowed_role_ids or roles & self.allowed_role_ids)]

    def allows(self, where: Where) -> bool:
        if where.user_id in self.blocked_user_ids:
            return False
        if where.guild_id is None:
            return self.allow_dms and self._dm_passes(where)
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

    def _dm_passes(self, where: Where) -> bool:
        if self.allowed_channel_ids:
            return False
        if not self.dms_need_membership:
            return True
        return any((not self.allowed_guild_ids or guild in self.allowed_guild_ids)
                   and (not self.allowed_role_ids or any(r in self.allowed_role_ids for r in roles))
                   for guild, roles in where.memberships)
