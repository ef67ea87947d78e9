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
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "data"))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--failures", action="store_true",
                        help="list the tuning cases ours reads wrongly (held-out ones stay hidden)")
    parser.add_argument("--no-langchain", action="store_true", help="score ours only")
    args = parser.parse_args()

    judges: dict[str, Callable[[Case], bool]] = {"ours": lambda case: judge_ours(case, ours(case))}
    if not args.no_langchain:
        judges["langchain"] = langchain_judge()
    print(f"{len(CASES)} cases in {len(CATEGORIES)} categories; tools passed: "
          f"{'tools' in inspect.signature(parse_response).parameters}")
    print(render(score(judges), list(judges)))
    print(f"\nour parser: {throughput():,.0f} replies/s over the {len(CASES)} cases (median of 7 passes)")
    if args.failures:
        print("\ntuning cases ours reads wrongly:")
        for case in CASES:
            if case["split"] == "tune" and not judges["ours"](case):
                reply = ours(case)
                print(f"  {case['id']}: expected {case['expect']}; got action={reply.action!r} "
                      f"input={reply.action_input!r} final={reply.final_answer!r} error={reply.error!r}")


if __name__ == "__main__":
    main()
