"""Chaos part 2, the agent's side: hostile model replies and a hostile MCP server (issue 22).

One `python -m bot run` process, its gateway heartbeat every HEARTBEAT_INTERVAL_MS so that a
blocked event loop shows as a late heartbeat, and an MCP server (tests/fakes/mcp_regex_server.py)
whose tool schema has the pattern ``^(a+)+$``. A person asks one question per hostile reply:

- the fake model answers each with one of `bench/data/hostile_replies.py`'s shapes at
  HOSTILE_SIZE characters (stop-word residue before a blank run, deep nesting, repeated
  keywords, broken JSON written for json_repair, lines of markers), then, whatever the bot
  does with it (a tool call, a format nudge), with a final answer;
- then it calls the MCP tool with the string that makes that pattern backtrack for ever.

Counted: questions left unanswered; the MCP call's observation not being a clean error;
tracebacks and errors our code logged; exits nobody asked for. Those are the table's row.
Measured beside it, not in the table: heartbeats later than STALL_LIMIT_S past their interval
(the loop blocked that long: the bot's own health line names stalls from 250 ms). A late
heartbeat is not a crash, and its stamp is taken by FakeDiscord on this process's loop, which
also streams the hostile replies: as in the load part (bench/chaos_load.py), this loop's own
stalls are recorded and each heartbeat is also graded with the stall around its stamp taken
off ("bot side"). On a machine whose load exceeds its cores, the process is descheduled for
hundreds of ms as well: say the load with the figure. Part of bench/: see bench/chaos.py for
the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos_load import STALL_MIN_S as HARNESS_STALL_MIN_S
from bench.chaos_load import STALL_SAMPLE_S, stamp_delay
from bench.chaos_world import REPO, World

sys.path.insert(0, str(REPO / "bench" / "data"))
from hostile_replies import HOSTILE  # noqa: E402

__all__ = ["AgentHostileReport", "grade_heartbeats", "run_hostile_agent"]

HOSTILE_SIZE = 100_000
HEARTBEAT_INTERVAL_MS = 250
STALL_LIMIT_S = 0.25
ANSWER_TIMEOUT_S = 60.0
BLOWUP = "a" * 40 + "!"     # ^(a+)+$ tries 2**40 splits of the a's before failing on the "!"
MCP_MARK = "call the spelling tool"
ASK_MARK = "hostile reply: "


@dataclass
class AgentHostileReport:
    replies: int = 0
    unanswered: list[str] = field(default_factory=list)
    stalls: int = 0                      # heartbeats later than STALL_LIMIT_S past their interval
    worst_lateness_s: float = 0.0
    stalls_bot_side: int = 0             # the same, with this loop's stall around each stamp taken off
    worst_lateness_bot_side_s: float = 0.0
    harness_stalls: list[tuple[float, float]] = field(default_factory=list)  # (due, woke) of this loop
    mcp_clean_error: bool = False
    tracebacks: int = 0
    our_errors: list[str] = field(default_factory=list)
    crashes: int = 0

    def table(self) -> dict[str, int]:
        """The issue's columns. Late heartbeats are a figure of their own (module docstring)."""
        return {"turns": self.replies + 1, "lost": len(self.unanswered), "duplicated": 0,
                "out of order": 0, "integrity": 0, "leaks": 0, "pings": 0,
                "crashes": self.crashes + self.tracebacks + len(self.our_errors) + (not self.mcp_clean_error)}


class _HostileModel:
    """Writes the hostile reply a question names; a final answer to anything after it."""

    def __init__(self, world: World, size: int) -> None:
        self.size = size
        world.model.responder = self.respond

    def respond(self, body: dict[str, Any]) -> str:
        messages = body.get("messages", [])
        last = str(messages[-1].get("content") or "") if messages else ""
        if ASK_MARK in last:
            return HOSTILE[last.split(ASK_MARK, 1)[1].strip()](self.size)
        if MCP_MARK in last:
            return f"Action: rx__spell\nAction Input: {json.dumps({'word': BLOWUP})}"
        if last.startswith("Observation:"):
            return f"Final Answer: the tool said: {last.removeprefix('Observation:')[:300]}"
        return "Final Answer: understood"


