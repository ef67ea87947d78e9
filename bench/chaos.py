"""Chaos bench: the real `python -m bot run` against loopback fakes, under crashes and hostile input.

    python bench/chaos.py kill --kills 32      # part 1: kill -9 at random points of turns, then
                                               #   of reminders falling due (--reminder-kills)
    python bench/chaos.py kill --bot-tree ../main   # the same against another checkout's bot
    python bench/chaos.py hostile              # part 2: fuzzed payloads, injection, forged ids
    python bench/chaos.py faults               # part 3: model faults, gateway drops, disk full,
                                               #   the Chroma server down 30 s
    python bench/chaos.py load                 # part 4: 200 channels x 3 people, slow model, 429s
    python bench/chaos.py load --cpu-burners 4 # the same on a busy machine (4 spinning processes)
    python bench/chaos.py all

Every part prints what it did and the table the issue asks for: turns, lost, duplicated,
out of order, integrity, leaks, pings, crashes (all zero but the turns). The run's files (the
bot's log, its DATA_DIR) stay in --workdir when it is given, else in a temporary folder that
is removed. tests/chaos/ runs short variants of each part.

Part of bench/: figures only; nothing is asserted here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chaos_faults import run_faults  # noqa: E402
from bench.chaos_hostile import run_hostile  # noqa: E402
from bench.chaos_hostile_agent import STALL_LIMIT_S, run_hostile_agent  # noqa: E402
from bench.chaos_kill import PHASES, run_kills  # noqa: E402
from bench.chaos_reminders import REMINDER_PHASES, run_reminder_kills  # noqa: E402
from bench.chaos_load import LoadReport, run_load, summary  # noqa: E402
from bench.chaos_world import ORPHAN_TIMEOUT_S, REPO  # noqa: E402

TABLE_COLUMNS = ("turns", "lost", "duplicated", "out of order", "integrity", "leaks", "pings", "crashes")


def format_table(rows: Mapping[str, Mapping[str, int]]) -> str:
    """One line per part, the issue's columns."""
    head = f"{'part':<10}" + "".join(f"{c:>14}" for c in TABLE_COLUMNS)
    lines = [head, "-" * len(head)]
    for part, row in rows.items():
        lines.append(f"{part:<10}" + "".join(f"{row[c]:>14}" for c in TABLE_COLUMNS))
    return "\n".join(lines)


async def _kill(args: argparse.Namespace, root: Path) -> dict[str, int]:
    started = time.monotonic()
    report = await run_kills(root / "kill", args.kills, seed=args.seed, bot_tree=args.bot_tree)
    print(f"kill -9: {sum(report.kills.values())} kills in {time.monotonic() - started:.0f} s, by phase: "
          + ", ".join(f"{p} {report.kills[p]}" for p in PHASES))
    print(f"  turns stored before their kill: {report.stored_before_kill}; asked again after a "
          f"restart: {report.asked_again}; memory items undone by the start-up reconcile: "
          f"{report.undone_items}")
    print(f"  the bot's child processes at the kills (Chroma worker and its helper): {report.children}; "
          f"still running {ORPHAN_TIMEOUT_S:.0f} s after their parent's kill (orphans, counted as leaks): "
          f"{report.orphans}")
    print(f"  integrity_check failures: {report.integrity}; torn buffer rows: {report.torn}; "
          f"memory writes left unsettled: {report.unsettled}")
    return report.table()


async def _kill_reminders(args: argparse.Namespace, root: Path, *, nonces: bool = True) -> dict[str, int]:
    started = time.monotonic()
    report = await run_reminder_kills(root / f"kill-reminders-{nonces}", args.reminder_kills, count=args.reminders,
                                      seed=args.seed, bot_tree=args.bot_tree, nonces=nonces)
    print(f"kill -9 while reminders fall due{'' if nonces else ' (the fake Discord ignoring nonces)'}: "
          f"{sum(report.kills.values())} kills in "
          f"{time.monotonic() - started:.0f} s, by point: " + ", ".join(f"{p} {report.kills[p]}" for p in REMINDER_PHASES))
    print(f"  reminders set: {report.reminders} (a third scheduled questions); posted exactly once: "
          f"{report.delivered}; lost: {report.lost}; posted twice: {report.duplicated}; marked late: "
          f"{report.late}; questions answered: {report.questions}")
    print(f"  parts sent again with the same nonce after a kill: {report.resent}; "
          f"still pending at the end (leaks): {report.pending}; pinging anyone else: {report.pings}")
    return report.table()


