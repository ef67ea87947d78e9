"""Chaos part 3: faults around the running bot; every person gets an answer or one sentence.

- Model endpoint faults in bursts (FlakyModel): for each kind (HTTP 500, a request that never
  answers, JSON cut in half, "choices": []) a burst of faults is queued and questions are asked
  in several channels at once. Each must get exactly one reply, the answer or one of the
  sentences of bot.errors, within TURN_TIMEOUT_S (plus delivery); LLM_TIMEOUT_S and
  LLM_MAX_RETRIES are set low so that the retries of the openai client run too.
- The gateway drops while a turn waits for the model: the client reconnects and RESUMEs, and
  the answer, sent over REST, arrives exactly once.
- The Chroma server (the bot in server mode, CHROMA_HOST) stops for `outage_s` and comes back.
  Meanwhile people who never asked before (their memory not yet read) get the answer with the
  one-line notice that it was made without memory, and people who asked before are answered
  from the memory already read; every turn is stored, its memory write deferred. After the
  server returns the deferred writes land (none left in the write log), each person's fact
  said during the outage is recalled in a new question, and the memory holds exactly each
  answered turn's items.
- The disk of the SQLite file fills up: DATA_DIR is a tmpfs with a size limit (mounting needs
  root), filled to the last page once the bot runs; questions then get an answer stored whole
  or a sentence with a clear log line, and after space is freed the bot answers again; the
  file passes integrity_check throughout.

Part of bench/: see bench/chaos.py for the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.chaos_world import REPO, World, read_disk, read_memory
from bot.errors import sentence_for, with_memory_notice
from tests.fakes.chroma_server import ChromaServer
from tests.fakes.discord_server import FakeMessage
from tests.fakes.flaky_model import FAULT_KINDS

__all__ = ["FaultReport", "run_faults"]

TURN_TIMEOUT_S = 15.0
DELIVERY_SLACK_S = 5.0
FAULT_ENV = {"LLM_TIMEOUT_S": "2", "LLM_MAX_RETRIES": "1", "TURN_TIMEOUT_S": f"{TURN_TIMEOUT_S:g}"}
# what a person may read instead of the answer when the model or a store fails
SENTENCES = frozenset(sentence_for(kind) for kind in (
    "unreachable", "rate_limited", "timeout", "turn_timeout", "server_error", "bad_request",
    "bad_response", "no_answer", "step_limit", "memory_unavailable", "internal"))
TMPFS_SIZE = "48m"


@dataclass
class FaultReport:
    questions: int = 0
    answered: int = 0
    sentences: dict[str, int] = field(default_factory=dict)   # sentence -> times shown
    lost: int = 0                # no reply at all
    duplicated: int = 0          # more than one reply
    dishonest: int = 0           # a reply that is neither the answer nor a known sentence
    late: int = 0                # a reply after TURN_TIMEOUT_S + slack
    slowest_s: float = 0.0
    faults_served: dict[str, int] = field(default_factory=dict)
    gateway_drops: int = 0
    resumes: int = 0
    disk_full_refused: int = 0
    disk_full_stored: int = 0
    disk_full_log_lines: int = 0
    outage_s: float = 0.0
    outage_questions: int = 0
    outage_without_memory: int = 0   # answered with the notice
    outage_from_read_memory: int = 0  # answered from memory read before the outage
    deferred_settled_s: float | None = None  # from the server's return to an empty write log
    outage_facts_recalled: int = 0
    outage_facts: int = 0
    memory_leaks: int = 0
    integrity: int = 0
    torn: int = 0
    crashes: int = 0

    def table(self) -> dict[str, int]:
        return {"turns": self.questions, "lost": self.lost + self.dishonest + self.late,
                "duplicated": self.duplicated, "out of order": 0,
                "integrity": self.integrity + self.torn,
                "leaks": self.memory_leaks + self.outage_facts - self.outage_facts_recalled, "pings": 0,
                "crashes": self.crashes}


async def _replies(world: World, asked: list[tuple[FakeMessage, float]], report: FaultReport,
                   answer_of: str) -> None:
    """Wait for one reply to each question, then grade them."""
    with contextlib.suppress(TimeoutError):
        await world.dc.wait_for(lambda: all(world.answers_to(q) for q, _ in asked),
                                timeout=TURN_TIMEOUT_S + DELIVERY_SLACK_S + 10)
    await asyncio.sleep(0.5)  # a second reply would be here by now
    for question, sent_at in asked:
        report.questions += 1
        replies = world.answers_to(question)
        if not replies:
            report.lost += 1
            continue
        report.duplicated += len(replies) > 1
        reply = replies[0]
        took = reply.created_at - sent_at
        report.slowest_s = max(report.slowest_s, took)
        report.late += took > TURN_TIMEOUT_S + DELIVERY_SLACK_S
        if reply.content == answer_of:
            report.answered += 1
        elif reply.content in SENTENCES:
            report.sentences[reply.content] = report.sentences.get(reply.content, 0) + 1
        else:
            report.dishonest += 1


async def _ask_all(world: World, text: str) -> list[tuple[FakeMessage, float]]:
    asked = []
    for channel in world.channel_ids:
        person = world.members[channel][0]
        asked.append((await world.dc.user_says(channel, person, text, mention_bot=True), time.monotonic()))
    return asked


async def _model_faults(world: World, report: FaultReport, burst: int) -> None:
    world.model.default_content = "Final Answer: fine"
    for kind in FAULT_KINDS:
        world.model.fail_next(*[kind] * burst)
        await _replies(world, await _ask_all(world, f"a question during {kind} faults"), report, "fine")
    report.faults_served = dict(world.model.faults_served)


async def _gateway_drops(world: World, report: FaultReport, drops: int) -> None:
    world.model.latency = (1.5, 1.5)
    for n in range(drops):
        arrived = asyncio.Event()

        async def note(body: dict) -> None:
            arrived.set()

        world.model.before_chat = note
        channel = world.channel_ids[n % len(world.channel_ids)]
        question = await world.dc.user_says(channel, world.members[channel][0], f"drop {n}", mention_bot=True)
        await asyncio.wait_for(arrived.wait(), TURN_TIMEOUT_S)
        resumes = sum(1 for f in world.dc.gateway_log if f.get("op") == 6)
        await world.dc.drop_gateway()
        report.gateway_drops += 1
        await _replies(world, [(question, time.monotonic())], report, "fine")
        await world.dc.wait_for(lambda r=resumes: sum(1 for f in world.dc.gateway_log if f.get("op") == 6) > r,
                                timeout=TURN_TIMEOUT_S)
        report.resumes += 1
    world.model.before_chat = None
    world.model.latency = (0.0, 0.0)


@contextlib.contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(folder: Path) -> Path:
    """Write a file until the file system refuses one more page; returns it."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as out:
        for chunk in (1 << 20, 1 << 12):
            block = b"\0" * chunk
            with contextlib.suppress(OSError):
                while True:
                    out.write(block)
    return filler


