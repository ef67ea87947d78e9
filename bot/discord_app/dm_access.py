"""The access facts of a request, DMs included: who is asking from where, and, for a DM under a
guild or role allow list, the person's memberships in the guilds that decide it.

A DM carries no guild, so the policy (bot.discord_app.access) is given the person's roles in
the guilds the bot shares with them that the lists name. discord.py's member cache holds only
members it has seen (the members intent is privileged and off), so a member not in the cache is
fetched from Discord (GET /guilds/{guild}/members/{user}, which needs no privileged intent);
"not a member" and a failed lookup both count as no membership.

Part of bot/discord_app/.
"""

from __future__ import annotations

import logging

import discord

from bot.discord_app.access import AccessPolicy, Where
from bot.discord_app.translate import where_of

__all__ = ["access_facts"]

log = logging.getLogger(__name__)


async def access_facts(client: discord.Client, policy: AccessPolicy, user: discord.abc.User,
                       channel: object, guild: discord.Guild | None) -> Where:
    """`where_of`, with the memberships a DM is decided by when the policy needs them."""
    where = where_of(user, channel, guild)
    if guild is not None or not policy.dms_need_membership or where.user_id in policy.blocked_user_ids:
        return where
    bot_guilds = {str(g.id): frozenset(str(r.id) for r in g.roles) for g in client.guilds}
    memberships = []
    for guild_id in policy.dm_guilds_to_check(bot_guilds):
        shared = client.get_guild(int(guild_id))
        if shared is None:
            continue
        member = shared.get_member(user.id) or await _fetch_member(shared, user.id)
        if member is not None:
            memberships.append((guild_id, tuple(str(r.id) for r in member.roles if not r.is_default())))
    return Where(user_id=where.user_id, guild_id=None, channel_id=where.channel_id,
                 memberships=tuple(memberships))


async def _fetch_member(guild: discord.Guild, user_id: int) -> discord.Member | None:
    try:
        return await guild.fetch_member(user_id)
    except discord.NotFound:
        return None
    except discord.HTTPException as exc:
        log.warning("DM access: could not look up user %s in guild %s (%s): treated as no member",
                    user_id, guild.id, exc.status)
        return None
