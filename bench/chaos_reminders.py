"""Chaos part 1b: reminders under kill -9: none lost, none posted twice, nobody else pinged.

People set reminders by mentioning the bot (the model calls the `remind` tool; every third one
is a scheduled question), due one after another a little later. While they fall due the bot is
killed with SIGKILL, at one of three points taken in turn, and started again:

    random    at a random moment (0.5-3 s after it came up)
    accepted  0-30 ms after Discord created a reminder's message: before or after the bot read
              Discord's answer, before it closed the occurrence (the resend must be absorbed by
              the message nonce)
    question  while the model request of a scheduled question is held (0-0.25 s)

A point that does not come within FALLBACK_S is replaced by a random kill. At the end (every
reminder due, none pending, then a graceful stop) each reminder must have been posted exactly
once, in its channel, pinging its person only; occurrences that fell due while the bot was down
are counted as late.

Part of bench/: see bench/chaos.py for the command line.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.chaos_world import REPO, World, read_disk
from tests.fakes.discord_server import FakeMessage

__all__ = ["REMINDER_PHASES", "ReminderKillReport", "run_reminder_kills"]

REMINDER_PHASES = ("random", "accepted", "question")
FALLBACK_S = 20.0
ANSWER_TIMEOUT_S = 60.0
DRAIN_TIMEOUT_S = 180.0
_KIND = re.compile(r"\b(set|question) r(\d+)\b")


@dataclass
class ReminderKillReport:
    """What the rounds saw; `table()` gives the bench's row (turns: reminders set)."""

    kills: Counter[str] = field(default_factory=Counter)  # by the point that fired
    reminders: int = 0
    delivered: int = 0     # posted exactly once
    lost: int = 0          # never posted
    duplicated: int = 0    # posted more than once
    late: int = 0          # posted marked "late by"
    questions: int = 0     # scheduled questions posted with their answer
    resent: int = 0        # reminder parts sent again with the same nonce (absorbed by Discord)
    pending: int = 0       # rows still pending at the end
    integrity: int = 0
    pings: int = 0         # a reminder that would ping anyone but its person, @everyone or a role
    crashes: int = 0

    def table(self) -> dict[str, int]:
        return {"turns": self.reminders, "lost": self.lost, "duplicated": self.duplicated, "out of order": 0,
                "integrity": self.integrity, "leaks": self.pending, "pings": self.pings, "crashes": self.crashes}


