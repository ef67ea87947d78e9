"""Chaos part 2, its limits: what one member (or one MCP server) can get past the running bot.

One `python -m bot run` process, started twice with the operator's settings of each phase:

- phase 1 (ALLOWED_GUILD_IDS set, an MCP stdio server, an LLM_MODELS entry served elsewhere
  without a key of its own): the MCP server reads its parent's /proc/<pid>/environ and its
  siblings' (the bot run without capabilities, as the unit runs it: root reads any process's);
  a stranger DMs the bot; a moderator runs /trace in a channel where they moderate on an answer
  of a channel that denies them Manage Messages; a server moves a channel to the far model;
  one person asks three slow questions at once in three channels;
- phase 2 (USER_COOLDOWN_S=20, a model that sees images): a server admin sets the cooldown to
  0; a person in their cooldown sends a 40-megapixel PNG.

Counted, each a breach (bench/chaos.py adds them to the hostile part's leaks): secrets the MCP
server read, its parent's environment readable at all, DMs of a stranger answered, traces
opened past the answer's channel, keys sent to the far model's host, third turns of one
person that reached the model while two were in flight, cooldowns set below the operator's,
images downloaded during a cooldown. Part of bench/: see bench/chaos.py for the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from bench.chaos_world import REPO, World
from tests.bot.discord_fixtures import final_answers
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeInteraction, FakeMessage
from tests.fakes.mcp_http import SERVER_SCRIPT
from tests.fakes.openai_server import FakeOpenAI

__all__ = ["LimitsReport", "run_limits"]

ANSWER_TIMEOUT_S = 60.0
DM_WAIT_S = 15.0
SECRETS = {"OPENAI_API_KEY": "sk-chaos-main-5Rq8", "EMBEDDING_API_KEY": "sk-chaos-embed-2Wz4",
           "CHROMA_AUTH_TOKEN": "chroma-chaos-7Yp1"}  # with DISCORD_TOKEN, the bot's secrets here


@dataclass
class LimitsReport:
    breaches: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what each check saw, for the printout


def _bomb_png() -> bytes:
    out = io.BytesIO()
    Image.new("1", (8000, 5000), 1).save(out, format="PNG")  # 40 MP in a few KB
    return out.getvalue()


def _probe_entry(report_path: Path) -> dict[str, Any]:
    """The SDK-built test server as an MCP stdio entry."""
    return {"command": sys.executable, "args": [str(SERVER_SCRIPT)], "env": {"FAMILY_REPORT": str(report_path)}}


class _Model:
    """The fake model's part: calls the probe when asked to, holds `slow` questions on a gate."""

    def __init__(self, world: World) -> None:
        self.gate = asyncio.Event()
        self.third_before_gate = 0  # the third slow question reached the model while two were held
        world.model.responder = self.respond

    async def respond(self, body: dict[str, Any]) -> str:
        last = str((body.get("messages") or [{}])[-1].get("content") or "")
        if last.startswith("Observation:"):
            return "Final Answer: probed"
        if "probe the environment" in last:
            return "Thought: look.\nAction: probe__family_environ\nAction Input: {}"
        if "slow question" in last:
            self.third_before_gate += "slow question 2" in last and not self.gate.is_set()
            await asyncio.wait_for(self.gate.wait(), ANSWER_TIMEOUT_S)
        return "Final Answer: ok"


async def _answer(world: World, question: FakeMessage) -> FakeMessage:
    return await world.dc.wait_for(lambda: next(iter(world.answers_to(question)), None), timeout=ANSWER_TIMEOUT_S)


async def _told(world: World, inter: FakeInteraction) -> str:
    """The last text the bot gave an interaction (a deferred one: once it was followed up)."""
    def last() -> str | None:
        texts = final_answers(inter)
        deferred = inter.callback is not None and inter.callback.callback_type == 5
        done = texts and (not deferred or any(e.kind in ("followup", "original_edit") for e in inter.events))
        return texts[-1] if done else None
    return await world.dc.wait_for(last, timeout=ANSWER_TIMEOUT_S)


