"""FakeDiscord: a loopback Discord (REST API + gateway WebSocket) that the real discord.py logs into.

Tests build a small world (guilds, channels, roles, members, DMs), point the real client at the
fake (``fake.api_base`` for ``discord.http.Route.BASE``, ``fake.gateway_url`` for the gateway,
see ``patch_client``), then drive it like people would (``user_says``, ``invoke_command``,
``click_button``) and read back what the bot did: every REST request, messages with the pings
they would really trigger, interaction callbacks with their timing, threads, command syncs,
typing. Nothing leaves 127.0.0.1.

Usage::

    async with FakeDiscord() as fake:
        guild = fake.add_guild("Test")
        channel = fake.add_channel(guild, "general")
        alice = fake.add_member(guild, name="alice")
        with fake.patch_client():                  # Route.BASE + gateway URL, restored after
            task = asyncio.create_task(bot.start(fake.token))
            await fake.wait_until_connected()
            await fake.user_says(channel, alice, "what is 2+2?", mention_bot=True)
            reply = await fake.wait_for_message(channel)
            assert reply.pings.users <= {alice} and not reply.pings.everyone
            inter = await fake.invoke_command(channel, alice, "ask", {"question": "hi"})
            assert (await fake.wait_for_response(inter, "callback")).at < 3

Behaviour copied from Discord: 2,000-character and empty-message refusals, the 3-second
interaction deadline (10062), one acknowledgement per interaction (40060), followups only after
it, the first followup after a defer filling the "thinking" message, threads started from a
message sharing its id, message content blanked without the message-content intent (except
DMs, mentions of the bot and its own messages), privileged intents refused with close 4014,
RESUME replaying missed events, a message's ``nonce`` with ``enforce_nonce`` (the same nonce of the
same author in a channel within NONCE_WINDOW_S gives back the message already created), 429 answers with ``retry_after``, per-route rate-limit buckets
with Discord's headers (``rate_limits``, see tests/fakes/discord_ratelimit.py), and the time
each gateway heartbeat arrived (``heartbeats``, against the HELLO's interval).

Must not import the product (agent/, memory/, bot/); it is the far end of the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import logging
import re
import secrets
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio
from aiohttp import WSMsgType, web

from tests.fakes import discord_payloads as p
from tests.fakes.discord_ratelimit import RateLimiter
from tests.fakes.loopback import LoopbackServer

log = logging.getLogger(__name__)

__all__ = [
    "CommandSync",
    "FakeDiscord",
    "FakeInteraction",
    "FakeMessage",
    "Heartbeat",
    "InteractionEvent",
    "RecordedRequest",
    "TypingEvent",
    "fake_discord",
]

API_VERSION = 10
PRIVILEGED_INTENTS = (1 << 1) | (1 << 8) | (1 << 15)  # members, presences, message content
MESSAGE_CONTENT_INTENT = 1 << 15
NONCE_WINDOW_S = 300.0  # Discord keeps an enforced nonce "for a few minutes"


# --------------------------------------------------------------------------- records


@dataclass(slots=True)
class RecordedRequest:
    """One HTTP request the client made to the REST API (path relative to ``api_base``)."""

    method: str
    path: str
    query: dict[str, str]
    json: Any
    files: list[tuple[str, bytes]]  # (filename, bytes) of a multipart upload
    at: float  # time.monotonic() when received
    status: int = 0
    unknown: bool = False  # no such route on the fake (answered 404)


@dataclass(slots=True)
class TypingEvent:
    """A POST /channels/{id}/typing."""

    channel_id: str
    at: float


@dataclass(slots=True)
class Heartbeat:
    """A gateway HELLO sent (``hello``) or a heartbeat (op 1) received, on connection ``conn``."""

    conn: int
    at: float
    hello: bool = False


@dataclass(slots=True)
class CommandSync:
    """One bulk overwrite of application commands (``guild_id`` None = global)."""

    guild_id: str | None
    commands: list[dict[str, Any]]
    at: float

    @property
    def names(self) -> list[str]:
        return [c["name"] for c in self.commands]


@dataclass(slots=True)
class FakeMessage:
    """A message in the fake's world, from a person or from the bot."""

    id: str
    channel_id: str
    guild_id: str | None
    author: dict[str, Any]
    content: str
    created_at: float
    timestamp: str
    pings: p.Pings
    allowed_mentions: dict[str, Any] | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)
    embeds: list[dict[str, Any]] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)
    flags: int = 0
    type: int = 0
    reference_id: str | None = None
    mentions: list[str] = field(default_factory=list)
    webhook_id: str | None = None
    interaction_id: str | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)  # {"content", "at"} of each edit
    first_content: str = ""  # what a bot message said when it was sent, before any edit
    edited_timestamp: str | None = None
    deleted: bool = False
    nonce: str | None = None

    @property
    def author_id(self) -> str:
        return self.author["id"]

    @property
    def from_bot(self) -> bool:
        return bool(self.author.get("bot"))

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & p.EPHEMERAL)

    @property
    def loading(self) -> bool:
        return bool(self.flags & p.LOADING)

    def custom_ids(self) -> list[str]:
        """Every component custom_id on the message (buttons, selects), in order."""
        found: list[str] = []

        def walk(items: list[dict[str, Any]]) -> None:
            for item in items:
                if "custom_id" in item:
                    found.append(item["custom_id"])
                walk(item.get("components") or [])

        walk(self.components)
        return found


@dataclass(slots=True)
class InteractionEvent:
    """What the bot did with an interaction, ``at`` seconds after the fake dispatched it.

    ``kind``: "callback" (``callback_type`` 4, 5, 6, 7, 8, 9), "original_edit", "original_get",
    "original_delete", "followup", "followup_edit", "followup_delete".
    """

    kind: str
    at: float
    json: Any
    status: int
    callback_type: int | None = None
    message_id: str | None = None
    ephemeral: bool = False


@dataclass(slots=True)
class FakeInteraction:
    """An interaction the fake dispatched (type 2 command or 3 component) and its responses."""

    id: str
    token: str
    type: int
    channel_id: str
    guild_id: str | None
    user_id: str
    name: str  # command name, or the clicked custom_id
    payload: dict[str, Any]
    dispatched_at: float
    events: list[InteractionEvent] = field(default_factory=list)
    original_message_id: str | None = None
    source_message_id: str | None = None  # the message whose component was clicked

    @property
    def callback(self) -> InteractionEvent | None:
        """The accepted callback (the interaction's acknowledgement), if any."""
        return next((e for e in self.events if e.kind == "callback" and e.status < 300), None)

    @property
    def acknowledged(self) -> bool:
        return self.callback is not None


# --------------------------------------------------------------------------- world


@dataclass(slots=True)
class _Member:
    user_id: str
    roles: list[str]
    nick: str | None
    joined_at: str


@dataclass(slots=True)
class _Guild:
    id: str
    name: str
    owner_id: str
    roles: dict[str, dict[str, Any]]
    channel_ids: list[str]
    members: dict[str, _Member]


@dataclass(slots=True)
class _Injection:
    method: str
    pattern: str
    status: int
    body: dict[str, Any]
    headers: dict[str, str]
    remaining: int