async def _disk_full(root: Path, report: FaultReport, questions: int, bot_tree: Path) -> None:
    with _tmpfs(root / "data", TMPFS_SIZE):
        async with World(root, channels=2, people=1, extra_env=FAULT_ENV, bot_tree=bot_tree) as world:
            world.model.default_content = "Final Answer: fine"
            await world.bot.start(world.dc)
            await _replies(world, await _ask_all(world, "before the disk fills"), report, "fine")
            filler = _fill(world.data_dir)
            answered, refused = report.answered, sum(report.sentences.values())
            for n in range(questions):
                await _replies(world, await _ask_all(world, f"while the disk is full {n}"), report, "fine")
            report.disk_full_stored = report.answered - answered
            report.disk_full_refused = sum(report.sentences.values()) - refused
            filler.unlink()
            await _replies(world, await _ask_all(world, "after space was freed"), report, "fine")
            await world.bot.stop()
            report.crashes += len(world.bot.crashes)
            report.disk_full_log_lines = world.bot.log_text().count("disk is full")
            disk = read_disk(world.data_dir)
            report.integrity += disk.integrity != "ok"
            report.torn += disk.torn_turns


def _unsettled(data_dir: Path) -> int:
    """Memory writes still in the log, read beside the running bot (WAL lets a reader in)."""
    conn = sqlite3.connect(f"file:{data_dir / 'bot.sqlite3'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM memory_writes").fetchone()[0]
    finally:
        conn.close()


async def _one_reply(world: World, question: FakeMessage, timeout_s: float) -> FakeMessage | None:
    with contextlib.suppress(TimeoutError):
        return (await world.dc.wait_for(lambda: world.answers_to(question), timeout=timeout_s))[0]
    return None