class _Script:
    """The model's part (setting reminder rN, answering scheduled question rN) and the kill hooks."""

    def __init__(self, world: World, rng: random.Random, count: int, gap_s: float) -> None:
        self.world = world
        self.rng = rng
        self.count = count
        self.gap_s = gap_s
        self.base: float | None = None  # when r0 falls due (epoch seconds)
        self.armed: str | None = None
        self.fired: str | None = None
        world.model.responder = self.respond
        world.model.before_chat = self.before_chat
        world.model.latency = (0.1, 0.3)
        world.dc.on_post = self.on_post

    @staticmethod
    def _last(body: dict[str, Any]) -> tuple[str, str | None, int]:
        users = [str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user"]
        for text in reversed(users):
            if found := _KIND.search(text):
                return users[-1], found.group(1), int(found.group(2))
        return users[-1] if users else "", None, -1

    def respond(self, body: dict[str, Any]) -> str:
        last, kind, n = self._last(body)
        if kind == "question":
            return f"Final Answer: answer to r{n}"
        if last.startswith("Observation:"):
            return f"Final Answer: set r{n}"
        if self.base is None:
            self.base = time.time() + 1.2 * self.count + 8.0  # after the setting turns
        due = datetime.fromtimestamp(self.base + n * self.gap_s, UTC).isoformat(timespec="seconds")
        args: dict[str, Any] = {"when": due, "message": f"reminder r{n}"}
        if n % 3 == 2:
            args = {"when": due, "message": f"question r{n}?", "ask": True}
        return f"Thought: set it.\nAction: remind\nAction Input: {json.dumps(args)}"

    def _kill_in(self, point: str, low: float, high: float) -> None:
        self.armed, self.fired = None, point
        asyncio.get_running_loop().call_later(self.rng.uniform(low, high), self.world.bot.kill_now)

    async def before_chat(self, body: dict[str, Any]) -> None:
        if self.armed == "question" and self._last(body)[1] == "question":
            self._kill_in("question", 0.0, 0.25)

    def on_post(self, message: FakeMessage) -> None:
        if self.armed == "accepted" and "⏰" in message.content:
            self._kill_in("accepted", 0.0, 0.03)


def _pending(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "bot.sqlite3") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM reminders").fetchone()[0])


async def _set_all(world: World, count: int) -> dict[int, tuple[str, str]]:
    """Each reminder set by one person in one channel, in turn; n -> (channel, person)."""
    setters: dict[int, tuple[str, str]] = {}
    for n in range(count):
        channel = world.channel_ids[n % len(world.channel_ids)]
        person = world.members[channel][n // len(world.channel_ids) % len(world.members[channel])]
        asked = await world.dc.user_says(channel, person, f"please set r{n}", mention_bot=True)
        await world.dc.wait_for(lambda: any(m.content == f"set r{n}" for m in world.answers_to(asked)),
                                timeout=ANSWER_TIMEOUT_S)
        setters[n] = (channel, person)
    return setters


async def run_reminder_kills(root: Path, kills: int, *, count: int = 18, gap_s: float = 2.0, seed: int = 1,
                             bot_tree: Path = REPO, nonces: bool = True) -> ReminderKillReport:
    """`count` reminders due `gap_s` apart, `kills` kills while they fall due (points in turn).
    ``nonces`` False: the fake Discord ignores enforce_nonce (what the nonce is worth)."""
    report = ReminderKillReport(reminders=count)
    rng = random.Random(seed)
    async with World(root, channels=2, people=2, bot_tree=bot_tree) as world:
        world.dc.enforce_nonces = nonces
        script = _Script(world, rng, count, gap_s)
        await world.bot.start(world.dc)
        setters = await _set_all(world, count)
        for k in range(kills):
            script.armed = point = REMINDER_PHASES[k % len(REMINDER_PHASES)]
            if point == "random":
                script._kill_in("random", 0.5, 3.0)
            assert world.bot.proc is not None
            try:
                await asyncio.wait_for(asyncio.shield(world.bot.proc.wait()), FALLBACK_S)
            except TimeoutError:
                script._kill_in("random", 0.0, 0.0)
            await world.bot.wait_killed()
            report.kills[script.fired or "random"] += 1
            report.integrity += read_disk(world.data_dir).integrity != "ok"
            await world.bot.start(world.dc)
        assert script.base is not None
        last_due = script.base + (count - 1) * gap_s
        await asyncio.sleep(max(0.0, last_due - time.time()))
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while _pending(world.data_dir) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        report.pending = _pending(world.data_dir)
        await world.bot.stop()
        report.integrity += read_disk(world.data_dir).integrity != "ok"
        posted = [m for m in world.dc.bot_messages() if "⏰" in m.content]
        for n, (channel, person) in setters.items():
            mine = [m for m in posted if re.search(rf"\br{n}\b", m.content)]
            report.lost += not mine
            report.duplicated += len(mine) > 1
            report.delivered += len(mine) == 1
            report.late += sum("(late by" in m.content for m in mine)
            report.questions += sum(f"answer to r{n}" in m.content for m in mine)
            report.pings += sum(1 for m in mine if m.pings.users - {person} or m.pings.everyone or m.pings.roles
                                or m.channel_id != channel)
        nonces = Counter(r.json.get("nonce") for r in world.dc.requests
                         if r.method == "POST" and r.path.endswith("/messages") and isinstance(r.json, dict)
                         and r.status == 200 and "⏰" in str(r.json.get("content")))
        report.resent = sum(n - 1 for nonce, n in nonces.items() if nonce is not None)
        report.crashes = len(world.bot.crashes)
    return report
