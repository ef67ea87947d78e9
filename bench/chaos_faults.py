"""Chaos part 3: faults around the running bot; every person gets an answer or one sentence.

- Model endpoint faults in bursts (FlakyModel): for each kind (HTTP 500, a request that never
  answers, JSON cut in half, "choices": []) a burst of faults is queued and questions are asked
  in several channels at once. Each must get exactly one reply, the answer or one of the
  sentences of bot.errors, within TURN_TIMEOUT_S (plus delivery); LLM_TIMEOUT_S and
  LLM_MAX_RETRIES are set low so that the retries of the openai client run too.
- The gateway drops while a turn waits for the model: the client reconnects and RESUMEs, and
  the answer, sent over REST, arrives exactly once.
- The disk of the SQLite file fills up: DATA_DIR is a tmpfs with a size limit (mounting needs
  root), filled to the last page once the bot runs; questions then get an answer stored whole
  or a sentence with a clear log line, and after space is freed the bot answers again; the
  file passes integrity_check throughout.

Part of bench/: see bench/chaos.py for the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.chaos_world import REPO, World, read_disk
from bot.errors import sentence_for
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
    integrity: int = 0
    torn: int = 0
    crashes: int = 0

    def table(self) -> dict[str, int]:
        return {"turns": self.questions, "lost": self.lost + self.dishonest + self.late,
                "duplicated": self.duplicated, "out of order": 0,
                "integrity": self.integrity + self.torn, "leaks": 0, "pings": 0,
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


async def run_faults(root: Path, *, burst: int = 3, drops: int = 3, disk_questions: int = 3,
                     bot_tree: Path = REPO) -> FaultReport:
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
    return report