async def _phase_one(world: World, report: LimitsReport, far: FakeOpenAI) -> None:
    dc, model = world.dc, _Model(world)
    room, other, third = world.channel_ids
    alice, bob, carol = world.members[room]
    admin = world.members[other][0]
    mods = dc.add_role(world.guild, "mods", p.MANAGE_MESSAGES)
    mod = dc.add_member(world.guild, name="mod", roles=[mods])
    stranger_guild = dc.add_guild("Elsewhere")
    stranger = dc.add_member(stranger_guild, name="stranger")
    family = world.root / "family.json"
    mcp = world.root / "mcp.json"
    mcp.write_text(json.dumps({"mcpServers": {"probe": _probe_entry(family)}}))
    models = json.dumps([{"name": "far-model", "base_url": far.base_url}])
    world.bot.env.update(ALLOWED_GUILD_IDS=world.guild, MCP_CONFIG=str(mcp), LLM_MODELS=models,
                         ADMIN_USER_IDS=admin, **SECRETS)
    world.bot.without_capabilities = True  # as the unit runs it: root would read any environment
    await world.bot.start(dc)

    # an MCP server reads what /proc shows it of the bot and its other children
    await _answer(world, await dc.user_says(room, alice, "probe the environment", mention_bot=True))
    seen = json.loads(family.read_text()) if family.exists() else {"parent": "", "siblings": {}}
    everything = json.dumps(seen)
    report.breaches["secrets an MCP server read"] = sum(v in everything for v in (*SECRETS.values(), dc.token))
    report.breaches["bot environment readable by an MCP server"] = int(not seen["parent"].startswith("(unreadable"))
    report.notes.append(f"MCP server: parent environ {seen['parent'][:60]!r}; {len(seen['siblings'])} sibling(s) read")

    # a stranger's DM, under a guild allow list
    dm = dc.add_dm_channel(stranger)
    asked = await dc.user_says(dm, stranger, "hello?")
    await _answer(world, await dc.user_says(room, bob, "still here?", mention_bot=True))
    with contextlib.suppress(TimeoutError):  # the DM's time to be answered, were it let in
        await dc.wait_for(lambda: world.answers_to(asked), timeout=DM_WAIT_S)
    report.breaches["DMs of a stranger answered"] = len(world.answers_to(asked))

    # /trace run where the member moderates, on an answer of a channel that denies them
    answered = await _answer(world, await dc.user_says(room, alice, "my plans", mention_bot=True))
    dc.deny_in_channel(room, mods, p.MANAGE_MESSAGES)
    await asyncio.sleep(0.5)
    link = f"https://discord.com/channels/{world.guild}/{room}/{answered.id}"
    told = await _told(world, await dc.invoke_command(other, mod, "trace", {"message": link}))
    report.breaches["traces opened past the answer's channel"] = sum(t.get("id") == answered.id for t in dc.threads)
    report.notes.append(f"/trace elsewhere: {told[:70]!r}")

    # one person, three slow questions at once (three channels)
    slow = [await dc.user_says(ch, bob, f"slow question {n}", mention_bot=True)
            for n, ch in enumerate((room, other, third))]
    # the third is either told to wait at once, or (a bot without the limit) reaches the model
    await dc.wait_for(lambda: world.answers_to(slow[2]) or model.third_before_gate, timeout=ANSWER_TIMEOUT_S)
    model.gate.set()
    replies = [await _answer(world, m) for m in slow]
    report.breaches["third turns run at once"] = model.third_before_gate
    report.notes.append(f"three at once: the third answered {replies[2].content[:60]!r}")
    # a channel moved to a model served elsewhere: no key goes there
    await _told(world, await dc.invoke_command(third, admin, "settings", {"key": "model", "value": "far-model", "channel": third},
                                               subcommand="set"))
    far.default_content = "Final Answer: far"
    await _answer(world, await dc.user_says(third, carol, "which model?", mention_bot=True))
    keys = [h.get("Authorization") or h.get("authorization") for h in far.headers]
    report.breaches["keys sent to another host"] = sum(1 for k in keys if k)
    report.notes.append(f"far model: {len(far.headers)} request(s), Authorization headers {keys}")

    await world.bot.stop()


async def _phase_two(world: World, report: LimitsReport) -> None:
    dc = world.dc
    room, other, _ = world.channel_ids
    alice = world.members[room][0]
    admin = world.members[other][0]
    world.model.responder = lambda body: "Final Answer: ok"
    world.bot.env.update(USER_COOLDOWN_S="20", LLM_VISION="true")
    await world.bot.start(dc)
    told = await _told(world, await dc.invoke_command(room, admin, "settings", {"key": "cooldown", "value": "0"},
                                                      subcommand="set"))
    report.breaches["cooldowns set below the operator's"] = int(not told.startswith("Cooldown must be between"))
    await _answer(world, await dc.user_says(room, alice, "first", mention_bot=True))
    before = len(dc.attachment_downloads)
    again = await dc.user_says(room, alice, "look", mention_bot=True, attachments=[("bomb.png", _bomb_png())])
    refused = await _answer(world, again)
    report.breaches["images fetched during a cooldown"] = len(dc.attachment_downloads) - before
    report.notes.append(f"cooldown floor: {told[:70]!r}; image in the cooldown: {refused.content[:50]!r}")
    await world.bot.stop()


async def run_limits(root: Path, *, bot_tree: Path = REPO) -> LimitsReport:
    report = LimitsReport()
    async with World(root, channels=3, people=3, bot_tree=bot_tree) as world, FakeOpenAI() as far:
        await _phase_one(world, report, far)
        await _phase_two(world, report)
        crashes = len(world.bot.crashes)
    if crashes:
        report.notes.append(f"the bot exited on its own {crashes} time(s)")
    return report