async def _chroma_outage(root: Path, report: FaultReport, outage_s: float, bot_tree: Path) -> None:
    server = ChromaServer(root / "chroma-server")
    await asyncio.to_thread(server.start)
    try:
        env = {**FAULT_ENV, "CHROMA_HOST": server.host, "CHROMA_PORT": str(server.port)}
        async with World(root, channels=2, people=8, extra_env=env, bot_tree=bot_tree) as world:
            world.model.default_content = "Final Answer: fine"
            await world.bot.start(world.dc)
            regulars = [world.members[c][0] for c in world.channel_ids]
            await _replies(world, await _ask_all(world, "before the outage"), report, "fine")
            await asyncio.to_thread(server.stop)
            down = time.monotonic()
            asked: list[tuple[FakeMessage, str]] = []   # (question, who)
            fresh = {c: list(world.members[c][1:]) for c in world.channel_ids}  # never asked yet
            while time.monotonic() - down < outage_s:
                for channel in world.channel_ids:
                    person = fresh[channel].pop(0) if fresh[channel] else None
                    who = person or world.members[channel][0]
                    text = f"my code word is w{who}" if person else "a question while memory is down"
                    asked.append((await world.dc.user_says(channel, who, text, mention_bot=True), who))
                await asyncio.sleep(2.0)
            report.outage_s = time.monotonic() - down
            await asyncio.to_thread(server.start)  # same port, same folder
            back = time.monotonic()
            for question, who in asked:
                report.questions += 1
                report.outage_questions += 1
                replies = world.answers_to(question) or ([r] if (r := await _one_reply(world, question, 30)) else [])
                report.lost += not replies
                report.duplicated += len(replies) > 1
                if not replies:
                    continue
                content = replies[0].content
                if content == with_memory_notice("fine"):
                    report.outage_without_memory += 1
                elif content == "fine" and who in regulars:
                    report.outage_from_read_memory += 1
                else:
                    report.dishonest += 1
            with contextlib.suppress(TimeoutError):
                await world.dc.wait_for(lambda: _unsettled(world.data_dir) == 0, timeout=120)
            if _unsettled(world.data_dir) == 0:
                report.deferred_settled_s = time.monotonic() - back
            facts = {who for _, who in asked if who not in regulars}
            report.outage_facts = len(facts)
            for who in sorted(facts):
                channel = next(c for c in world.channel_ids if who in world.members[c])
                question = await world.dc.user_says(channel, who, "what is my code word?", mention_bot=True)
                await _one_reply(world, question, 30)
                prompts = [str(r["messages"][0].get("content")) for r in world.model.requests
                           if "what is my code word?" in str(r["messages"][-1].get("content"))]
                report.outage_facts_recalled += bool(prompts) and f"my code word is w{who}" in prompts[-1]
                report.questions += 1
            await world.bot.stop()
            report.crashes += len(world.bot.crashes)
            disk = read_disk(world.data_dir)
            memory = await read_memory(world.data_dir, server_url=server.url)
            report.memory_leaks += memory.leaks(disk) + disk.unsettled_writes
            report.integrity += disk.integrity != "ok"
            report.torn += disk.torn_turns
    finally:
        await asyncio.to_thread(server.stop)


async def run_faults(root: Path, *, burst: int = 3, drops: int = 3, disk_questions: int = 3,
                     outage_s: float = 30.0, bot_tree: Path = REPO) -> FaultReport:
    """Every fault in turn; `outage_s` 0 leaves out the Chroma server's outage (whose deferred
    writes land only after the runtime's grace, about a minute: too long for the tests)."""
    report = FaultReport()
    async with World(root / "model", channels=4, people=1, extra_env=FAULT_ENV, bot_tree=bot_tree) as world:
        await world.bot.start(world.dc)
        await _model_faults(world, report, burst)
        await _gateway_drops(world, report, drops)
        await world.bot.stop()
        report.crashes += len(world.bot.crashes)
        disk = read_disk(world.data_dir)
        report.integrity += disk.integrity != "ok"
        report.torn += disk.torn_turns
    await _disk_full(root / "disk", report, disk_questions, bot_tree)
    if outage_s > 0:
        await _chroma_outage(root / "chroma", report, outage_s, bot_tree)
    return report
