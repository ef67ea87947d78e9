"""Chaos part 1: kill -9 at random points of turns, restart, ask again, check what is on disk.

Each round one person asks a numbered question and the bot is killed with SIGKILL in one of
four phases of that turn, taken in turn:

    model   while the model request is held (the fake answers after 0.3-0.6 s)
    tool    while the web_search tool's request is held (the fake SearxNG answers after 0.5 s)
    memory  while the memory write's embedding request is held (0.4 s), just before Chroma's add
            (the turn keeps a fact with the remember tool, so its write embeds a new text)
    store   0-60 ms after that embedding was answered: inside Chroma's add or the SQLite commit

After each kill the SQLite file must pass `integrity_check` and hold whole turns only; the bot
is started again (its start-up reconcile undoes the memory write of a turn that was never
stored) and, unless the answer had already been delivered, the same person asks again and must
get it. At the end (after a graceful stop) every answered turn has exactly one exchange item
in the semantic memory, no item exists without its turn and no memory write is left
unsettled.

Part of bench/: see bench/chaos.py for the command line.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos_world import REPO, World, read_disk, read_memory
from tests.fakes.discord_server import FakeMessage

__all__ = ["PHASES", "KillReport", "run_kills"]

PHASES = ("model", "tool", "memory", "store")
ANSWER_TIMEOUT_S = 60.0
_NUMBER = re.compile(r"\bq(\d+)\b")


@dataclass
class KillReport:
    """What the kill rounds saw; `table()` gives the bench's row."""

    kills: Counter[str] = field(default_factory=Counter)     # by phase
    turns: int = 0              # questions answered in the end
    lost: int = 0               # questions never answered
    duplicated: int = 0         # question messages answered more than once
    out_of_order: int = 0       # channels whose stored questions are not in asking order
    integrity: int = 0          # integrity_check failures (after every kill and at the end)
    torn: int = 0               # buffer rows not in a whole (question, answer) pair
    leaks: int = 0              # memory items not matching their turn (MemoryState.leaks)
    unsettled: int = 0          # memory writes still announced at the end
    pings: int = 0
    crashes: int = 0            # exits nobody asked for
    stored_before_kill: int = 0  # kills that came after the turn's commit
    undone_items: int = 0       # memory items the start-up reconcile deleted
    asked_again: int = 0
    children: int = 0           # the bot's child processes at the kills (the Chroma worker, its helper)
    orphans: int = 0            # of those, still running ORPHAN_TIMEOUT_S after the kill

    def table(self) -> dict[str, int]:
        return {"turns": self.turns, "lost": self.lost, "duplicated": self.duplicated,
                "out of order": self.out_of_order, "integrity": self.integrity + self.torn,
                "leaks": self.leaks + self.unsettled + self.orphans, "pings": self.pings, "crashes": self.crashes}


class _Script:
    """The fake model's part: question qN is answered "answer to qN", after a web search when
    the round's phase is "tool"; and the hooks that fire the kill in the armed phase."""

    def __init__(self, world: World, rng: random.Random) -> None:
        self.world = world
        self.rng = rng
        self.armed: str | None = None
        self.number = -1
        self.final_served: set[int] = set()
        self.kill_timer: asyncio.TimerHandle | None = None
        world.model.responder = self.respond
        world.model.before_chat = self.before_chat
        world.model.before_embed = self.before_embed
        world.model.after_embed = self.after_embed
        world.model.latency = (0.3, 0.6)
        world.search.delay(0.5)

    def respond(self, body: dict[str, Any]) -> str:
        text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        numbers = [int(n) for n in _NUMBER.findall(text)]
        n = max(numbers, default=-1)
        phase = self.phase_of(n)
        if phase == "tool" and f"search for q{n}" not in text:
            return (f'Thought: I should look it up.\nAction: web_search\n'
                    f'Action Input: {{"query": "search for q{n}"}}')
        if phase in ("memory", "store") and f"fact of q{n}" not in text:
            # a fact is embedded afresh when stored (the question's vector is cached from recall)
            return (f'Thought: they want this kept.\nAction: remember\n'
                    f'Action Input: {{"fact": "fact of q{n}"}}')
        self.final_served.add(n)
        return f"Final Answer: answer to q{n}"

    def phase_of(self, n: int) -> str:
        return PHASES[n % len(PHASES)] if n >= 0 else "model"

    def _kill_in(self, low: float, high: float) -> None:
        self.armed = None
        self.kill_timer = asyncio.get_running_loop().call_later(
            self.rng.uniform(low, high), self.world.bot.kill_now)

    async def before_chat(self, body: dict[str, Any]) -> None:
        if self.armed == "model":
            self._kill_in(0.0, 0.25)

    def _is_write(self, texts: list[str]) -> bool:
        return self.number in self.final_served and any(f"fact of q{self.number}" in t for t in texts)

    async def before_embed(self, texts: list[str]) -> None:
        if self.armed == "memory" and self._is_write(texts):
            self._kill_in(0.0, 0.3)
            await asyncio.sleep(0.4)

    async def after_embed(self, texts: list[str]) -> None:
        if self.armed == "store" and self._is_write(texts):
            self._kill_in(0.0, 0.06)

    async def watch_tool(self) -> None:
        """Kill while a web_search request is held (the fake answers after 0.5 s)."""
        seen = len(self.world.search.requests)
        while self.armed == "tool":
            if len(self.world.search.requests) > seen:
                self._kill_in(0.0, 0.35)
                return
            await asyncio.sleep(0.01)


