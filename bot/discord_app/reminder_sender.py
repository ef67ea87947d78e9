"""Reminders posted to Discord: where they were set, mentioning only their person, once.

A reminder goes to the channel or thread it was set in, starting with a mention of its person,
with allowed mentions that let only that person be pinged whatever the text says; one set in a
DM or a private answer goes by DM. When the channel is gone, its thread archived, or the bot lost
access there, it goes by DM instead; when the DM is refused too, it is dropped with a log line.
Discord's own failures (5xx, after discord.py's retries) are tried again later; any other refusal
would come again, and drops the reminder with a log line. Each
part of a long text carries the occurrence's nonce (".N" per part), which discord.py sends with
``enforce_nonce``: a part sent again after a crash gives back the message already posted.

The process delivers what its shards own: a server's reminders from the shard of that server,
DM reminders from shard 0. Before sending, the operator's lists are checked again (blocked, no
longer on an allow-list: dropped). Part of bot/discord_app/.
"""

from __future__ import annotations

import logging

import discord

from bot.discord_app.access import AccessPolicy, Where
from bot.discord_app.dm_access import access_facts
from bot.discord_app.replies import split_message
from bot.discord_app.translate import parent_ids
from bot.reminders.delivery import SendOutcome
from memory.stores.reminders import Reminder

__all__ = ["DiscordReminderSender"]

log = logging.getLogger(__name__)

# Unknown Channel, Missing Access, Missing Permissions, Thread is archived
_NO_PLACE = (10003, 50001, 50013, 50083)
_DM_PARTS_LIMIT = 1900  # a part leaves room for the mention


class DiscordReminderSender:
    """The ReminderSender of a discord.py client (bot.reminders.delivery)."""

    def __init__(self, client: discord.Client, policy: AccessPolicy, *, shard_count: int | None = None,
                 shard_ids: tuple[int, ...] | None = None) -> None:
        self._client = client
        self._policy = policy
        self._shard_count = shard_count
        self._shard_ids = shard_ids

    def owns(self, reminder: Reminder) -> bool:
        if self._shard_count is None or self._shard_ids is None:
            return True
        shard = 0 if reminder.guild_id is None else (int(reminder.guild_id) >> 22) % self._shard_count
        return shard in self._shard_ids

    async def allowed(self, reminder: Reminder) -> bool:
        if reminder.user_id in self._policy.blocked_user_ids:
            return False
        if reminder.guild_id is None:
            user = await self._user(reminder.user_id)
            if user is None:
                return False
            return self._policy.allows(await access_facts(self._client, self._policy, user, None, None))
        guild = self._client.get_guild(int(reminder.guild_id))
        member = None
        if guild is not None and self._policy.allowed_role_ids:
            member = guild.get_member(int(reminder.user_id))
            if member is None:
                try:
                    member = await guild.fetch_member(int(reminder.user_id))
                except discord.NotFound:
                    return False  # no longer a member of the server: no role of theirs passes
        channel = self._client.get_channel(int(reminder.channel_id))
        parents = parent_ids(channel) if channel is not None else ()
        roles = tuple(str(r.id) for r in getattr(member, "roles", ()) if not r.is_default())
        return self._policy.allows(Where(user_id=reminder.user_id, guild_id=reminder.guild_id,
                                         channel_id=reminder.channel_id, parent_ids=parents, role_ids=roles))

    async def send(self, reminder: Reminder, text: str, nonce: str) -> SendOutcome:
        if not reminder.by_dm:
            channel = self._client.get_partial_messageable(int(reminder.channel_id))
            mention = f"<@{reminder.user_id}> "
            try:
                await self._post(channel, mention + text, nonce, reminder.user_id)
                return "sent"
            except discord.HTTPException as exc:
                if exc.code not in _NO_PLACE:
                    return _refused(reminder, exc)
                log.info("reminder %d: channel %s is gone or closed to the bot (%s); sending by DM",
                         reminder.id, reminder.channel_id, exc.code)
        user = await self._user(reminder.user_id)
        if user is None:
            log.warning("reminder %d dropped: user %s is unknown to Discord", reminder.id, reminder.user_id)
            return "dropped"
        try:
            await self._post(await user.create_dm(), text, nonce, reminder.user_id)
            return "sent"
        except discord.Forbidden:
            log.warning("reminder %d dropped: neither its channel nor a DM to user %s takes it",
                        reminder.id, reminder.user_id)
            return "dropped"
        except discord.HTTPException as exc:
            return _refused(reminder, exc)

    async def _post(self, channel: discord.abc.Messageable, text: str, nonce: str, user_id: str) -> None:
        mentions = discord.AllowedMentions(everyone=False, roles=False, replied_user=False,
                                           users=[discord.Object(int(user_id))])
        parts = split_message(text, _DM_PARTS_LIMIT)
        for index, part in enumerate(parts):
            await channel.send(part, nonce=nonce if len(parts) == 1 else f"{nonce}.{index}",
                               allowed_mentions=mentions)

    async def _user(self, user_id: str) -> discord.User | None:
        user = self._client.get_user(int(user_id))
        if user is not None:
            return user
        try:
            return await self._client.fetch_user(int(user_id))
        except discord.NotFound:
            return None


def _refused(reminder: Reminder, exc: discord.HTTPException) -> SendOutcome:
    """Discord's own failures (5xx) pass; a request it refuses (4xx) would be refused again."""
    if exc.status >= 500:
        log.warning("reminder %d: Discord failed (%s %s); trying again later", reminder.id, exc.status, exc.code)
        return "retry"
    log.warning("reminder %d dropped: Discord refused it (%s %s)", reminder.id, exc.status, exc.code)
    return "dropped"
