"""Parser on real replies: our parse_response and LangChain's ReAct parser on the same cases.

The cases (`bench/data/parser_cases.py`) reproduce shapes that real models wrote, collected in
`bench/data/parser_survey.md`. A case counts as read correctly when the parser returns what the
case expects: the action and its arguments, the final answer's text, or an error (no action,
no answer). LangChain's `ReActSingleInputOutputParser` gets the same content (it has no
reasoning channel and no tool list); its string input counts as right when it is the expected
`{"input": ...}` text or, as JSON, the expected arguments. Prints the score per category, per
split (`tune`, and `held`: the held-out quarter) and overall, and our parser's throughput on
the cases (median of 7 passes). `--failures` lists the tuning cases ours gets wrong (never the
held-out ones).

Then the hostile replies (`bench/data/hostile_replies.py`, issue 22) at 25, 50 and 100 KB: each
shape's parse time (median of 5), the worst per size and its growth (linear time grows 4x from
25 to 100 KB; the target is no reply over 50 ms at 100 KB), and the worst as the parsing
thread's CPU time, which the other processes of a busy machine do not inflate. `--baseline REV` times the parser
of git revision REV beside ours (one run each, given up after `--limit` seconds).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "data"))

from hostile_replies import HOSTILE, SIZES  # noqa: E402
from parser_cases import CASES, CATEGORIES  # noqa: E402

from agent.parser import parse_response  # noqa: E402

Case = dict[str, Any]


def ours(case: Case) -> Any:
    """Our parser's reply to a case; the tool list is passed where parse_response takes one."""
    if "tools" in inspect.signature(parse_response).parameters:
        return parse_response(case["content"], case["reasoning"], tools=case["tools"])
    return parse_response(case["content"], case["reasoning"])


def judge_ours(case: Case, reply: Any) -> bool:
    """True when our ParsedReply is what the case expects."""
    expect = case["expect"]
    if "action" in expect:
        return (reply.error is None and reply.final_answer is None
                and reply.action == expect["action"] and reply.action_input == expect["input"])
    if "final" in expect:
        return reply.final_answer is not None and reply.final_answer.strip() == expect["final"]
    return reply.error is not None and reply.action is None and reply.final_answer is None


def langchain_judge() -> Callable[[Case], bool]:
    """A judge that runs LangChain's ReActSingleInputOutputParser (bench extra) on a case."""
    from langchain_classic.agents.output_parsers.react_single_input import (
        ReActSingleInputOutputParser,
    )
    from langchain_core.agents import AgentAction, AgentFinish
    from langchain_core.exceptions import OutputParserException

    parser = ReActSingleInputOutputParser()

    def judge(case: Case) -> bool:
        expect = case["expect"]
        try:
            out = parser.parse(case["content"])
        except OutputParserException:
            return "error" in expect
        if isinstance(out, AgentFinish):
            return "final" in expect and str(out.return_values.get("output", "")).strip() == expect["final"]
        if not isinstance(out, AgentAction) or "action" not in expect or out.tool != expect["action"]:
            return False
        raw = out.tool_input if isinstance(out.tool_input, str) else json.dumps(out.tool_input)
        if expect["input"] == {"input": raw}:
            return True
        try:
            return json.loads(raw) == expect["input"]
        except ValueError:
            return raw.strip() in ("", "None") and expect["input"] == {}

    return judge


def score(judges: dict[str, Callable[[Case], bool]]) -> dict[tuple[str, str], dict[str, int]]:
    """{(category or "overall", split or "all"): {judge name: passes, "n": cases}}."""
    table: dict[tuple[str, str], dict[str, int]] = {}
    for case in CASES:
        results = {name: judge(case) for name, judge in judges.items()}
        for key in ((case["category"], case["split"]), (case["category"], "all"),
                    ("overall", case["split"]), ("overall", "all")):
            row = table.setdefault(key, {"n": 0, **dict.fromkeys(judges, 0)})
            row["n"] += 1
            for name, ok in results.items():
                row[name] += ok
    return table


def render(table: dict[tuple[str, str], dict[str, int]], names: list[str]) -> str:
    head = f"{'category':<22}" + "".join(
        f"{split + ' ' + name:>16}" for split in ("tune", "held", "all") for name in names
    ) + f"{'n (t/h)':>10}"
    lines = [head, "-" * len(head)]
    for category in (*CATEGORIES, "overall"):
        cells = []
        for split in ("tune", "held", "all"):
            row = table.get((category, split), {"n": 0})
            for name in names:
                cells.append(f"{100 * row.get(name, 0) / row['n']:>15.1f}%" if row["n"] else f"{'-':>16}")
        tune_n = table.get((category, "tune"), {"n": 0})["n"]
        held_n = table.get((category, "held"), {"n": 0})["n"]
        lines.append(f"{category:<22}" + "".join(cells) + f"{f'{tune_n}/{held_n}':>10}")
    return "\n".join(lines)


def throughput(passes: int = 7, rounds: int = 20) -> float:
    """Our parser's replies per second over all cases, median of ``passes``."""
    rates = []
    for _ in range(passes):
        start = time.perf_counter()
        for _ in range(rounds):
            for case in CASES:
                ours(case)
        rates.append(rounds * len(CASES) / (time.perf_counter() - start))
    return statistics.median(rates)


HOSTILE_TARGET_MS = 50.0
Parse = Callable[[str], Any]