async def _ask(world: World, channel: str, person: str, n: int) -> FakeMessage:
    return await world.dc.user_says(channel, person, f"tell me about q{n}, please", mention_bot=True)


def _answered(world: World, question: FakeMessage, n: int) -> list[FakeMessage]:
    return [m for m in world.answers_to(question) if m.content == f"answer to q{n}"]


async def run_kills(root: Path, kills: int, *, seed: int = 1, bot_tree: Path = REPO) -> KillReport:
    """`kills` rounds (phases in turn) against a fresh world in `root`, the bot of `bot_tree`."""
    report = KillReport()
    rng = random.Random(seed)
    async with World(root, channels=2, people=2, bot_tree=bot_tree) as world:
        script = _Script(world, rng)
        await world.bot.start(world.dc)
        asked: dict[int, list[FakeMessage]] = {}
        for n in range(kills):
            channel = world.channel_ids[n % len(world.channel_ids)]
            person = world.members[channel][n // len(world.channel_ids) % len(world.members[channel])]
            script.number, script.armed = n, script.phase_of(n)
            watcher = asyncio.create_task(script.watch_tool())
            question = await _ask(world, channel, person, n)
            asked[n] = [question]
            assert world.bot.proc is not None
            await asyncio.wait_for(world.bot.proc.wait(), ANSWER_TIMEOUT_S)
            await watcher
            await world.bot.wait_killed()
            report.kills[script.phase_of(n)] += 1
            disk = read_disk(world.data_dir)
            report.integrity += disk.integrity != "ok"
            report.torn += disk.torn_turns
            report.stored_before_kill += f"tell me about q{n}, please" in disk.turns.get(channel, [])
            await world.bot.start(world.dc)
            if not _answered(world, question, n):
                report.asked_again += 1
                again = await _ask(world, channel, person, n)
                asked[n].append(again)
                await world.dc.wait_for(lambda: _answered(world, again, n), timeout=ANSWER_TIMEOUT_S)
        await world.bot.stop()
        disk = read_disk(world.data_dir)
        memory = await read_memory(world.data_dir)
        report.integrity += disk.integrity != "ok"
        report.torn += disk.torn_turns
        report.unsettled = disk.unsettled_writes
        report.leaks = memory.leaks(disk)
        for n, messages in asked.items():
            answers = [len(_answered(world, m, n)) for m in messages]
            report.turns += any(answers)
            report.lost += not any(answers)
            report.duplicated += sum(1 for a in answers if a > 1)
        for channel, questions in disk.turns.items():
            numbers = [int(_NUMBER.search(q).group(1)) for q in questions if _NUMBER.search(q)]
            report.out_of_order += numbers != sorted(numbers)
        report.pings = world.pings()
        report.crashes = len(world.bot.crashes)
        report.children, report.orphans = world.bot.children_seen, world.bot.orphans
        report.undone_items = sum(int(m) for m in re.findall(r"start-up: undid (\d+) memory item",
                                                              world.bot.log_text()))
    return report