class _Connection:
    """One gateway WebSocket: an ordered outgoing queue, written by its own task."""

    def __init__(self, ws: web.WebSocketResponse, compression: str | None) -> None:
        self.ws = ws
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.session: _Session | None = None
        self.compression = compression
        self._zlib = zlib.compressobj() if compression == "zlib-stream" else None
        self._zstd = None
        if compression == "zstd-stream":
            import zstandard

            self._zstd = zstandard.ZstdCompressor().compressobj()
        self.writer: asyncio.Task[None] | None = None

    def send(self, obj: dict[str, Any]) -> None:
        self.queue.put_nowait(json.dumps(obj))

    async def write_loop(self) -> None:
        while (text := await self.queue.get()) is not None:
            if self.ws.closed:
                return
            data = text.encode()
            if self._zlib is not None:
                await self.ws.send_bytes(self._zlib.compress(data) + self._zlib.flush(zlib.Z_SYNC_FLUSH))
            elif self._zstd is not None:
                import zstandard

                chunk = self._zstd.compress(data)
                await self.ws.send_bytes(chunk + self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
            else:
                await self.ws.send_str(text)


@dataclass(slots=True)
class _Session:
    id: str
    shard: tuple[int, int]
    intents: int
    seq: int = 0
    log: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    conn: _Connection | None = None


def _json(status: int, body: Any = None, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py parses a body as JSON only when Content-Type is exactly application/json.
    if status == 204 or body is None:
        return web.Response(status=204, headers=headers)
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(status=status, body=json.dumps(body).encode(), headers=all_headers)


def _error(status: int, code: int, message: str) -> web.Response:
    return _json(status, {"code": code, "message": message})


def _invalid_form(field: str, code: str, message: str) -> web.Response:
    """Discord's 400 for a body field it refuses, with the per-field error list."""
    return _json(400, {"code": 50035, "message": "Invalid Form Body",
                       "errors": {field: {"_errors": [{"code": code, "message": message}]}}})


class _Request:
    def __init__(self, method: str, path: str, query: dict[str, str], body: Any,
                 files: list[tuple[str, str, bytes, str]]) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.json = body
        self.files = files  # (field name, filename, bytes, content type)


# --------------------------------------------------------------------------- the fake


class FakeDiscord(LoopbackServer):
    """A loopback Discord. Use ``async with FakeDiscord() as fake:`` or the ``fake_discord`` fixture.

    Point the client at it with ``with fake.patch_client():`` (sets ``discord.http.Route.BASE``
    and ``DiscordWebSocket.DEFAULT_GATEWAY``), or let the bot do the same from its settings.
    """

    def __init__(self, *, token: str = "fake-bot-token", bot_name: str = "ReActBot",
                 interaction_deadline_s: float = 3.0, interaction_token_lifetime_s: float = 15 * 60.0,
                 heartbeat_interval_ms: int = 41250,
                 compression: str = "auto", privileged_intents: int = PRIVILEGED_INTENTS,
                 echo_bot_messages: bool = True, max_content_length: int = 2000) -> None:
        self.token = token
        self.bot_user = p.user_payload(p.snowflake(), bot_name, bot=True)
        self.application_id = p.snowflake()
        self.interaction_deadline_s = interaction_deadline_s
        # After this, the interaction's token is refused (401, code 50027) by every webhook route.
        self.interaction_token_lifetime_s = interaction_token_lifetime_s
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.compression = compression  # "auto" honours ?compress=, "none" sends text frames
        self.privileged_intents = privileged_intents
        self.echo_bot_messages = echo_bot_messages
        self.max_content_length = max_content_length

        self.users: dict[str, dict[str, Any]] = {self.bot_user["id"]: self.bot_user}
        self.guilds: dict[str, _Guild] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, FakeMessage] = {}
        self.files: dict[str, bytes] = {}  # attachment id -> bytes
        self.attachment_downloads: list[str] = []  # ids of the attachments fetched, in order
        self.interactions: dict[str, FakeInteraction] = {}
        self.commands: dict[str | None, list[dict[str, Any]]] = {}  # guild id or None -> commands

        self.requests: list[RecordedRequest] = []
        self.typing_events: list[TypingEvent] = []
        self.command_syncs: list[CommandSync] = []
        self.identifies: list[dict[str, Any]] = []
        self.gateway_log: list[dict[str, Any]] = []  # every payload the client sent on the gateway
        self.heartbeats: list[Heartbeat] = []
        self.rate_limits: RateLimiter | None = None  # set one to rate-limit sends and edits
        self.on_post: Callable[[FakeMessage], None] | None = None  # called once a bot message is created
        self.enforce_nonces = True  # False: every send creates a message (a baseline without Discord's dedup)

        self._sessions: dict[str, _Session] = {}
        self._connections: set[_Connection] = set()
        self._injections: list[_Injection] = []
        self._consumed: set[str] = set()
        self._changed = asyncio.Event()
        self._routes = self._build_routes()
        super().__init__()

    # ----------------------------------------------------------------- lifecycle

    client_max_size = 64 * 1024 * 1024  # attachments come in multipart bodies

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/api/v{version}/{tail:.*}", self._handle_api)
        app.router.add_get("/ws", self._handle_gateway)
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self._handle_attachment)

    async def close(self) -> None:
        for conn in list(self._connections):
            conn.queue.put_nowait(None)
            await conn.ws.close(code=1001)
        await super().close()

    @property
    def api_base(self) -> str:
        """What ``discord.http.Route.BASE`` must be set to."""
        return f"{self.base_url}/api/v{API_VERSION}"

    @property
    def gateway_url(self) -> str:
        """What ``DiscordWebSocket.DEFAULT_GATEWAY`` must be (also served by GET /gateway/bot)."""
        return f"{self.base_url.replace('http://', 'ws://', 1)}/ws"

    @contextlib.contextmanager
    def patch_client(self) -> Iterator[None]:
        """Point discord.py (REST, webhooks and gateway) at this fake; restored on exit."""
        import discord.gateway
        import discord.http
        import yarl

        old_base = discord.http.Route.BASE
        old_gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
        discord.http.Route.BASE = self.api_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)
        try:
            yield
        finally:
            discord.http.Route.BASE = old_base
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway

    # ----------------------------------------------------------------- world building

    @property
    def bot_id(self) -> str:
        return self.bot_user["id"]

    def add_user(self, name: str, *, bot: bool = False, user_id: str | None = None) -> str:
        """A Discord user (not yet in any guild); returns its id."""
        uid = user_id or p.snowflake()
        self.users[uid] = p.user_payload(uid, name, bot=bot)
        return uid

    def add_guild(self, name: str, *, owner_id: str | None = None,
                  everyone_permissions: int = p.DEFAULT_EVERYONE_PERMISSIONS) -> str:
        """A guild with its @everyone role and the bot as a member holding its managed role
        (``bot_role_of``), as Discord gives a bot invited with permissions; returns its id."""
        gid = p.snowflake()
        owner = owner_id or self.add_user(f"{name}-owner")
        if owner not in self.users:
            self.users[owner] = p.user_payload(owner, f"user{owner[-4:]}")
        guild = _Guild(id=gid, name=name, owner_id=owner,
                       roles={gid: p.role_payload(gid, "@everyone", everyone_permissions)},
                       channel_ids=[], members={})
        self.guilds[gid] = guild
        bot_role = p.snowflake()
        guild.roles[bot_role] = {**p.role_payload(bot_role, self.bot_user["username"], 0, position=1),
                                 "managed": True, "tags": {"bot_id": self.bot_id}}
        guild.members[self.bot_id] = _Member(self.bot_id, [bot_role], None, p.iso_now())
        guild.members[owner] = _Member(owner, [], None, p.iso_now())
        self._emit_guild_event(gid, "GUILD_CREATE", lambda: self._guild_payload(guild))
        return gid

    def add_channel(self, guild_id: str, name: str, *, type: int = p.GUILD_TEXT,
                    parent_id: str | None = None) -> str:
        """A guild channel (text by default; ``type=4`` a category); returns its id."""
        guild = self.guilds[guild_id]
        cid = p.snowflake()
        self.channels[cid] = p.channel_payload(cid, name, type, guild_id=guild_id, parent_id=parent_id,
                                               position=len(guild.channel_ids))
        guild.channel_ids.append(cid)
        self._emit_guild_event(guild_id, "CHANNEL_CREATE", lambda: self.channels[cid])
        return cid

    def delete_channel(self, channel_id: str) -> None:
        """Delete a guild channel (sent as CHANNEL_DELETE); its routes answer 404 Unknown Channel."""
        channel = self.channels.pop(channel_id)
        self.guilds[channel["guild_id"]].channel_ids.remove(channel_id)
        self._emit_guild_event(channel["guild_id"], "CHANNEL_DELETE", lambda: channel)

    def deny_in_channel(self, channel_id: str, role_id: str, permissions: int) -> None:
        """A permission overwrite in one channel denying ``permissions`` to a role (sent as
        CHANNEL_UPDATE). Interactions still carry guild-level permissions (see permissions_of)."""
        channel = self.channels[channel_id]
        kept = [o for o in channel["permission_overwrites"] if o["id"] != role_id]
        channel["permission_overwrites"] = [*kept, {"id": role_id, "type": 0, "allow": "0", "deny": str(permissions)}]
        self._emit_guild_event(channel["guild_id"], "CHANNEL_UPDATE", lambda: self.channels[channel_id])

    def add_category(self, guild_id: str, name: str) -> str:
        """A category channel (type 4); returns its id."""
        return self.add_channel(guild_id, name, type=p.GUILD_CATEGORY)

    def add_role(self, guild_id: str, name: str, permissions: int = 0, *,
                 mentionable: bool = False) -> str:
        """A guild role; returns its id."""
        guild = self.guilds[guild_id]
        rid = p.snowflake()
        guild.roles[rid] = p.role_payload(rid, name, permissions, position=len(guild.roles),
                                          mentionable=mentionable)
        self._emit_guild_event(guild_id, "GUILD_ROLE_CREATE",
                               lambda: {"guild_id": guild_id, "role": guild.roles[rid]})
        return rid

    def add_member(self, guild_id: str, user_id: str | None = None, name: str | None = None, *,
                   roles: list[str] | None = None, bot: bool = False, nick: str | None = None) -> str:
        """Add (or update the roles of) a guild member, creating the user if new; returns the id."""
        guild = self.guilds[guild_id]
        uid = user_id or p.snowflake()
        if uid not in self.users:
            self.users[uid] = p.user_payload(uid, name or f"user{uid[-4:]}", bot=bot)
        existing = guild.members.get(uid)
        guild.members[uid] = _Member(uid, list(roles or []), nick,
                                     existing.joined_at if existing else p.iso_now())
        event = "GUILD_MEMBER_UPDATE" if existing else "GUILD_MEMBER_ADD"
        self._emit_guild_event(guild_id, event,
                               lambda: {"guild_id": guild_id, **self._member_payload(guild, uid)})
        return uid

    def add_dm_channel(self, user_id: str) -> str:
        """The DM channel between the bot and a user (created once); returns its id."""
        for cid, ch in self.channels.items():
            if ch["type"] == p.DM and ch["recipients"][0]["id"] == user_id:
                return cid
        if user_id not in self.users:
            self.users[user_id] = p.user_payload(user_id, f"user{user_id[-4:]}")
        cid = p.snowflake()
        self.channels[cid] = p.dm_channel_payload(cid, self.users[user_id])
        return cid

    def bot_role_of(self, guild_id: str) -> str:
        """The id of the bot's managed role in a guild (mention it as ``<@&id>``)."""
        return next(rid for rid, role in self.guilds[guild_id].roles.items()
                    if (role.get("tags") or {}).get("bot_id") == self.bot_id)

    def guild_of(self, channel_id: str) -> str | None:
        """The guild id of a channel or thread; None for a DM."""
        return self.channels[channel_id].get("guild_id")

    def permissions_of(self, guild_id: str, user_id: str) -> int:
        """Guild-level permissions (owner and Administrator get all; no channel overwrites)."""
        guild = self.guilds[guild_id]
        if user_id == guild.owner_id:
            return p.ALL_PERMISSIONS
        member = guild.members.get(user_id)
        value = int(guild.roles[guild_id]["permissions"])
        for rid in member.roles if member else []:
            if rid in guild.roles:
                value |= int(guild.roles[rid]["permissions"])
        return p.ALL_PERMISSIONS if value & p.ADMINISTRATOR else value

    # ----------------------------------------------------------------- fault injection

    def inject_error(self, method: str, path_pattern: str, status: int, *, body: dict | None = None,
                     times: int = 1, headers: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests matching (fnmatch on the API path) with an error."""
        self._injections.append(_Injection(method.upper(), path_pattern, status,
                                           body or {"code": 0, "message": f"injected {status}"},
                                           headers or {}, times))

    def rate_limit_once(self, method: str, path_pattern: str, *, retry_after: float = 0.05,
                        is_global: bool = False) -> None:
        """Answer the next matching request 429 with ``retry_after`` (as Discord, via a proxy)."""
        self.inject_error(method, path_pattern, 429,
                          body={"message": "You are being rate limited.", "retry_after": retry_after,
                                "global": is_global, "code": 0},
                          headers={"Via": "1.1 google", "Retry-After": str(retry_after),
                                   "X-RateLimit-Scope": "global" if is_global else "user"})

    async def drop_gateway(self, *, code: int = 4000) -> None:
        """Close every gateway connection (the client should reconnect and RESUME)."""
        for conn in list(self._connections):
            conn.queue.put_nowait(None)
            await conn.ws.close(code=code)

    def invalidate_sessions(self) -> None:
        """Send op 9 INVALID_SESSION (not resumable): the client identifies afresh, READY again."""
        for conn in list(self._connections):
            conn.send({"op": 9, "s": None, "t": None, "d": False})
        self._sessions.clear()

    def request_reconnect(self) -> None:
        """Send op 7 RECONNECT on every connection."""
        for conn in list(self._connections):
            conn.send({"op": 7, "d": None})

    # ----------------------------------------------------------------- driving the bot

    async def user_deletes(self, msg: FakeMessage) -> None:
        """A person deletes their message; dispatches MESSAGE_DELETE."""
        msg.deleted = True
        self._notify()
        self._emit("MESSAGE_DELETE", {"id": msg.id, "channel_id": msg.channel_id, "guild_id": msg.guild_id},
                   msg.guild_id)
        await asyncio.sleep(0)

    async def moderator_bulk_deletes(self, msgs: list[FakeMessage]) -> None:
        """A moderator deletes several messages of one channel at once; dispatches MESSAGE_DELETE_BULK."""
        for msg in msgs:
            msg.deleted = True
        self._notify()
        first = msgs[0]
        self._emit("MESSAGE_DELETE_BULK", {"ids": [m.id for m in msgs], "channel_id": first.channel_id,
                                           "guild_id": first.guild_id}, first.guild_id)
        await asyncio.sleep(0)

    async def user_says(self, channel_id: str, user_id: str, content: str, *,
                        mention_bot: bool = False, reply_to: str | None = None,
                        attachments: list[tuple[str, bytes]] | None = None,
                        mention_replied: bool = True) -> FakeMessage:
        """A person posts a message; dispatches MESSAGE_CREATE and returns the stored message.

        ``mention_bot`` prefixes ``<@bot>``; ``reply_to`` is a message id (its author is
        mentioned unless ``mention_replied`` is false); ``attachments`` are (filename, bytes),
        served over HTTP by the fake.
        """
        msg = self.draft_message(channel_id, user_id, content, mention_bot=mention_bot, reply_to=reply_to,
                                 attachments=attachments, mention_replied=mention_replied)
        self._emit_message("MESSAGE_CREATE", msg)
        await asyncio.sleep(0)
        return msg

    def draft_message(self, channel_id: str, user_id: str, content: str, *,
                      mention_bot: bool = False, reply_to: str | None = None,
                      attachments: list[tuple[str, bytes]] | None = None,
                      mention_replied: bool = True) -> FakeMessage:
        """What `user_says` posts, stored but not dispatched: a fuzzer mutates
        ``message_payload(msg)`` and sends it with ``dispatch("MESSAGE_CREATE", ...)``."""
        channel = self.channels[channel_id]
        guild_id = channel.get("guild_id")
        if mention_bot and f"<@{self.bot_id}>" not in content:
            content = f"<@{self.bot_id}> {content}"
        mentioned = [u for u in dict.fromkeys(re.findall(r"<@!?(\d{15,20})>", content)) if u in self.users]
        replied = self.messages.get(reply_to) if reply_to else None
        if reply_to and replied is None:
            raise KeyError(f"no message {reply_to} to reply to")
        if replied is not None and mention_replied and replied.author_id not in mentioned:
            mentioned.append(replied.author_id)
        mid = p.snowflake()
        files = [self._store_file(channel_id, name, data) for name, data in attachments or []]
        author = self.users[user_id]
        pings = p.compute_pings(
            content, None, author_id=user_id, in_guild=guild_id is not None,
            can_mention_everyone=bool(guild_id and self.permissions_of(guild_id, user_id) & p.MENTION_EVERYONE),
            mentionable_roles=self._mentionable_roles(guild_id),
            replied_user_id=replied.author_id if replied is not None and mention_replied else None)
        msg = FakeMessage(id=mid, channel_id=channel_id, guild_id=guild_id, author=author,
                          content=content, created_at=time.monotonic(), timestamp=p.iso_now(),
                          pings=pings, attachments=files, type=19 if replied else 0,
                          reference_id=reply_to, mentions=mentioned)
        self._store_message(msg)
        return msg

    async def invoke_command(self, channel_id: str, user_id: str, name: str,
                             options: dict[str, Any] | None = None, *, subcommand: str | None = None,
                             group: str | None = None) -> FakeInteraction:
        """A person runs a synced slash command; dispatches INTERACTION_CREATE (type 2).

        The command must have been synced (guild commands of the channel's guild first, then
        global). ``options`` maps option names to values; user/channel/role options take ids.
        """
        guild_id = self.channels[channel_id].get("guild_id")
        command = self._find_command(name, guild_id)
        defs = command.get("options") or []
        if group is not None:
            defs = self._sub_def(defs, group, 2, name).get("options") or []
        if subcommand is not None:
            defs = self._sub_def(defs, subcommand, 1, name).get("options") or []
        resolved: dict[str, dict[str, Any]] = {}
        built = [self._option_payload(defs, key, value, guild_id, resolved)
                 for key, value in (options or {}).items()]
        if subcommand is not None:
            built = [{"name": subcommand, "type": 1, "options": built}]
        if group is not None:
            built = [{"name": group, "type": 2, "options": built}]
        data: dict[str, Any] = {"id": command["id"], "name": name, "type": 1, "options": built}
        if command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        if resolved:
            data["resolved"] = resolved
        return await self._dispatch_interaction(2, channel_id, user_id, data, name=name)

    async def autocomplete(self, channel_id: str, user_id: str, name: str, focused: str, typed: str, *,
                           subcommand: str | None = None) -> list[dict[str, Any]]:
        """A person types ``typed`` into the option ``focused`` of a synced command; dispatches
        INTERACTION_CREATE (type 4) and returns the choices the bot answered (callback type 8)."""
        guild_id = self.channels[channel_id].get("guild_id")
        command = self._find_command(name, guild_id)
        defs = command.get("options") or []
        if subcommand is not None:
            defs = self._sub_def(defs, subcommand, 1, name).get("options") or []
        kind = next(d["type"] for d in defs if d["name"] == focused)
        built: list[dict[str, Any]] = [{"name": focused, "type": kind, "value": typed, "focused": True}]
        if subcommand is not None:
            built = [{"name": subcommand, "type": 1, "options": built}]
        data: dict[str, Any] = {"id": command["id"], "name": name, "type": 1, "options": built}
        if command.get("guild_id"):
            data["guild_id"] = command["guild_id"]
        inter = await self._dispatch_interaction(4, channel_id, user_id, data, name=name)
        event = await self.wait_for_response(inter, "callback")
        return list((event.json.get("data") or {}).get("choices") or [])

    async def click_button(self, message_id: str, custom_id: str, user_id: str) -> FakeInteraction:
        """A person clicks a component of a bot message; dispatches INTERACTION_CREATE (type 3)."""
        msg = self.messages[message_id]
        if custom_id not in msg.custom_ids():
            raise KeyError(f"message {message_id} has no component {custom_id!r}: {msg.custom_ids()}")
        data = {"custom_id": custom_id, "component_type": 2}
        return await self._dispatch_interaction(3, msg.channel_id, user_id, data, name=custom_id,
                                                source=msg)

    async def choose(self, message_id: str, custom_id: str, values: list[str], user_id: str) -> FakeInteraction:
        """A person picks ``values`` in a string select menu of a bot message; dispatches
        INTERACTION_CREATE (type 3, component type 3). Values the menu does not offer raise,
        as Discord's client offers only its options."""
        msg = self.messages[message_id]
        menu = next((c for row in msg.components for c in row.get("components", [])
                     if c.get("custom_id") == custom_id and c.get("type") == 3), None)
        if menu is None:
            raise KeyError(f"message {message_id} has no select menu {custom_id!r}: {msg.custom_ids()}")
        offered = {o["value"] for o in menu.get("options", [])}
        if not set(values) <= offered or not menu.get("min_values", 1) <= len(values) <= menu.get("max_values", 1):
            raise ValueError(f"select {custom_id!r} offers {sorted(offered)}, not {values}")
        data = {"custom_id": custom_id, "component_type": 3, "values": list(values)}
        return await self._dispatch_interaction(3, msg.channel_id, user_id, data, name=custom_id, source=msg)

    async def submit_modal(self, opened: FakeInteraction, values: dict[str, str],
                           user_id: str | None = None) -> FakeInteraction:
        """A person fills in the modal the bot answered ``opened`` with (callback type 9) and
        submits it; dispatches INTERACTION_CREATE (type 5). ``values`` maps each text input's
        custom_id to its text (inputs left out are submitted empty)."""
        modal = next((e.json.get("data") or {} for e in opened.events
                      if e.kind == "callback" and e.status < 300 and e.callback_type == 9), None)
        if modal is None:
            raise KeyError(f"interaction {opened.id} was not answered with a modal")
        unknown = set(values) - {c["custom_id"] for row in modal["components"] for c in row["components"]}
        if unknown:
            raise KeyError(f"the modal has no input {sorted(unknown)}")
        rows = [{"type": 1, "components": [{"type": 4, "custom_id": c["custom_id"],
                                             "value": values.get(c["custom_id"], "")}
                                            for c in row["components"]]}
                for row in modal["components"]]
        data = {"custom_id": modal["custom_id"], "components": rows}
        return await self._dispatch_interaction(5, opened.channel_id, user_id or opened.user_id, data,
                                                name=modal["custom_id"])

    async def dispatch(self, event: str, data: dict[str, Any], *, guild_id: str | None = None) -> None:
        """Send any gateway DISPATCH event (to the shard of ``guild_id``)."""
        self._emit(event, data, guild_id)
        await asyncio.sleep(0)

    # ----------------------------------------------------------------- queries

    def message_payload(self, msg: FakeMessage) -> dict[str, Any]:
        """The gateway payload (MESSAGE_CREATE data) of a stored message."""
        return self._message_payload(msg)

    def messages_in(self, channel_id: str, *, include_deleted: bool = False) -> list[FakeMessage]:
        """Messages of a channel or thread, oldest first (ephemeral ones included)."""
        return [m for m in self.messages.values()
                if m.channel_id == channel_id and (include_deleted or not m.deleted)]

    def bot_messages(self, channel_id: str | None = None) -> list[FakeMessage]:
        """Messages the bot created, oldest first (optionally of one channel)."""
        return [m for m in self.messages.values() if m.from_bot and not m.deleted
                and (channel_id is None or m.channel_id == channel_id)]

    @property
    def threads(self) -> list[dict[str, Any]]:
        """Thread channels (type 11/12) created so far, as Discord channel payloads."""
        return [c for c in self.channels.values() if c["type"] in (p.PUBLIC_THREAD, p.PRIVATE_THREAD)]

    @property
    def unknown_requests(self) -> list[RecordedRequest]:
        """Requests to routes the fake does not know (answered 404)."""
        return [r for r in self.requests if r.unknown]

    def interaction_responses(self, interaction_id: str) -> list[InteractionEvent]:
        """Callback, original edits and followups of an interaction, in order."""
        return list(self.interactions[interaction_id].events)

    async def wait_for(self, predicate: Callable[[], Any], *, timeout: float = 10.0) -> Any:
        """Wait until ``predicate()`` is truthy; returns its value.

        Re-checked on every change of the fake and every 20 ms, so a predicate may also look at
        the client's own state.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"condition not met within {timeout}s")
            event = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), min(remaining, 0.02))

    async def wait_for_message(self, channel_id: str | None = None,
                               predicate: Callable[[FakeMessage], bool] | None = None, *,
                               timeout: float = 10.0, from_bot: bool = True) -> FakeMessage:
        """The oldest message (by default from the bot) matching, not returned by an earlier call.

        Deferred "thinking" messages are skipped until they get content. Each message is handed
        out once, so consecutive calls walk through the bot's replies in order, whether they
        arrived before or after the call.
        """
        def find() -> FakeMessage | None:
            for m in self.messages.values():
                if (m.id not in self._consumed and not m.deleted and not m.loading
                        and m.from_bot == from_bot
                        and (channel_id is None or m.channel_id == channel_id)
                        and (predicate is None or predicate(m))):
                    return m
            return None

        msg = await self.wait_for(find, timeout=timeout)
        self._consumed.add(msg.id)
        return msg

    async def wait_for_response(self, interaction: FakeInteraction | str, kind: str | None = None, *,
                                count: int = 1, timeout: float = 10.0) -> InteractionEvent:
        """Wait until an interaction has ``count`` accepted events (of ``kind``); returns the last."""
        inter = self.interactions[interaction if isinstance(interaction, str) else interaction.id]

        def find() -> InteractionEvent | None:
            hits = [e for e in inter.events if e.status < 300 and (kind is None or e.kind == kind)]
            return hits[count - 1] if len(hits) >= count else None

        return await self.wait_for(find, timeout=timeout)

    async def wait_until_connected(self, *, timeout: float = 10.0) -> None:
        """Wait until a client has identified and been sent READY."""
        await self.wait_for(lambda: any(s.conn is not None for s in self._sessions.values()),
                            timeout=timeout)

    def attachment_bytes(self, message_id: str, index: int = 0) -> bytes:
        """The bytes of a message's attachment (uploaded by the bot or a person)."""
        return self.files[self.messages[message_id].attachments[index]["id"]]

    # ----------------------------------------------------------------- internals: payloads

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _mentionable_roles(self, guild_id: str | None) -> set[str]:
        if guild_id is None:
            return set()
        return {rid for rid, r in self.guilds[guild_id].roles.items() if r["mentionable"]}

    def _member_payload(self, guild: _Guild, user_id: str, *, with_user: bool = True,
                        permissions: bool = False) -> dict[str, Any]:
        member = guild.members[user_id]
        data: dict[str, Any] = {"roles": list(member.roles), "nick": member.nick,
                                "joined_at": member.joined_at, "deaf": False, "mute": False,
                                "flags": 0, "pending": False, "avatar": None,
                                "premium_since": None, "communication_disabled_until": None}
        if with_user:
            data["user"] = self.users[user_id]
        if permissions:
            data["permissions"] = str(self.permissions_of(guild.id, user_id))
        return data

    def _guild_payload(self, guild: _Guild) -> dict[str, Any]:
        channels = [self.channels[c] for c in guild.channel_ids]
        threads = [t for t in self.threads if t["guild_id"] == guild.id]
        return {
            "id": guild.id, "name": guild.name, "owner_id": guild.owner_id, "icon": None,
            "splash": None, "discovery_splash": None, "banner": None, "description": None,
            "afk_channel_id": None, "afk_timeout": 300, "verification_level": 0,
            "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0,
            "nsfw_level": 0, "premium_tier": 0, "premium_subscription_count": 0,
            "preferred_locale": "en-US", "features": [], "emojis": [], "stickers": [],
            "roles": list(guild.roles.values()), "channels": channels, "threads": threads,
            "members": [self._member_payload(guild, uid) for uid in guild.members],
            "member_count": len(guild.members), "large": False, "unavailable": False,
            "joined_at": guild.members[self.bot_id].joined_at, "presences": [], "voice_states": [],
            "stage_instances": [], "guild_scheduled_events": [], "system_channel_id": None,
            "system_channel_flags": 0, "rules_channel_id": None, "public_updates_channel_id": None,
            "safety_alerts_channel_id": None, "application_id": None, "vanity_url_code": None,
            "premium_progress_bar_enabled": False, "widget_enabled": False, "max_members": 500000,
            "incidents_data": None,
        }

    def _message_payload(self, msg: FakeMessage, *, nested: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": msg.id, "channel_id": msg.channel_id, "author": msg.author,
            "content": msg.content, "timestamp": msg.timestamp,
            "edited_timestamp": msg.edited_timestamp, "tts": False,
            "mention_everyone": msg.pings.everyone,
            "mentions": [self.users[u] for u in msg.mentions if u in self.users],
            "mention_roles": sorted(msg.pings.roles), "attachments": msg.attachments,
            "embeds": msg.embeds, "components": msg.components, "pinned": False,
            "type": msg.type, "flags": msg.flags,
        }
        if msg.nonce is not None:
            data["nonce"] = msg.nonce
        if msg.guild_id is not None:
            data["guild_id"] = msg.guild_id
            guild = self.guilds[msg.guild_id]
            if msg.webhook_id is None and msg.author_id in guild.members:
                data["member"] = self._member_payload(guild, msg.author_id, with_user=False)
        if msg.webhook_id is not None:
            data["webhook_id"] = msg.webhook_id
            data["application_id"] = self.application_id
        if msg.interaction_id is not None:
            inter = self.interactions[msg.interaction_id]
            data["interaction_metadata"] = {
                "id": inter.id, "type": inter.type, "user": self.users[inter.user_id],
                "authorizing_integration_owners": {}, "name": inter.name,
            }
        if msg.reference_id is not None:
            ref = self.messages.get(msg.reference_id)
            data["message_reference"] = {"type": 0, "message_id": msg.reference_id,
                                         "channel_id": ref.channel_id if ref else msg.channel_id,
                                         "guild_id": msg.guild_id}
            if not nested:
                data["referenced_message"] = (self._message_payload(ref, nested=True)
                                              if ref is not None and not ref.deleted else None)
        return data

    def _store_file(self, channel_id: str, filename: str, data: bytes,
                    content_type: str | None = None) -> dict[str, Any]:
        aid = p.snowflake()
        self.files[aid] = data
        url = f"{self.base_url}/attachments/{channel_id}/{aid}/{filename}"
        if content_type is None:
            content_type = "text/plain; charset=utf-8" if filename.endswith((".txt", ".md")) else None
        return p.attachment_payload(aid, filename, len(data), url, content_type)

    def _store_message(self, msg: FakeMessage) -> None:
        self.messages[msg.id] = msg
        channel = self.channels[msg.channel_id]
        channel["last_message_id"] = msg.id
        if channel["type"] in (p.PUBLIC_THREAD, p.PRIVATE_THREAD):
            channel["message_count"] += 1
            channel["total_message_sent"] += 1
        self._notify()

    # ----------------------------------------------------------------- internals: gateway

    def _shard_of(self, guild_id: str | None, count: int) -> int:
        return 0 if guild_id is None else (int(guild_id) >> 22) % count

    def _emit(self, event: str, data: dict[str, Any], guild_id: str | None,
              *, transform: Callable[[_Session, dict[str, Any]], dict[str, Any] | None] | None = None) -> None:
        for session in self._sessions.values():
            if self._shard_of(guild_id, session.shard[1]) != session.shard[0]:
                continue
            payload = transform(session, data) if transform else data
            if payload is None:
                continue
            session.seq += 1
            frame = {"op": 0, "t": event, "s": session.seq, "d": payload}
            session.log.append((session.seq, frame))
            if session.conn is not None:
                session.conn.send(frame)

    def _emit_guild_event(self, guild_id: str, event: str, build: Callable[[], dict[str, Any]]) -> None:
        if self._sessions:
            self._emit(event, build(), guild_id)

    def _emit_message(self, event: str, msg: FakeMessage) -> None:
        if msg.ephemeral or (msg.from_bot and msg.author_id == self.bot_id and not self.echo_bot_messages):
            return
        payload = self._message_payload(msg)

        def blank_without_intent(session: _Session, data: dict[str, Any]) -> dict[str, Any]:
            # Without the message content intent Discord blanks content except in DMs, the
            # bot's own messages, and messages that mention the bot.
            if (session.intents & MESSAGE_CONTENT_INTENT or msg.guild_id is None
                    or msg.author_id == self.bot_id or self.bot_id in msg.mentions):
                return data
            return {**data, "content": "", "embeds": [], "attachments": [], "components": []}

        self._emit(event, payload, msg.guild_id, transform=blank_without_intent)

    async def _handle_gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        requested = request.query.get("compress")
        compression = None if self.compression == "none" else requested
        if compression == "zstd-stream":
            try:
                import zstandard  # noqa: F401
            except ImportError:
                compression = None
        conn = _Connection(ws, compression)
        self._connections.add(conn)
        conn.writer = asyncio.create_task(conn.write_loop())
        conn.send({"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": self.heartbeat_interval_ms}})
        self.heartbeats.append(Heartbeat(id(conn), time.monotonic(), hello=True))
        try:
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                self.gateway_log.append(frame)
                await self._on_gateway_frame(conn, frame)
        finally:
            self._connections.discard(conn)
            if conn.session is not None and conn.session.conn is conn:
                conn.session.conn = None
            conn.queue.put_nowait(None)
            with contextlib.suppress(Exception):
                await conn.writer
            self._notify()
        return ws

    async def _on_gateway_frame(self, conn: _Connection, frame: dict[str, Any]) -> None:
        op, d = frame.get("op"), frame.get("d")
        if op == 1:
            self.heartbeats.append(Heartbeat(id(conn), time.monotonic()))
            conn.send({"op": 11, "s": None, "t": None, "d": None})
        elif op == 2:
            await self._identify(conn, d)
        elif op == 6:
            await self._resume(conn, d)
        elif op == 8:
            self._send_member_chunk(conn, d)

    async def _identify(self, conn: _Connection, d: dict[str, Any]) -> None:
        self.identifies.append(d)
        if d.get("token") != self.token:
            conn.queue.put_nowait(None)
            await conn.ws.close(code=4004, message=b"Authentication failed.")
            return
        intents = int(d.get("intents", 0))
        if intents & PRIVILEGED_INTENTS & ~self.privileged_intents:
            conn.queue.put_nowait(None)
            await conn.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        shard = tuple(d.get("shard") or (0, 1))
        for sid, old in list(self._sessions.items()):
            if old.shard == shard:
                del self._sessions[sid]
        session = _Session(id=secrets.token_hex(16), shard=(int(shard[0]), int(shard[1])), intents=intents)
        self._sessions[session.id] = session
        guilds = [g for g in self.guilds.values() if self._shard_of(g.id, session.shard[1]) == session.shard[0]]
        session.seq += 1
        ready = {
            "v": API_VERSION, "user": {**self.bot_user, "verified": True, "mfa_enabled": False},
            "guilds": [{"id": g.id, "unavailable": True} for g in guilds],
            "session_id": session.id, "resume_gateway_url": self.gateway_url,
            "session_type": "normal", "shard": list(session.shard),
            "application": {"id": self.application_id, "flags": 0},
            "private_channels": [], "relationships": [], "presences": [], "guild_join_requests": [],
            "geo_ordered_rtc_regions": [], "user_settings": {},
        }
        frames = [{"op": 0, "t": "READY", "s": session.seq, "d": ready}]
        for guild in guilds:
            session.seq += 1
            frames.append({"op": 0, "t": "GUILD_CREATE", "s": session.seq, "d": self._guild_payload(guild)})
        session.log.extend((f["s"], f) for f in frames)
        for frame in frames:
            conn.send(frame)
        session.conn = conn
        conn.session = session
        self._notify()

    async def _resume(self, conn: _Connection, d: dict[str, Any]) -> None:
        session = self._sessions.get(d.get("session_id", ""))
        if session is None or d.get("token") != self.token:
            conn.send({"op": 9, "s": None, "t": None, "d": False})
            return
        missed = [frame for seq, frame in session.log if seq > int(d.get("seq") or 0)]
        session.conn = conn
        conn.session = session
        for frame in missed:
            conn.send(frame)
        session.seq += 1
        resumed = {"op": 0, "t": "RESUMED", "s": session.seq, "d": {}}
        session.log.append((session.seq, resumed))
        conn.send(resumed)
        self._notify()

    def _send_member_chunk(self, conn: _Connection, d: dict[str, Any]) -> None:
        guild = self.guilds.get(str(d.get("guild_id")))
        if guild is None or conn.session is None:
            return
        session = conn.session
        session.seq += 1
        frame = {"op": 0, "t": "GUILD_MEMBERS_CHUNK", "s": session.seq, "d": {
            "guild_id": guild.id, "members": [self._member_payload(guild, u) for u in guild.members],
            "chunk_index": 0, "chunk_count": 1, "nonce": d.get("nonce"), "not_found": []}}
        session.log.append((session.seq, frame))
        conn.send(frame)

    # ----------------------------------------------------------------- internals: interactions

    def _find_command(self, name: str, guild_id: str | None) -> dict[str, Any]:
        for scope in ([guild_id] if guild_id else []) + [None]:
            for command in self.commands.get(scope, []):
                if command["name"] == name:
                    return command
        raise KeyError(f"command /{name} was never synced (guild {guild_id} or global)")

    @staticmethod
    def _sub_def(defs: list[dict[str, Any]], name: str, kind: int, parent: str) -> dict[str, Any]:
        for d in defs:
            if d["name"] == name and d["type"] == kind:
                return d
        raise KeyError(f"/{parent} has no {'subcommand' if kind == 1 else 'group'} {name!r}")

    def _option_payload(self, defs: list[dict[str, Any]], key: str, value: Any, guild_id: str | None,
                        resolved: dict[str, dict[str, Any]]) -> dict[str, Any]:
        spec = next((d for d in defs if d["name"] == key), None)
        if spec is None:
            raise KeyError(f"command has no option {key!r}; it has {[d['name'] for d in defs]}")
        kind = spec["type"]
        if kind == 6:
            uid = str(value)
            resolved.setdefault("users", {})[uid] = self.users[uid]
            if guild_id and uid in self.guilds[guild_id].members:
                resolved.setdefault("members", {})[uid] = self._member_payload(
                    self.guilds[guild_id], uid, with_user=False, permissions=True)
        elif kind == 7:
            resolved.setdefault("channels", {})[str(value)] = {
                **self.channels[str(value)], "permissions": str(p.ALL_PERMISSIONS)}
        elif kind == 8:
            resolved.setdefault("roles", {})[str(value)] = self.guilds[guild_id or ""].roles[str(value)]
        elif kind == 11:
            filename, data = value
            att = self._store_file("options", filename, data)
            resolved.setdefault("attachments", {})[att["id"]] = att
            value = att["id"]
        if kind in (6, 7, 8):
            value = str(value)
        return {"name": key, "type": kind, "value": value}

    async def _dispatch_interaction(self, itype: int, channel_id: str, user_id: str,
                                    data: dict[str, Any], *, name: str,
                                    source: FakeMessage | None = None) -> FakeInteraction:
        channel = self.channels[channel_id]
        guild_id = channel.get("guild_id")
        iid, token = p.snowflake(), secrets.token_urlsafe(24)
        payload: dict[str, Any] = {
            "id": iid, "application_id": self.application_id, "type": itype, "data": data,
            "channel_id": channel_id, "token": token, "version": 1, "locale": "en-US",
            "entitlements": [], "attachment_size_limit": 10 * 1024 * 1024,
        }
        if guild_id is not None:
            guild = self.guilds[guild_id]
            payload.update(
                guild_id=guild_id, guild_locale="en-US", context=0,
                guild={"id": guild_id, "locale": "en-US", "features": []},
                member=self._member_payload(guild, user_id, permissions=True),
                app_permissions=str(self.permissions_of(guild_id, self.bot_id)),
                authorizing_integration_owners={"0": guild_id},
                channel={k: v for k, v in channel.items()},
            )
        else:
            payload.update(user=self.users[user_id], context=1, channel=channel,
                           app_permissions=str(p.DEFAULT_EVERYONE_PERMISSIONS),
                           authorizing_integration_owners={"0": "0"})
        if source is not None:
            payload["message"] = self._message_payload(source)
        inter = FakeInteraction(id=iid, token=token, type=itype, channel_id=channel_id,
                                guild_id=guild_id, user_id=user_id, name=name, payload=payload,
                                dispatched_at=time.monotonic(),
                                source_message_id=source.id if source is not None else None)
        self.interactions[iid] = inter
        if not any(s.conn is not None for s in self._sessions.values()):
            raise RuntimeError("no client is connected to the fake gateway")
        self._emit("INTERACTION_CREATE", payload, guild_id)
        await asyncio.sleep(0)
        return inter

    def _record(self, inter: FakeInteraction, kind: str, body: Any, status: int, **extra: Any) -> None:
        inter.events.append(InteractionEvent(kind=kind, at=time.monotonic() - inter.dispatched_at,
                                             json=body, status=status, **extra))
        self._notify()

    # ----------------------------------------------------------------- internals: REST

    def _build_routes(self) -> list[tuple[str, re.Pattern[str], Callable[..., Any], bool]]:
        table = [
            ("GET", r"/users/@me", self._get_me, True),
            ("GET", r"/users/(?P<user_id>\d+)", self._get_user, True),
            ("POST", r"/users/@me/channels", self._create_dm, True),
            ("GET", r"/oauth2/applications/@me", self._get_app, True),
            ("GET", r"/applications/@me", self._get_app, True),
            ("GET", r"/gateway", self._get_gateway, False),
            ("GET", r"/gateway/bot", self._get_gateway_bot, True),
            ("GET", r"/guilds/(?P<guild_id>\d+)", self._get_guild, True),
            ("GET", r"/guilds/(?P<guild_id>\d+)/channels", self._get_guild_channels, True),
            ("GET", r"/guilds/(?P<guild_id>\d+)/members/(?P<user_id>\d+)", self._get_member, True),
            ("GET", r"/channels/(?P<channel_id>\d+)", self._get_channel, True),
            ("GET", r"/channels/(?P<channel_id>\d+)/messages", self._get_messages, True),
            ("POST", r"/channels/(?P<channel_id>\d+)/messages", self._post_message, True),
            ("GET", r"/channels/(?P<channel_id>\d+)/messages/(?P<message_id>\d+)", self._get_message, True),
            ("PATCH", r"/channels/(?P<channel_id>\d+)/messages/(?P<message_id>\d+)", self._patch_message, True),
            ("DELETE", r"/channels/(?P<channel_id>\d+)/messages/(?P<message_id>\d+)", self._delete_message, True),
            ("POST", r"/channels/(?P<channel_id>\d+)/typing", self._typing, True),
            ("POST", r"/channels/(?P<channel_id>\d+)/messages/(?P<message_id>\d+)/threads",
             self._thread_from_message, True),
            ("POST", r"/channels/(?P<channel_id>\d+)/threads", self._thread_without_message, True),
            ("PUT", r"/applications/(?P<app_id>\d+)/commands", self._put_commands, True),
            ("GET", r"/applications/(?P<app_id>\d+)/commands", self._get_commands, True),
            ("PUT", r"/applications/(?P<app_id>\d+)/guilds/(?P<guild_id>\d+)/commands", self._put_commands, True),
            ("GET", r"/applications/(?P<app_id>\d+)/guilds/(?P<guild_id>\d+)/commands", self._get_commands, True),
            ("POST", r"/interactions/(?P<iid>\d+)/(?P<token>[^/]+)/callback", self._callback, False),
            ("GET", r"/webhooks/(?P<app_id>\d+)/(?P<token>[^/]+)/messages/(?P<mid>@original|\d+)",
             self._webhook_get, False),
            ("PATCH", r"/webhooks/(?P<app_id>\d+)/(?P<token>[^/]+)/messages/(?P<mid>@original|\d+)",
             self._webhook_edit, False),
            ("DELETE", r"/webhooks/(?P<app_id>\d+)/(?P<token>[^/]+)/messages/(?P<mid>@original|\d+)",
             self._webhook_delete, False),
            ("POST", r"/webhooks/(?P<app_id>\d+)/(?P<token>[^/]+)", self._followup, False),
        ]
        return [(m, re.compile(rx + r"/?"), h, auth) for m, rx, h, auth in table]

    async def _read_body(self, request: web.Request) -> tuple[Any, list[tuple[str, str, bytes, str]]]:
        if request.content_type.startswith("multipart/"):
            body: Any = None
            files: list[tuple[str, str, bytes, str]] = []
            reader = await request.multipart()
            async for part in reader:
                if part.name == "payload_json":
                    body = json.loads(await part.text())
                elif part.filename is not None:
                    files.append((part.name or "", part.filename, bytes(await part.read()),
                                  part.headers.get("Content-Type", "application/octet-stream")))
            return body, files
        raw = await request.read()
        if not raw:
            return None, []
        try:
            return json.loads(raw), []
        except ValueError:
            return raw.decode(errors="replace"), []

    async def _handle_api(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body, files = await self._read_body(request)
        record = RecordedRequest(method=request.method, path=path, query=dict(request.query),
                                 json=body, files=[(f[1], f[2]) for f in files], at=time.monotonic())
        self.requests.append(record)
        response = await self._route(request, _Request(request.method, path, dict(request.query), body, files),
                                     record)
        record.status = response.status
        self._notify()
        return response

    async def _route(self, request: web.Request, req: _Request, record: RecordedRequest) -> web.Response:
        for inj in self._injections:
            if inj.remaining > 0 and inj.method == req.method and fnmatch.fnmatchcase(req.path, inj.pattern):
                inj.remaining -= 1
                return _json(inj.status, inj.body, inj.headers)
        limit_headers: dict[str, str] = {}
        if self.rate_limits is not None:
            status, body, limit_headers = self.rate_limits.check(req.method, req.path, req.json)
            if status:
                return _json(status, body, limit_headers)
        response = await self._dispatch_route(request, req, record)
        response.headers.update(limit_headers)
        return response

    async def _dispatch_route(self, request: web.Request, req: _Request, record: RecordedRequest) -> web.Response:
        for method, rx, handler, needs_auth in self._routes:
            match = rx.fullmatch(req.path)
            if match is None or method != req.method:
                continue
            if needs_auth and request.headers.get("Authorization") != f"Bot {self.token}":
                return _error(401, 0, "401: Unauthorized")
            try:
                return await handler(req, **match.groupdict())
            except KeyError as exc:
                log.warning("fake discord: unknown object in %s %s: %s", req.method, req.path, exc)
                return _error(404, 10003, f"Unknown object: {exc}")
        record.unknown = True
        return _error(404, 0, "404: Not Found")

    # ---- users, app, gateway, guilds

    async def _get_me(self, req: _Request) -> web.Response:
        return _json(200, {**self.bot_user, "verified": True, "mfa_enabled": False, "locale": "en-US"})

    async def _get_user(self, req: _Request, user_id: str) -> web.Response:
        return _json(200, self.users[user_id])

    async def _create_dm(self, req: _Request) -> web.Response:
        cid = self.add_dm_channel(str(req.json["recipient_id"]))
        return _json(200, self.channels[cid])

    async def _get_app(self, req: _Request) -> web.Response:
        return _json(200, {
            "id": self.application_id, "name": self.bot_user["username"], "description": "",
            "icon": None, "bot_public": True, "bot_require_code_grant": False,
            "owner": next(iter(self.users.values())), "verify_key": "0" * 64, "flags": 0,
            "team": None, "summary": "", "bot": self.bot_user, "redirect_uris": [],
            "interactions_endpoint_url": None,
        })

    async def _get_gateway(self, req: _Request) -> web.Response:
        return _json(200, {"url": self.gateway_url})

    async def _get_gateway_bot(self, req: _Request) -> web.Response:
        return _json(200, {"url": self.gateway_url, "shards": 1, "session_start_limit": {
            "total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}})

    async def _get_guild(self, req: _Request, guild_id: str) -> web.Response:
        guild = self._guild_payload(self.guilds[guild_id])
        for key in ("channels", "threads", "members", "presences", "voice_states"):
            guild.pop(key)
        return _json(200, guild)

    async def _get_guild_channels(self, req: _Request, guild_id: str) -> web.Response:
        return _json(200, [self.channels[c] for c in self.guilds[guild_id].channel_ids])

    async def _get_member(self, req: _Request, guild_id: str, user_id: str) -> web.Response:
        guild = self.guilds[guild_id]
        if user_id not in guild.members:
            return _error(404, 10007, "Unknown Member")
        return _json(200, self._member_payload(guild, user_id))

    # ---- channels and messages

    async def _get_channel(self, req: _Request, channel_id: str) -> web.Response:
        if channel_id not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        return _json(200, self.channels[channel_id])

    async def _get_messages(self, req: _Request, channel_id: str) -> web.Response:
        if channel_id not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        msgs = [m for m in self.messages_in(channel_id) if not m.ephemeral]
        if "before" in req.query:
            msgs = [m for m in msgs if int(m.id) < int(req.query["before"])]
        if "after" in req.query:
            msgs = [m for m in msgs if int(m.id) > int(req.query["after"])]
        limit = int(req.query.get("limit", 50))
        newest_first = list(reversed(msgs))[:limit]
        return _json(200, [self._message_payload(m) for m in newest_first])

    def _channel_message(self, channel_id: str, message_id: str) -> FakeMessage | None:
        """A live message of the channel as its channel routes see it (ephemeral ones are only
        reachable through their interaction's webhook)."""
        msg = self.messages.get(message_id)
        if msg is None or msg.channel_id != channel_id or msg.deleted or msg.ephemeral:
            return None
        return msg

    async def _get_message(self, req: _Request, channel_id: str, message_id: str) -> web.Response:
        if (msg := self._channel_message(channel_id, message_id)) is None:
            return _error(404, 10008, "Unknown Message")
        return _json(200, self._message_payload(msg))

    def _validate_message(self, body: dict[str, Any], files: list[Any], *,
                          editing: bool = False) -> web.Response | None:
        content = body.get("content") or ""
        if len(content) > self.max_content_length:
            return _invalid_form("content", "BASE_TYPE_MAX_LENGTH",
                                 f"Must be {self.max_content_length} or fewer in length.")
        am = body.get("allowed_mentions")
        if am and "users" in (am.get("parse") or []) and am.get("users"):
            return _invalid_form("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                                 'parse:["users"] and users: [ids...] are mutually exclusive.')
        if not editing and not (content or body.get("embeds") or files or body.get("components")
                                or body.get("sticker_ids") or body.get("poll")):
            return _error(400, 50006, "Cannot send an empty message")
        return None

    def _bot_message(self, channel_id: str, body: dict[str, Any], files: list[tuple[str, str, bytes, str]],
                     *, msg_type: int = 0, flags: int = 0, interaction: FakeInteraction | None = None) -> FakeMessage:
        ref = (body.get("message_reference") or {}).get("message_id")
        msg = FakeMessage(id=p.snowflake(), channel_id=channel_id, guild_id=self.channels[channel_id].get("guild_id"),
                          author=self.bot_user, content="", created_at=time.monotonic(),
                          timestamp=p.iso_now(), pings=p.Pings(), flags=flags,
                          type=19 if ref and msg_type == 0 else msg_type,
                          reference_id=str(ref) if ref else None,
                          webhook_id=self.application_id if interaction is not None else None,
                          interaction_id=interaction.id if interaction is not None else None)
        self._apply_body(msg, body, files, initial=True)
        msg.first_content = msg.content
        self._store_message(msg)
        return msg

    def _apply_body(self, msg: FakeMessage, body: dict[str, Any], files: list[tuple[str, str, bytes, str]],
                    *, initial: bool) -> None:
        """Set a message's content, components, attachments from a create/edit body.

        Pings are computed for every version whose request carries content, each against that
        request's own ``allowed_mentions`` (absent = Discord's default, parse everything), and
        kept as a union: a message "pinged" someone if any version of it would have.
        """
        if "content" in body:
            msg.content = body.get("content") or ""
        if "embeds" in body:
            msg.embeds = body.get("embeds") or []
        if "components" in body:
            msg.components = body.get("components") or []
        if files or "attachments" in body:
            kept = {str(a.get("id")) for a in body.get("attachments") or []}
            attachments = ([a for a in msg.attachments if a["id"] in kept] if "attachments" in body
                           else list(msg.attachments))
            for _field, filename, data, content_type in files:
                attachments.append(self._store_file(msg.channel_id, filename, data, content_type))
            msg.attachments = attachments
        if body.get("flags") is not None:
            sticky = msg.flags & (p.EPHEMERAL | p.LOADING)
            msg.flags = sticky | (int(body["flags"]) & ~p.LOADING & ~p.EPHEMERAL)
        if not initial:
            msg.edits.append({"content": msg.content, "at": time.monotonic()})
            msg.edited_timestamp = p.iso_now()
        if not initial and "content" not in body:
            return
        msg.allowed_mentions = body.get("allowed_mentions")
        guild_id = msg.guild_id
        replied = self.messages.get(msg.reference_id) if msg.reference_id else None
        can_everyone = bool(guild_id and self.permissions_of(guild_id, msg.author_id) & p.MENTION_EVERYONE)
        pings = p.compute_pings(
            msg.content, msg.allowed_mentions, author_id=msg.author_id, in_guild=guild_id is not None,
            can_mention_everyone=can_everyone, mentionable_roles=self._mentionable_roles(guild_id),
            replied_user_id=replied.author_id if replied is not None else None)
        msg.pings.merge(pings)
        msg.mentions = sorted(set(msg.mentions) | pings.users)

    async def _post_message(self, req: _Request, channel_id: str) -> web.Response:
        if channel_id not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        body = req.json or {}
        if (bad := self._validate_message(body, req.files)) is not None:
            return bad
        nonce = str(body["nonce"]) if body.get("nonce") is not None else None
        if nonce is not None and len(nonce) > 25:
            return _invalid_form("nonce", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
        if nonce is not None and body.get("enforce_nonce") and self.enforce_nonces:
            for earlier in self.messages_in(channel_id):
                if (earlier.nonce == nonce and earlier.author_id == self.bot_id
                        and time.monotonic() - earlier.created_at < NONCE_WINDOW_S):
                    return _json(200, self._message_payload(earlier))
        msg = self._bot_message(channel_id, body, req.files)
        msg.nonce = nonce
        self._emit_message("MESSAGE_CREATE", msg)
        if self.on_post is not None:
            self.on_post(msg)
        return _json(200, self._message_payload(msg))

    async def _patch_message(self, req: _Request, channel_id: str, message_id: str) -> web.Response:
        if (msg := self._channel_message(channel_id, message_id)) is None:
            return _error(404, 10008, "Unknown Message")
        if msg.author_id != self.bot_id:
            return _error(403, 50005, "Cannot edit a message authored by another user")
        body = req.json or {}
        if (bad := self._validate_message(body, req.files, editing=True)) is not None:
            return bad
        self._apply_body(msg, body, req.files, initial=False)
        self._notify()
        self._emit_message("MESSAGE_UPDATE", msg)
        return _json(200, self._message_payload(msg))

    async def _delete_message(self, req: _Request, channel_id: str, message_id: str) -> web.Response:
        if (msg := self._channel_message(channel_id, message_id)) is None:
            return _error(404, 10008, "Unknown Message")
        msg.deleted = True
        self._notify()
        self._emit("MESSAGE_DELETE", {"id": msg.id, "channel_id": channel_id, "guild_id": msg.guild_id},
                   msg.guild_id)
        return _json(204)

    async def _typing(self, req: _Request, channel_id: str) -> web.Response:
        if channel_id not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        self.typing_events.append(TypingEvent(channel_id, time.monotonic()))
        self._notify()
        return _json(204)

    # ---- threads

    def _new_thread(self, thread_id: str, parent_id: str, body: dict[str, Any], kind: int) -> dict[str, Any]:
        parent = self.channels[parent_id]
        thread = p.thread_payload(thread_id, str(body.get("name") or "thread"), guild_id=parent["guild_id"],
                                  parent_id=parent_id, owner_id=self.bot_id, kind=kind,
                                  auto_archive_duration=int(body.get("auto_archive_duration") or 1440))
        thread["member"] = {"id": thread_id, "user_id": self.bot_id, "join_timestamp": p.iso_now(), "flags": 0}
        self.channels[thread_id] = thread
        self._emit("THREAD_CREATE", {**thread, "newly_created": True}, parent["guild_id"])
        self._notify()
        return thread

    async def _thread_from_message(self, req: _Request, channel_id: str, message_id: str) -> web.Response:
        parent = self.channels.get(channel_id)
        if parent is None or parent["type"] != p.GUILD_TEXT:
            return _error(400, 50024, "Cannot execute action on this channel type")
        if self._channel_message(channel_id, message_id) is None:
            return _error(404, 10008, "Unknown Message")
        if message_id in self.channels:
            return _error(400, 160004, "A thread has already been created for this message")
        # A thread started from a message shares the message's id, as on Discord.
        return _json(201, self._new_thread(message_id, channel_id, req.json or {}, p.PUBLIC_THREAD))

    async def _thread_without_message(self, req: _Request, channel_id: str) -> web.Response:
        parent = self.channels.get(channel_id)
        if parent is None or parent["type"] != p.GUILD_TEXT:
            return _error(400, 50024, "Cannot execute action on this channel type")
        body = req.json or {}
        kind = int(body.get("type") or p.PRIVATE_THREAD)
        return _json(201, self._new_thread(p.snowflake(), channel_id, body, kind))

    # ---- application commands

    async def _put_commands(self, req: _Request, app_id: str, guild_id: str | None = None) -> web.Response:
        if app_id != self.application_id:
            return _error(403, 50001, "Missing Access")
        if guild_id is not None and guild_id not in self.guilds:
            return _error(403, 50001, "Missing Access")
        previous = {c["name"]: c["id"] for c in self.commands.get(guild_id, [])}
        stored = []
        for command in req.json or []:
            stored.append({
                "type": 1, "options": [], "default_member_permissions": None, "nsfw": False,
                **command,
                "id": previous.get(command["name"]) or p.snowflake(),
                "application_id": self.application_id, "version": p.snowflake(),
                **({"guild_id": guild_id} if guild_id else {}),
            })
        self.commands[guild_id] = stored
        self.command_syncs.append(CommandSync(guild_id, stored, time.monotonic()))
        self._notify()
        return _json(200, stored)

    async def _get_commands(self, req: _Request, app_id: str, guild_id: str | None = None) -> web.Response:
        return _json(200, self.commands.get(guild_id, []))

    # ---- interactions

    def _interaction_by_token(self, token: str) -> FakeInteraction | None:
        return next((i for i in self.interactions.values() if i.token == token), None)

    def _original(self, inter: FakeInteraction) -> FakeMessage | None:
        if inter.original_message_id is None:
            return None
        msg = self.messages.get(inter.original_message_id)
        return None if msg is None or msg.deleted else msg

    def _callback_reply(self, req: _Request, inter: FakeInteraction, ctype: int,
                        msg: FakeMessage | None) -> web.Response:
        if req.query.get("with_response") not in ("1", "true", "True"):
            return _json(204)
        data: dict[str, Any] = {"interaction": {
            "id": inter.id, "type": inter.type,
            "response_message_loading": ctype == 5,
            "response_message_ephemeral": bool(msg and msg.ephemeral)}}
        resource: dict[str, Any] = {"type": ctype}
        if msg is not None:
            data["interaction"]["response_message_id"] = msg.id
            if ctype in (4, 7):
                resource["message"] = self._message_payload(msg)
        data["resource"] = resource
        return _json(200, data)

    async def _callback(self, req: _Request, iid: str, token: str) -> web.Response:
        inter = self.interactions.get(iid)
        body = req.json or {}
        ctype = int(body.get("type", 0))
        if inter is None or inter.token != token:
            return _error(404, 10062, "Unknown interaction")
        if time.monotonic() - inter.dispatched_at > self.interaction_deadline_s:
            self._record(inter, "callback", body, 404, callback_type=ctype)
            return _error(404, 10062, "Unknown interaction")
        if inter.acknowledged:
            self._record(inter, "callback", body, 400, callback_type=ctype)
            return _error(400, 40060, "Interaction has already been acknowledged.")
        data = body.get("data") or {}
        allowed = {2: (4, 5, 9), 3: (4, 5, 6, 7, 9), 4: (8,), 5: (4, 5)}.get(inter.type, ())
        if ctype not in allowed:
            self._record(inter, "callback", body, 400, callback_type=ctype)
            return _error(400, 50035, f"Invalid interaction response type {ctype} for interaction type {inter.type}")
        msg: FakeMessage | None = None
        flags = int(data.get("flags") or 0)
        if ctype == 4:
            if (bad := self._validate_message(data, req.files)) is not None:
                self._record(inter, "callback", body, bad.status, callback_type=ctype)
                return bad
            msg = self._bot_message(inter.channel_id, data, req.files, msg_type=20,
                                    flags=flags & p.EPHEMERAL, interaction=inter)
            inter.original_message_id = msg.id
            self._emit_message("MESSAGE_CREATE", msg)
        elif ctype == 5:
            msg = self._bot_message(inter.channel_id, {"content": ""}, [], msg_type=20,
                                    flags=(flags & p.EPHEMERAL) | p.LOADING, interaction=inter)
            inter.original_message_id = msg.id
            self._emit_message("MESSAGE_CREATE", msg)
        elif ctype in (6, 7):
            msg = self.messages[inter.source_message_id or ""]
            inter.original_message_id = msg.id
            if ctype == 7:
                self._apply_body(msg, data, req.files, initial=False)
                self._emit_message("MESSAGE_UPDATE", msg)
        self._record(inter, "callback", body, 200, callback_type=ctype,
                     message_id=msg.id if msg is not None else None,
                     ephemeral=bool(msg is not None and msg.ephemeral) or bool(flags & p.EPHEMERAL))
        return self._callback_reply(req, inter, ctype, msg)

    def _token_expired(self, inter: FakeInteraction) -> bool:
        return time.monotonic() - inter.dispatched_at > self.interaction_token_lifetime_s

    def _webhook_message(self, app_id: str, token: str, mid: str, action: str,
                         body: Any) -> tuple[FakeInteraction, FakeMessage, str] | web.Response:
        """The interaction and message a webhook message route names, with the kind to record
        (``original_<action>`` or ``followup_<action>``); or the 404 answer when either is unknown
        (recorded when the interaction is known)."""
        inter = self._interaction_by_token(token)
        if inter is None or app_id != self.application_id:
            return _error(404, 10015, "Unknown Webhook")
        kind = f"{'original' if mid == '@original' else 'followup'}_{action}"
        if self._token_expired(inter):
            self._record(inter, kind, body, 401)
            return _error(401, 50027, "Invalid Webhook Token")
        msg = self._original(inter) if mid == "@original" else self.messages.get(mid)
        if msg is None or (mid != "@original" and (msg.deleted or msg.interaction_id != inter.id)):
            self._record(inter, kind, body, 404)
            return _error(404, 10008, "Unknown Message")
        return inter, msg, kind

    async def _webhook_get(self, req: _Request, app_id: str, token: str, mid: str) -> web.Response:
        target = self._webhook_message(app_id, token, mid, "get", None)
        if isinstance(target, web.Response):
            return target
        inter, msg, kind = target
        self._record(inter, kind, None, 200, message_id=msg.id, ephemeral=msg.ephemeral)
        return _json(200, self._message_payload(msg))

    async def _webhook_edit(self, req: _Request, app_id: str, token: str, mid: str) -> web.Response:
        body = req.json or {}
        target = self._webhook_message(app_id, token, mid, "edit", body)
        if isinstance(target, web.Response):
            return target
        inter, msg, kind = target
        if (bad := self._validate_message(body, req.files, editing=True)) is not None:
            self._record(inter, kind, body, bad.status)
            return bad
        msg.flags &= ~p.LOADING
        self._apply_body(msg, body, req.files, initial=False)
        self._record(inter, kind, body, 200, message_id=msg.id, ephemeral=msg.ephemeral)
        self._emit_message("MESSAGE_UPDATE", msg)
        return _json(200, self._message_payload(msg))

    async def _webhook_delete(self, req: _Request, app_id: str, token: str, mid: str) -> web.Response:
        target = self._webhook_message(app_id, token, mid, "delete", None)
        if isinstance(target, web.Response):
            return target
        inter, msg, kind = target
        msg.deleted = True
        self._record(inter, kind, None, 204, message_id=msg.id, ephemeral=msg.ephemeral)
        if not msg.ephemeral:
            self._emit("MESSAGE_DELETE", {"id": msg.id, "channel_id": msg.channel_id, "guild_id": msg.guild_id},
                       msg.guild_id)
        return _json(204)

    async def _followup(self, req: _Request, app_id: str, token: str) -> web.Response:
        inter = self._interaction_by_token(token)
        if inter is None or app_id != self.application_id:
            return _error(404, 10015, "Unknown Webhook")
        body = req.json or {}
        if self._token_expired(inter):
            self._record(inter, "followup", body, 401)
            return _error(401, 50027, "Invalid Webhook Token")
        if not inter.acknowledged:
            self._record(inter, "followup", body, 404)
            return _error(404, 10015, "Unknown Webhook")
        if (bad := self._validate_message(body, req.files)) is not None:
            self._record(inter, "followup", body, bad.status)
            return bad
        original = self._original(inter)
        if original is not None and original.loading:
            # The first followup after a deferred response fills the "thinking" message.
            original.flags &= ~p.LOADING
            self._apply_body(original, body, req.files, initial=False)
            msg = original
            self._emit_message("MESSAGE_UPDATE", msg)
        else:
            msg = self._bot_message(inter.channel_id, body, req.files,
                                    flags=int(body.get("flags") or 0) & p.EPHEMERAL, interaction=inter)
            self._emit_message("MESSAGE_CREATE", msg)
        self._record(inter, "followup", body, 200, message_id=msg.id, ephemeral=msg.ephemeral)
        if req.query.get("wait") in ("1", "true", "True"):
            return _json(200, self._message_payload(msg))
        return _json(204)

    # ---- attachments (served like Discord's CDN)

    async def _handle_attachment(self, request: web.Request) -> web.Response:
        self.attachment_downloads.append(request.match_info["attachment_id"])
        data = self.files.get(request.match_info["attachment_id"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")


@pytest_asyncio.fixture
async def fake_discord() -> AsyncIterator[FakeDiscord]:
    """A started FakeDiscord with discord.py pointed at it (restored afterwards)."""
    async with FakeDiscord() as fake:
        with fake.patch_client():
            yield fake
