"""Chaos part 4: load. Many channels, several people in each asking at once, a slow model,
Discord's rate limits; every question answered once and in order, memory flat, heartbeats on time.

Each round, every person of every channel asks one numbered question at the same moment (two
of each channel's people mention the bot, the third uses `/ask`, whose status line and answer
are edits). The fake model answers question qN "answer to qN" after a random latency (seeded,
`latency_s`). FakeDiscord rate-limits sends and edits as Discord does (5 per 5 s per channel or
interaction, with the bucket headers) and also refuses a seeded share of them with 429 at
random; it records whether each refused request came back only after its `retry_after`, and
whether any request was made while the headers said the bucket was empty. The gateway's
heartbeat interval is short, so that a late heartbeat (the bot's event loop blocked) shows.

Graded: a question is lost without an answer, duplicated with more than one; a channel is out
of order when its answers were delivered, or its turns stored, in another order than asked.
The bot's RSS is sampled every half second (its start, after the first round as warm-up, the
end), and after each round with the RSS of its whole process tree (a Chroma worker process),
its open file descriptors and its threads (each should stay flat once warm);
queue wait is the pipeline's own `queued_ms` from the bot's log.

Heartbeats are stamped when FakeDiscord's loop reads them, and that loop is the load
generator's too: a stall there delays the stamp. So this loop's stalls are recorded (every
50 ms), each late heartbeat is also graded with the stall around its stamp taken off, and
the bot's own loop stalls are read from its health lines (bot.process.health's loop_lag_ms).
With `tracemalloc_dir`, the bot traces its allocations (bench/probe) and dumps a snapshot
after each round (SIGUSR1); with `memstats`, every process of the bot's tree appends its heap,
object and container counts to that file after each round (SIGUSR2); `bot_env` adds variables
(PYTHONASYNCIODEBUG=1: slow callbacks).

Part of bench/: see bench/chaos.py for the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import itertools
import json
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.chaos_world import REPO, World, read_disk, read_memory, tree_pids
from bench.figures import percentile
from bot.process.health import LOOP_LAG_REPORT_S
from tests.fakes.discord_ratelimit import RateLimiter
from tests.fakes.discord_server import FakeInteraction, FakeMessage

__all__ = ["STALL_MIN_S", "STALL_SAMPLE_S", "LoadReport", "run_load", "stamp_delay"]

HEARTBEAT_INTERVAL_MS = 2000
LATE_FACTOR = 1.1                 # a heartbeat more than 10% past its interval is late
_NUMBER = re.compile(r"\bq(\d+)\b")
_QUEUED = re.compile(r"^.*\bturn channel=\S+ user=\S+ .*?queued_ms=(\d+)", re.MULTILINE)
_LOOP_LAG = re.compile(r"\bhealth: .*\bloop_lag_ms=(\d+)")
STALL_SAMPLE_S = 0.05             # the fakes' loop is checked this often
STALL_MIN_S = 0.02                # a wake-up later than this is a stall of that loop


@dataclass
class LoadReport:
    """What the load rounds saw; `table()` gives the bench's row."""

    turns: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0          # channels delivered or stored in another order than asked
    integrity: int = 0
    torn: int = 0
    leaks: int = 0                 # memory items not matching their turn, writes left unsettled
    pings: int = 0
    crashes: int = 0
    seconds: float = 0.0
    rss_mb: dict[str, float] = field(default_factory=dict)   # start, after warm-up, end, peak
    rss_rounds: list[tuple[float, float]] = field(default_factory=list)  # after each round: bot, whole tree
    handles_rounds: list[tuple[int, int]] = field(default_factory=list)  # after each round: the bot's open files, threads
    items_cache_mb: list[float] = field(default_factory=list)  # with memstats: the bot's items cache, per round
    queued_ms: list[float] = field(default_factory=list)
    sent_429: int = 0
    injected_429: int = 0
    early_retries: int = 0         # a refused request back before its retry_after
    overruns: int = 0              # a request while the headers said the bucket was empty
    never_retried: int = 0
    rate_limited_requests: int = 0
    heartbeats: int = 0
    late_heartbeats: int = 0
    worst_heartbeat_gap_s: float = 0.0
    late_heartbeats_bot_side: int = 0   # still late with the fakes' stall around the stamp taken off
    worst_bot_side_gap_s: float = 0.0
    late_heartbeat_gaps: list[tuple[float, float]] = field(default_factory=list)  # (stamp, gap) of each late one
    bot_loop_lag_s: list[float] = field(default_factory=list)  # the bot's health lines, worst per minute
    interaction_too_late: int = 0  # /ask not acknowledged within Discord's 3 s
    ack_s: list[float] = field(default_factory=list)  # /ask: dispatch to the bot's first callback
    late_acks_by_round: list[int] = field(default_factory=list)
    fake_lag_s: float = 0.0        # the fakes' own event loop, worst lag (it delays what they record)
    fake_stalls: list[tuple[float, float]] = field(default_factory=list)  # (due, woke) of that loop

    def table(self) -> dict[str, int]:
        return {"turns": self.turns, "lost": self.lost, "duplicated": self.duplicated,
                "out of order": self.out_of_order, "integrity": self.integrity + self.torn,
                "leaks": self.leaks, "pings": self.pings, "crashes": self.crashes}

    def discord_violations(self) -> dict[str, int]:
        """The load part's own zeros: Discord's rules the bot must keep under load."""
        return {"retried before retry_after": self.early_retries,
                "sent while the bucket was empty": self.overruns,
                "late heartbeats": self.late_heartbeats,
                "interactions acknowledged late": self.interaction_too_late}

    def late_rounds(self) -> range:
        """The rounds (0-based) of the last half of the run, whose RSS trend says whether it is flat."""
        return range(len(self.rss_rounds) // 2, len(self.rss_rounds))

    def rss_growth_per_round(self) -> tuple[float, float] | None:
        """MB per round, the bot and its whole tree, over `late_rounds` (a least-squares slope, so
        one round's spike moves it less than a difference of two rounds); None under 3 rounds."""
        return _late_slopes(self.rss_rounds)

    def handles_growth_per_round(self) -> tuple[float, float] | None:
        """Open files and threads gained per round over the last half of the rounds, as for RSS."""
        return _late_slopes(self.handles_rounds)

    def queued_p95_ms(self) -> float:
        return percentile(self.queued_ms, 95) if self.queued_ms else 0.0


@dataclass
class _Question:
    n: int
    channel: str
    round: int
    message: FakeMessage | None = None          # a mention
    interaction: FakeInteraction | None = None  # an /ask


def _respond(body: dict[str, Any]) -> str:
    """The fake model: the question's number is in the last user message (history and memory
    hold earlier ones)."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    found = _NUMBER.findall(str(users[-1].get("content") or "")) if users else []
    return f"Final Answer: answer to q{found[-1]}" if found else "Final Answer: no number"


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _late_slopes(rows: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """Each column's least-squares slope per round over the last half of ``rows``; None under 3."""
    xs = list(range(len(rows) // 2, len(rows)))
    if len(xs) < 3:
        return None
    first, second = (statistics.linear_regression(xs, [float(rows[r][i]) for r in xs]).slope for i in (0, 1))
    return first, second


def _handles(pid: int) -> tuple[int, int]:
    """The process's open file descriptors and threads (0, 0 once it is gone)."""
    try:
        files = len(os.listdir(f"/proc/{pid}/fd"))
        threads = len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0, 0
    return files, threads


def _tree_rss_mb(pid: int) -> float:
    return sum(rss for p in tree_pids(pid) if (rss := _rss_mb(p)) is not None)


class _Deliveries:
    """When each question's answer reached Discord, from one pass over the fake's records."""

    def __init__(self, world: World) -> None:
        self.by_reference: dict[str, list[FakeMessage]] = {}
        for m in world.dc.bot_messages():
            if m.reference_id is not None:
                self.by_reference.setdefault(m.reference_id, []).append(m)

    def answers(self, q: _Question) -> list[float]:
        """Arrival times of the messages carrying q's answer (more than one: duplicated)."""
        want = f"answer to q{q.n}"
        if q.message is not None:
            return [m.created_at for m in self.by_reference.get(q.message.id, []) if m.content == want]
        assert q.interaction is not None
        inter = q.interaction
        original = [inter.dispatched_at + e.at for e in inter.events
                    if e.kind == "original_edit" and e.status < 300 and (e.json or {}).get("content") == want]
        followups = [inter.dispatched_at + e.at for e in inter.events
                     if e.kind == "followup" and e.status < 300 and (e.json or {}).get("content") == want]
        return original[:1] + followups


async def _ask_round(world: World, first: int, round_: int) -> list[_Question]:
    """Every person of every channel asks at once (no await between the dispatches)."""
    questions: list[_Question] = []
    n = first
    for channel in world.channel_ids:
        for k, person in enumerate(world.members[channel]):
            q = _Question(n, channel, round_)
            text = f"load q{n}: what do you say?"
            if k == 2:
                q.interaction = await world.dc.invoke_command(channel, person, "ask", {"question": text})
            else:
                q.message = await world.dc.user_says(channel, person, text, mention_bot=True)
            questions.append(q)
            n += 1
    return questions


async def _wait_answered(world: World, questions: list[_Question], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        seen = _Deliveries(world)
        if all(seen.answers(q) for q in questions):
            return
        await asyncio.sleep(0.5)


async def _sample(world: World, samples: list[tuple[float, float]], report: LoadReport) -> None:
    """The bot's RSS every half second, and how late this loop (the fakes') wakes up."""
    every = round(0.5 / STALL_SAMPLE_S)
    for n in itertools.count():
        if n % every == 0 and world.bot.proc is not None and (rss := _rss_mb(world.bot.proc.pid)) is not None:
            samples.append((time.monotonic(), rss))
        due = time.monotonic() + STALL_SAMPLE_S
        await asyncio.sleep(STALL_SAMPLE_S)
        woke = time.monotonic()
        report.fake_lag_s = max(report.fake_lag_s, woke - due)
        if woke - due > STALL_MIN_S:
            report.fake_stalls.append((due, woke))


def stamp_delay(stalls: list[tuple[float, float]], at: float) -> float:
    """How long a stall of the fakes' loop may have held back a stamp taken at `at`."""
    return max((min(at, woke) - due for due, woke in stalls
                if due <= at <= woke + STALL_SAMPLE_S + STALL_MIN_S), default=0.0)


async def _snapshot(world: World, folder: Path) -> None:
    """Ask the traced bot for a tracemalloc snapshot (bench/probe) and wait until it is written."""
    assert world.bot.proc is not None
    before = len(list(folder.glob("snap-*")))
    os.kill(world.bot.proc.pid, signal.SIGUSR1)
    for _ in range(600):
        if len(list(folder.glob("snap-*"))) > before:
            await asyncio.sleep(2.0)   # the dump is written in one go; let it finish
            return
        await asyncio.sleep(0.1)


async def _memstats(world: World, memstats: Path) -> None:
    """Every process of the bot's tree appends its memory figures (bench/probe) to the file; wait
    until each has (at most 10 s: a process not probed never writes)."""
    assert world.bot.proc is not None
    lines = _line_count(memstats)
    signalled = 0
    for pid in tree_pids(world.bot.proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGUSR2)
            signalled += 1
    for _ in range(100):
        await asyncio.sleep(0.1)
        if _line_count(memstats) >= lines + signalled:
            return


def _line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _items_cache_mb(memstats: Path) -> list[float]:
    """The bot's items cache (what MEMORY_CACHE_MB bounds) after each round, from its memstats lines."""
    lines = [json.loads(line) for line in memstats.read_text().splitlines()]
    return [line["containers"]["ItemsCache.nbytes"] / 2**20 for line in lines
            if "ItemsCache.nbytes" in line.get("containers", {})]   # none without the object walk


def _grade_heartbeats(world: World, report: LoadReport) -> None:
    interval = world.dc.heartbeat_interval_ms / 1000
    last: dict[int, float] = {}
    first_beat: set[int] = set()
    for beat in world.dc.heartbeats:
        if beat.hello:
            first_beat.add(beat.conn)   # discord.py beats at once on HELLO, then every interval
            continue
        if beat.conn in first_beat:
            first_beat.discard(beat.conn)
        elif beat.conn in last:
            gap = beat.at - last[beat.conn]
            report.worst_heartbeat_gap_s = max(report.worst_heartbeat_gap_s, gap)
            if gap > interval * LATE_FACTOR:
                report.late_heartbeats += 1
                report.late_heartbeat_gaps.append((beat.at, gap))
            report.heartbeats += 1
            bot_side = (gap - stamp_delay(report.fake_stalls, beat.at)
                        + stamp_delay(report.fake_stalls, last[beat.conn]))
            report.worst_bot_side_gap_s = max(report.worst_bot_side_gap_s, bot_side)
            report.late_heartbeats_bot_side += bot_side > interval * LATE_FACTOR
        last[beat.conn] = beat.at


async def _grade(world: World, questions: list[_Question], report: LoadReport) -> None:
    seen = _Deliveries(world)
    by_channel: dict[str, list[float]] = {}
    report.late_acks_by_round = [0] * (max((q.round for q in questions), default=0) + 1)
    for q in questions:
        times = seen.answers(q)
        report.turns += bool(times)
        report.lost += not times
        report.duplicated += len(times) > 1
        if times:  # a lost question is counted once, as lost, not again as out of order
            by_channel.setdefault(q.channel, []).append(times[0])
        if q.interaction is not None:
            callback = q.interaction.callback
            late = callback is None or callback.at > world.dc.interaction_deadline_s
            report.interaction_too_late += late
            report.late_acks_by_round[q.round] += late
            tried = [e.at for e in q.interaction.events if e.kind == "callback"]
            if tried:
                report.ack_s.append(tried[0])
    disk = read_disk(world.data_dir)
    report.integrity += disk.integrity != "ok"
    report.torn += disk.torn_turns
    report.leaks = (await read_memory(world.data_dir)).leaks(disk) + disk.unsettled_writes
    for channel, delivered in by_channel.items():
        stored = [int(m.group(1)) for text in disk.turns.get(channel, []) if (m := _NUMBER.search(text))]
        report.out_of_order += delivered != sorted(delivered) or stored != sorted(stored)
    limits = world.dc.rate_limits
    assert limits is not None
    report.sent_429 = len(limits.records)
    report.injected_429 = sum(r.injected for r in limits.records)
    report.early_retries = limits.early_retries
    report.overruns = limits.overruns
    report.never_retried = limits.never_retried
    report.rate_limited_requests = limits.requests
    _grade_heartbeats(world, report)
    report.pings = world.pings()
    report.crashes = len(world.bot.crashes)
    log = world.bot.log_text()
    report.queued_ms = [float(ms) for ms in _QUEUED.findall(log)]
    report.bot_loop_lag_s = [int(ms) / 1000 for ms in _LOOP_LAG.findall(log)]


async def run_load(root: Path, *, channels: int = 200, people: int = 3, rounds: int = 2,
                   latency_s: tuple[float, float] = (1.0, 5.0), concurrency: int = 64,
                   inject_429: float = 0.03, seed: int = 1, bot_tree: Path = REPO,
                   bot_env: Mapping[str, str] | None = None, tracemalloc_dir: Path | None = None,
                   memstats: Path | None = None) -> LoadReport:
    """`rounds` rounds of every person asking at once; the first round is the warm-up."""
    report = LoadReport()
    env = {"MAX_CONCURRENT_TURNS": str(concurrency), "LOG_LEVEL": "INFO", **(bot_env or {})}
    if tracemalloc_dir is not None:
        env["CHAOS_TRACEMALLOC"] = str(tracemalloc_dir)
    if memstats is not None:
        env["CHAOS_MEMSTATS"] = str(memstats)
    probe = (tracemalloc_dir is not None or memstats is not None
             or bool({"CHAOS_GC_LOG", "CHAOS_STALL_SAMPLE"} & env.keys()))
    async with World(root, channels=channels, people=people, extra_env=env, bot_tree=bot_tree,
                     probe=probe) as world:
        world.model.responder = _respond
        world.model.latency = latency_s
        world.model.reseed(seed)
        world.dc.heartbeat_interval_ms = HEARTBEAT_INTERVAL_MS
        world.dc.rate_limits = RateLimiter(inject_rate=inject_429, seed=seed)
        await world.bot.start(world.dc)
        samples: list[tuple[float, float]] = []
        sampler = asyncio.create_task(_sample(world, samples, report))
        await asyncio.sleep(1.0)
        report.rss_mb["start"] = samples[-1][1] if samples else 0.0
        assert world.bot.proc is not None
        if tracemalloc_dir is not None:
            await _snapshot(world, tracemalloc_dir)
        started = time.monotonic()
        questions: list[_Question] = []
        per_round_timeout = 60.0 + channels * people * sum(latency_s) / 2 / concurrency * 3
        for r in range(rounds):
            asked = await _ask_round(world, len(questions), r)
            questions += asked
            await _wait_answered(world, asked, per_round_timeout)
            await asyncio.sleep(1.0)  # a duplicate or a late edit would be here by now
            if r == 0:
                report.rss_mb["after warm-up"] = samples[-1][1] if samples else 0.0
            report.rss_rounds.append((_rss_mb(world.bot.proc.pid) or 0.0, _tree_rss_mb(world.bot.proc.pid)))
            report.handles_rounds.append(_handles(world.bot.proc.pid))
            if tracemalloc_dir is not None:
                await _snapshot(world, tracemalloc_dir)
            if memstats is not None:
                await _memstats(world, memstats)
        report.seconds = time.monotonic() - started
        report.rss_mb["end"] = samples[-1][1] if samples else 0.0
        report.rss_mb["peak"] = max((s for _, s in samples), default=0.0)
        sampler.cancel()
        await asyncio.wait([sampler])  # not `await sampler`: a cancel of this run must not be swallowed
        await world.bot.stop()
        await _grade(world, questions, report)
    if memstats is not None:
        report.items_cache_mb = _items_cache_mb(memstats)
    return report


def summary(report: LoadReport) -> list[str]:
    """The part's printed lines (bench/chaos.py)."""
    rss = ", ".join(f"{k} {v:.0f} MB" for k, v in report.rss_mb.items())
    rounds = "; ".join(f"{bot:.1f} / {tree:.1f}" for bot, tree in report.rss_rounds)
    growth = report.rss_growth_per_round()
    late = report.late_rounds()
    trend = ("under 5 rounds: no trend" if growth is None else
             f"bot {growth[0]:+.2f} MB, tree {growth[1]:+.2f} MB (the tree less the bot, its Chroma worker "
             f"and multiprocessing's resource tracker: {growth[1] - growth[0]:+.2f} MB) per round over rounds "
             f"{late.start + 1}-{late.stop} (least-squares slope)")
    handles = "; ".join(f"{files} / {threads}" for files, threads in report.handles_rounds)
    held = report.handles_growth_per_round()
    held_trend = ("under 5 rounds: no trend" if held is None else
                  f"{held[0]:+.2f} open files, {held[1]:+.2f} threads per round over the same rounds")
    lag = ", ".join(f"{s:.2f}" for s in report.bot_loop_lag_s) or "none"
    median = statistics.median(report.queued_ms) if report.queued_ms else 0.0
    return [
        f"  RSS: {rss}",
        f"  RSS after each round, the bot / its whole process tree (MB): {rounds}",
        f"  RSS growth over the last half of the rounds: {trend}",
        f"  the bot's open files / threads after each round: {handles}",
        f"  open files and threads over the last half of the rounds: {held_trend}",
        *(["  the bot's items cache after each round (MB, MEMORY_CACHE_MB bounds it): "
           + "; ".join(f"{mb:.1f}" for mb in report.items_cache_mb)] if report.items_cache_mb else []),
        f"  queue wait (the pipeline's queued_ms, {len(report.queued_ms)} turns): p50 {median:.0f} ms, "
        f"p95 {report.queued_p95_ms():.0f} ms",
        f"  429s sent: {report.sent_429} ({report.injected_429} at random, the rest for a full bucket) "
        f"on {report.rate_limited_requests} sends and edits; retried before retry_after: "
        f"{report.early_retries}; requests while the bucket was announced empty: {report.overruns}; "
        f"never retried: {report.never_retried}",
        f"  heartbeats: {report.heartbeats} gaps, worst {report.worst_heartbeat_gap_s:.2f} s against "
        f"{HEARTBEAT_INTERVAL_MS / 1000:.1f} s, late (over {LATE_FACTOR:.1f}x): {report.late_heartbeats}; "
        f"with the fakes' loop stall around each stamp taken off: worst {report.worst_bot_side_gap_s:.2f} s, "
        f"late {report.late_heartbeats_bot_side}",
        *(["  late heartbeats, stamped at (monotonic s, as the bot's probe lines) / gap (s): "
           + ", ".join(f"{at:.3f} / {gap:.2f}" for at, gap in report.late_heartbeat_gaps)]
          if report.late_heartbeat_gaps else []),
        f"  the bot's own event loop, worst stall per health line (s, lines name stalls of "
        f"{LOOP_LAG_REPORT_S * 1000:.0f} ms or more): {lag}",
        f"  /ask acknowledged after Discord's 3 s: {report.interaction_too_late} of {len(report.ack_s)}; "
        f"dispatch to acknowledgement p50 {statistics.median(report.ack_s) if report.ack_s else 0:.2f} s, "
        f"worst {max(report.ack_s, default=0):.2f} s; late by round: {report.late_acks_by_round}",
        f"  the fakes' own event loop (one process: Discord, model, search), worst lag: "
        f"{report.fake_lag_s:.2f} s (it delays what they record, heartbeats and acknowledgements too)",
    ]