def _mcp_config(root: Path) -> Path:
    path = root / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"rx": {
        "command": sys.executable, "args": [str(REPO / "tests" / "fakes" / "mcp_regex_server.py")]}}}))
    return path


async def _watch_harness(report: AgentHostileReport) -> None:
    """Record how late this loop (the fakes', which stamps the heartbeats) wakes up."""
    while True:
        due = time.monotonic() + STALL_SAMPLE_S
        await asyncio.sleep(STALL_SAMPLE_S)
        if (woke := time.monotonic()) - due > HARNESS_STALL_MIN_S:
            report.harness_stalls.append((due, woke))


def grade_heartbeats(world: World, report: AgentHostileReport, since: float) -> None:
    """Late heartbeats after `since`, as stamped and with this loop's stalls taken off."""
    interval = world.dc.heartbeat_interval_ms / 1000
    last: dict[int, float] = {}
    for beat in world.dc.heartbeats:
        if beat.at < since:
            continue
        if beat.hello:
            last.pop(beat.conn, None)
            continue
        if beat.conn in last:
            lateness = beat.at - last[beat.conn] - interval
            report.worst_lateness_s = max(report.worst_lateness_s, lateness)
            report.stalls += lateness > STALL_LIMIT_S
            bot_side = (lateness - stamp_delay(report.harness_stalls, beat.at)
                        + stamp_delay(report.harness_stalls, last[beat.conn]))
            report.worst_lateness_bot_side_s = max(report.worst_lateness_bot_side_s, bot_side)
            report.stalls_bot_side += bot_side > STALL_LIMIT_S
        last[beat.conn] = beat.at


async def run_hostile_agent(root: Path, *, bot_tree: Path = REPO,
                            size: int = HOSTILE_SIZE) -> AgentHostileReport:
    """The run; ``size`` is the hostile replies' length (a small one gives the floor to compare)."""
    report = AgentHostileReport()
    root.mkdir(parents=True, exist_ok=True)
    env = {"MCP_CONFIG": str(_mcp_config(root)), "TOOL_TIMEOUT_S": "10"}
    async with World(root, channels=1, people=1, extra_env=env, bot_tree=bot_tree) as world:
        dc = world.dc
        dc.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS
        (channel,) = world.channel_ids
        (person,) = world.members[channel]
        _HostileModel(world, size)
        await world.bot.start(dc)
        started = dc.heartbeats[-1].at if dc.heartbeats else 0.0

        async def ask(text: str, label: str) -> str | None:
            question = await dc.user_says(channel, person, text, mention_bot=True)
            try:
                answer = await dc.wait_for(lambda: next(iter(world.answers_to(question)), None),
                                           timeout=ANSWER_TIMEOUT_S)
            except TimeoutError:
                report.unanswered.append(label)
                return None
            return answer.content

        watching = asyncio.create_task(_watch_harness(report))
        try:
            for shape in HOSTILE:
                await ask(f"{ASK_MARK}{shape}", shape)
                report.replies += 1
            said = await ask(f"please {MCP_MARK}", "MCP tool with a backtracking pattern")
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        report.mcp_clean_error = said is not None and "Error" in said and "Traceback" not in said

        grade_heartbeats(world, report, started)
        await world.bot.stop()
        report.crashes = len(world.bot.crashes)
        log_text = world.bot.log_text()
        report.tracebacks = log_text.count("Traceback (most recent call last)")
        report.our_errors = [line for line in log_text.splitlines()
                             if re.match(r"\S+ (ERROR|CRITICAL) (bot|agent)\.", line)]
    return report