def parser_at(rev: str) -> Parse:
    """parse_response as agent/parser.py was at git revision ``rev``."""
    source = subprocess.run(["git", "show", f"{rev}:agent/parser.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType(f"parser_at_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:agent/parser.py", "exec"), module.__dict__)
    return module.parse_response


class _TooLong(BaseException):
    """Raised by the alarm; a BaseException, so the parser's own `except Exception` lets it by."""


def _alarm(signum: int, frame: Any) -> None:
    raise _TooLong


def time_ms(parse: Parse, text: str, runs: int, limit_s: float) -> tuple[float, float]:
    """Median parse time in ms over ``runs``, as elapsed and as this thread's CPU time (which a
    busy machine's other processes do not add to); ``inf`` when one run passes ``limit_s``."""
    times, cpu = [], []
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for _ in range(runs):
            signal.setitimer(signal.ITIMER_REAL, limit_s)
            start, start_cpu = time.perf_counter(), time.thread_time()
            try:
                parse(text)
            except _TooLong:
                return float("inf"), float("inf")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            times.append((time.perf_counter() - start) * 1000)
            cpu.append((time.thread_time() - start_cpu) * 1000)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return statistics.median(times), statistics.median(cpu)


def hostile_table(parsers: dict[str, tuple[Parse, int]], limit_s: float) -> str:
    """Each shape's time per size for each parser, then the worst per size and its growth."""
    names = list(parsers)
    head = f"{'shape':<44}" + "".join(f"{f'{name} {size // 1000}K':>14}" for name in names
                                      for size in SIZES)
    lines = [head, "-" * len(head)]
    worst = {(name, size): 0.0 for name in names for size in SIZES}
    worst_cpu = dict(worst)
    for shape, build in HOSTILE.items():
        cells = []
        for name in names:
            parse, runs = parsers[name]
            for size in SIZES:
                ms, cpu_ms = time_ms(parse, build(size), runs, limit_s)
                worst[name, size] = max(worst[name, size], ms)
                worst_cpu[name, size] = max(worst_cpu[name, size], cpu_ms)
                cells.append(f"{'>' + format(limit_s, 'g') + ' s' if ms == float('inf') else f'{ms:.1f} ms':>14}")
        lines.append(f"{shape:<44}" + "".join(cells))
    lines.append("-" * len(head))
    for name in names:
        cells = [f"{size // 1000} KB {worst[name, size]:.1f} ms" if worst[name, size] != float("inf")
                 else f"{size // 1000} KB >{limit_s:g} s" for size in SIZES]
        growth = worst[name, SIZES[-1]] / worst[name, SIZES[0]] if worst[name, SIZES[0]] else float("nan")
        lines.append(f"worst, {name}: {', '.join(cells)}; growth {SIZES[0] // 1000}->"
                     f"{SIZES[-1] // 1000} KB x{growth:.1f} (linear: x{SIZES[-1] / SIZES[0]:.0f})")
    lines.append(f"worst CPU time of the parsing thread, {names[0]}: "
                 + ", ".join(f"{size // 1000} KB {worst_cpu[names[0], size]:.1f} ms" for size in SIZES))
    ours_worst, ours_cpu = worst[names[0], SIZES[-1]], worst_cpu[names[0], SIZES[-1]]
    lines.append(f"target: no reply over {HOSTILE_TARGET_MS:.0f} ms at {SIZES[-1] // 1000} KB: "
                 f"{'met' if ours_worst <= HOSTILE_TARGET_MS else 'NOT met'} ({ours_worst:.1f} ms elapsed; "
                 f"CPU {ours_cpu:.1f} ms: {'met' if ours_cpu <= HOSTILE_TARGET_MS else 'NOT met'}); "
                 f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--failures", action="store_true",
                        help="list the tuning cases ours reads wrongly (held-out ones stay hidden)")
    parser.add_argument("--no-langchain", action="store_true", help="score ours only")
    parser.add_argument("--baseline", metavar="REV",
                        help="time the parser of this git revision on the hostile replies too")
    parser.add_argument("--limit", type=float, default=10.0,
                        help="seconds after which one hostile parse is given up (default 10)")
    args = parser.parse_args()

    judges: dict[str, Callable[[Case], bool]] = {"ours": lambda case: judge_ours(case, ours(case))}
    if not args.no_langchain:
        judges["langchain"] = langchain_judge()
    print(f"{len(CASES)} cases in {len(CATEGORIES)} categories; tools passed: "
          f"{'tools' in inspect.signature(parse_response).parameters}")
    print(render(score(judges), list(judges)))
    print(f"\nour parser: {throughput():,.0f} replies/s over the {len(CASES)} cases (median of 7 passes)")
    parsers: dict[str, tuple[Parse, int]] = {"ours": (parse_response, 5)}
    if args.baseline:
        parsers[args.baseline] = (parser_at(args.baseline), 1)
    print(f"\nhostile replies ({len(HOSTILE)} shapes; ms per reply, median of "
          f"{parsers['ours'][1]} for ours{', 1 run for ' + args.baseline if args.baseline else ''}):")
    print(hostile_table(parsers, args.limit))
    if args.failures:
        print("\ntuning cases ours reads wrongly:")
        for case in CASES:
            if case["split"] == "tune" and not judges["ours"](case):
                reply = ours(case)
                print(f"  {case['id']}: expected {case['expect']}; got action={reply.action!r} "
                      f"input={reply.action_input!r} final={reply.final_answer!r} error={reply.error!r}")


if __name__ == "__main__":
    main()