async def _hostile(args: argparse.Namespace, root: Path) -> dict[str, int]:
    started = time.monotonic()
    report = await run_hostile(root / "hostile", bot_tree=args.bot_tree)
    print(f"hostile input: {report.cases} fuzzed payloads in {time.monotonic() - started:.0f} s; "
          f"left unanswered, all payloads no real gateway sends: {len(report.dropped)} (of which "
          f"{report.parse_drops} discord.py could not parse, dropped with a log line)")
    for name in report.dropped:
        print(f"  not answered: {name}")
    _print_problems(report.real_unanswered, [])
    print(f"  injection obeyed by the model: {report.injected_pings_written} answer(s) wrote "
          f"@everyone/role/user mentions, {report.foreign_recalls_refused} memory-tool call(s) "
          f"naming another user were refused by the tool's schema")
    print(f"  pings: {report.pings}; interactions unanswered: {report.unanswered_interactions}; "
          f"announced memory writes settled by a restart's reconcile before counting: {report.reconciled_writes}")
    print("  leaks: " + ", ".join(f"{kind} {n}" for kind, n in report.leaks_by_kind().items()))
    print(f"  alice's forget in the server, confirmed: {report.forget_said[:160]!r}")
    for note in report.limit_notes:
        print(f"  limits: {note}")
    _print_problems([], report.our_errors)
    table = report.table()
    agent = await run_hostile_agent(root / "hostile-agent", bot_tree=args.bot_tree)
    print(f"  hostile model replies: {agent.replies} at 100 KB and an MCP tool whose pattern "
          f"backtracks: unanswered {len(agent.unanswered)}; the MCP call a clean error: "
          f"{'yes' if agent.mcp_clean_error else 'NO'}; tracebacks logged {agent.tracebacks}; "
          f"exits nobody asked for {agent.crashes}")
    print(f"  heartbeats later than {STALL_LIMIT_S * 1000:.0f} ms past due (not in the table): "
          f"{agent.stalls} as stamped (worst {agent.worst_lateness_s * 1000:.0f} ms), "
          f"{agent.stalls_bot_side} with the harness loop's own stalls taken off (worst "
          f"{agent.worst_lateness_bot_side_s * 1000:.0f} ms); load average at the end "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    _print_problems(agent.unanswered, agent.our_errors)
    return {column: table[column] + agent.table()[column] for column in table}


def _print_problems(unanswered: list[str], errors: list[str]) -> None:
    for name in unanswered:
        print(f"  UNANSWERED: {name}")
    for line in errors:
        print(f"  ERROR LOGGED: {line[:300]}")


async def _faults(args: argparse.Namespace, root: Path) -> dict[str, int]:
    started = time.monotonic()
    report = await run_faults(root / "faults", burst=args.burst, outage_s=args.outage,
                              bot_tree=args.bot_tree)
    print(f"faults: {report.questions} questions in {time.monotonic() - started:.0f} s; model faults "
          f"served: " + ", ".join(f"{k} {v}" for k, v in sorted(report.faults_served.items())))
    print(f"  answered {report.answered}; one sentence instead {sum(report.sentences.values())}; "
          f"slowest reply {report.slowest_s:.1f} s (TURN_TIMEOUT_S 15 s); late {report.late}; "
          f"neither answer nor sentence {report.dishonest}")
    for sentence, count in sorted(report.sentences.items()):
        print(f"    {count} x {sentence!r}")
    print(f"  gateway dropped mid-turn {report.gateway_drops} times, resumed {report.resumes} times")
    print(f"  disk full: {report.disk_full_stored} turns stored whole, {report.disk_full_refused} "
          f"refused with a sentence, {report.disk_full_log_lines} log line(s) naming the full disk")
    if report.outage_questions:
        settled = ("never" if report.deferred_settled_s is None else f"{report.deferred_settled_s:.0f} s after")
        print(f"  Chroma server down {report.outage_s:.0f} s: {report.outage_questions} questions, "
              f"{report.outage_without_memory} answered with the without-memory notice, "
              f"{report.outage_from_read_memory} from memory read before; deferred writes all landed "
              f"{settled} its return; facts said meanwhile recalled afterwards: "
              f"{report.outage_facts_recalled} of {report.outage_facts}; memory items not matching "
              f"their turns: {report.memory_leaks}")
    return report.table()


async def _load(args: argparse.Namespace, root: Path) -> dict[str, int]:
    async with cpu_burners(args.cpu_burners):
        report = await _run_load(args, root)
    print(f"load: {args.channels} channels x 3 people, {args.rounds} rounds, {report.turns} turns answered "
          f"in {report.seconds:.0f} s, model latency {args.latency_low:g}-{args.latency_high:g} s, "
          f"MAX_CONCURRENT_TURNS {args.concurrency}, CPU burners beside the run: {args.cpu_burners}")
    for line in summary(report):
        print(line)
    print("  Discord's rules broken: " + ", ".join(f"{k} {v}" for k, v in report.discord_violations().items()))
    return report.table()


@contextlib.asynccontextmanager
async def cpu_burners(count: int) -> AsyncIterator[None]:
    """`count` processes spinning on a core each (not niced) for the block: a busy machine."""
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", "while True: pass") for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            await proc.wait()


async def _run_load(args: argparse.Namespace, root: Path) -> LoadReport:
    return await run_load(root / "load", channels=args.channels, rounds=args.rounds,
                          latency_s=(args.latency_low, args.latency_high),
                          concurrency=args.concurrency, seed=args.seed, bot_tree=args.bot_tree,
                          bot_env=dict(kv.split("=", 1) for kv in args.bot_env),
                          tracemalloc_dir=args.tracemalloc, memstats=args.memstats)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/chaos.py", description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("kill", "hostile", "faults", "load", "all"))
    parser.add_argument("--burst", type=int, default=3, help="model faults in a row, per kind")
    parser.add_argument("--kills", type=int, default=32)
    parser.add_argument("--reminder-kills", type=int, default=12, help="kill: kills while reminders fall due (0: none)")
    parser.add_argument("--reminders", type=int, default=24, help="kill: reminders set before those kills")
    parser.add_argument("--nonce-baseline", action="store_true",
                        help="kill: the reminder rounds again with the fake Discord ignoring nonces")
    parser.add_argument("--outage", type=float, default=30.0, help="faults: Chroma server down, seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--channels", type=int, default=200, help="load: channels (3 people each)")
    parser.add_argument("--rounds", type=int, default=2, help="load: rounds of everyone asking at once")
    parser.add_argument("--latency-low", type=float, default=1.0, help="load: model latency, seconds")
    parser.add_argument("--latency-high", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=64, help="load: MAX_CONCURRENT_TURNS")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--bot-tree", type=Path, default=REPO,
                        help="run the bot of another checkout (a baseline), checked the same way")
    parser.add_argument("--bot-env", action="append", default=[], metavar="NAME=VALUE",
                        help="load: a variable for the bot (PYTHONASYNCIODEBUG=1 logs slow callbacks)")
    parser.add_argument("--cpu-burners", type=int, default=0, metavar="N",
                        help="load: N processes spinning beside the run (a busy machine)")
    parser.add_argument("--tracemalloc", type=Path, default=None, metavar="FOLDER",
                        help="load: trace the bot's allocations, a snapshot per round in FOLDER")
    parser.add_argument("--memstats", type=Path, default=None, metavar="FILE",
                        help="load: each process of the bot's tree appends its heap and object counts "
                             "to FILE after every round")
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        root = args.workdir or Path(tmp)
        if args.part in ("kill", "all"):
            rows["kill -9"] = await _kill(args, root)
            if args.reminder_kills:
                rows["reminders"] = await _kill_reminders(args, root)
            if args.reminder_kills and args.nonce_baseline:
                rows["no nonce"] = await _kill_reminders(args, root, nonces=False)
        if args.part in ("hostile", "all"):
            rows["hostile"] = await _hostile(args, root)
        if args.part in ("faults", "all"):
            rows["faults"] = await _faults(args, root)
        if args.part in ("load", "all"):
            rows["load"] = await _load(args, root)
    print()
    print(format_table(rows))
    return 0


async def main_until_terminated() -> int:
    """`main()`, with SIGTERM or SIGHUP cancelling it, so that the running part's World kills
    its bot on the way out (by default either signal ended this process at once and left the
    bot and its Chroma worker running); exit code 128 + the signal's number then. Only the
    first signal cancels: a second one must not cut that clean-up short."""
    task = asyncio.current_task()
    assert task is not None  # asyncio.run's main task
    loop = asyncio.get_running_loop()
    received: list[signal.Signals] = []

    def terminate(signum: signal.Signals) -> None:
        if not received:
            received.append(signum)
            task.cancel()

    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, terminate, signum)
    try:
        return await main()
    except asyncio.CancelledError:
        if not received:
            raise
        print(f"bench/chaos.py: {received[0].name}: stopped, with any bot it ran", file=sys.stderr)
        return 128 + received[0].value


if __name__ == "__main__":
    sys.exit(asyncio.run(main_until_terminated()))
