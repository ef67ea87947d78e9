"""Agent benchmark: parser throughput, and the loop's own overhead per step against LangChain's.

Run: `python bench/agent_bench.py [--runs N]`. Prints figures; asserts nothing about timings.

(a) parser throughput: agent.parser.parse_response over a varied corpus of model replies
    (clean, decorated, hallucinated observations, broken JSON, reasoning-only, long), in
    replies per second; the median of several passes.
(b) our loop's overhead per step: Agent.run driven by an in-process model that returns
    scripted replies instantly (zero latency), with one trivial async tool; every step is a
    model call, a parse and (but for the last) a tool call. Per-run time divided by its steps;
    median and p95 over many runs.
(c) LangChain's ReAct agent (langchain_classic create_react_agent + AgentExecutor, the
    bench extra) driven in the same process by FakeListLLM with the same replies and the same
    trivial tool (async), measured the same way; then the ratio ours / LangChain's against the
    target (ours at most one fifth of theirs).

Part of bench/: imports agent/ (and LangChain, bench-only); never imported by the product.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.events import RunEnded, Usage  # noqa: E402
from agent.llm import Completion  # noqa: E402
from agent.loop import Agent  # noqa: E402
from agent.parser import parse_response  # noqa: E402
from agent.tools.registry import ToolContext, ToolRegistry  # noqa: E402

TARGET_RATIO = 0.2
TOOL_STEPS = 4  # tool calls per run, then one final answer: 5 model calls ("steps") per run
QUESTION = "Echo the words one by one, then say you are done."
CONTEXT = ToolContext(user_id="bench", channel_id="bench", guild_id=None)

# The scripted replies both agents receive: LangChain's ReAct format, which ours reads too.
SCRIPT = [
    *(
        f"Thought: I should echo word {i}.\nAction: echo\nAction Input: word{i}"
        for i in range(TOOL_STEPS)
    ),
    "Thought: I now know the final answer\nFinal Answer: done",
]

CORPUS = [
    'Thought: I need to multiply.\nAction: calculator\nAction Input: {"expression": "6*7"}',
    "Thought: I know it.\nFinal Answer: 42",
    'Action: calculator\nAction Input: {"expression": "6*7"}\nObservation: 48\n'
    "Thought: easy\nFinal Answer: 48",
    "Sure! Here is my plan.\n\n**Thought:** look it up\n**Action:** web_search\n"
    '**Action Input:** {"query": "tallest building"}',
    "Final Answer: The step 'Action: calculator' was not needed; it is 4.",
    "Action 1: calculator\nAction Input 1:\n```json\n{'expression': '2+2',}\n```",
    "Thought: plain input\nAction: weather\nAction Input: Paris, France",
    'action: CURRENT_TIME\naction input: {timezone: "Europe/Paris"}',
    'Action: calculator\nAction Input: {"expression": "1+1"}\nAction: calculator\n'
    'Action Input: {"expression": "2+2"}\nAction: weather\nAction Input: {"city": "Oslo"}',
    "I am not sure what to do here, maybe the answer is 7?",
    "",
    "### Final Answer\nIt is sunny in Oslo today, 14 degrees.",
    'Thought: multi-line input\nAction: calculator\nAction Input: {\n  "expression":\n'
    '    "(1 + 2) * 3"\n}',
    "Thought: " + "long reasoning about the question. " * 60 + "\nFinal Answer: 9",
    'Action: calculator\nAction Input: {"expression": "2**10"',
    '```\nThought: fenced\nAction: calculator\nAction Input: {"expression": "3*3"}\n```',
]
CORPUS_WITH_REASONING = [
    ("", 'Thought: from reasoning\nAction: calculator\nAction Input: {"expression": "5*5"}'),
    ("", "Thought: the answer\nFinal Answer: 25"),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def bench_parser(passes: int = 7, rounds: int = 200) -> tuple[float, int]:
    items = [(c, None) for c in CORPUS] + CORPUS_WITH_REASONING
    for content, reasoning in items:  # warm up (and compile regexes)
        parse_response(content, reasoning)
    rates = []
    for _ in range(passes):
        started = time.perf_counter()
        for _ in range(rounds):
            for content, reasoning in items:
                parse_response(content, reasoning)
        rates.append(rounds * len(items) / (time.perf_counter() - started))
    return statistics.median(rates), len(items)


class InstantModel:
    """LLMClient-compatible: returns the scripted replies in a cycle, with no latency."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.i = 0

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        content = self.replies[self.i % len(self.replies)]
        self.i += 1
        return Completion(content=content, usage=Usage(100, 20))


def our_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    async def echo(text: str) -> str:
        """Return the text unchanged.

        Args:
            text: What to echo.
        """
        return text

    return registry


async def bench_ours(runs: int) -> list[float]:
    agent = Agent(InstantModel(SCRIPT), our_registry(), max_steps=len(SCRIPT) + 2)
    per_step: list[float] = []
    for i in range(runs + 20):
        started = time.perf_counter()
        async for event in agent.run(QUESTION, context=CONTEXT):
            if isinstance(event, RunEnded):
                end = event
        elapsed = time.perf_counter() - started
        if end.outcome != "answered" or end.steps != len(SCRIPT):
            raise RuntimeError(f"our agent did not follow the script: {end}")
        if i >= 20:  # the first runs warm up
            per_step.append(elapsed / end.steps * 1e6)
    return per_step


def langchain_executor() -> Any:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import Tool

    template = (
        "Answer the following questions as best you can. You have access to the following "
        "tools:\n\n{tools}\n\nUse the following format:\n\nQuestion: the input question you "
        "must answer\nThought: you should always think about what to do\nAction: the action "
        "to take, should be one of [{tool_names}]\nAction Input: the input to the action\n"
        "Observation: the result of the action\n... (this Thought/Action/Action "
        "Input/Observation can repeat N times)\nThought: I now know the final answer\n"
        "Final Answer: the final answer to the original input question\n\nBegin!\n\n"
        "Question: {input}\nThought:{agent_scratchpad}"
    )

    def echo_sync(text: str) -> str:
        return text

    async def echo(text: str) -> str:
        return text

    tools = [Tool(name="echo", func=echo_sync, coroutine=echo, description="Return the text unchanged.")]
    llm = FakeListLLM(responses=SCRIPT)
    agent = create_react_agent(llm, tools, PromptTemplate.from_template(template))
    return AgentExecutor(
        agent=agent, tools=tools, max_iterations=len(SCRIPT) + 2, return_intermediate_steps=True
    )


async def bench_langchain(runs: int) -> list[float]:
    executor = langchain_executor()
    per_step: list[float] = []
    for i in range(runs + 20):
        started = time.perf_counter()
        result = await executor.ainvoke({"input": QUESTION})
        elapsed = time.perf_counter() - started
        if result.get("output") != "done" or len(result["intermediate_steps"]) != TOOL_STEPS:
            raise RuntimeError(f"LangChain's agent did not follow the script: {result}")
        if i >= 20:
            per_step.append(elapsed / len(SCRIPT) * 1e6)
    return per_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="measured runs per agent")
    args = parser.parse_args()

    print(f"agent bench: Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")

    rate, n = bench_parser()
    print(f"\n(a) parser throughput: {rate:,.0f} replies/s (median of 7 passes over {n} varied replies)")

    ours = asyncio.run(bench_ours(args.runs))
    print(
        f"\n(b) our loop overhead per step ({len(SCRIPT)} steps/run, {args.runs} runs, "
        "zero-latency model, trivial tool):"
    )
    print(f"    median {statistics.median(ours):8.1f} us   p95 {percentile(ours, 0.95):8.1f} us")

    try:
        theirs = asyncio.run(bench_langchain(args.runs))
    except ImportError as exc:
        print(f"\n(c) LangChain not installed ({exc}); install the bench extra: pip install -e '.[bench]'")
        return
    print("\n(c) LangChain ReAct (create_react_agent + AgentExecutor, FakeListLLM, same replies and tool):")
    print(f"    median {statistics.median(theirs):8.1f} us   p95 {percentile(theirs, 0.95):8.1f} us")

    ratio = statistics.median(ours) / statistics.median(theirs)
    ratio_p95 = percentile(ours, 0.95) / percentile(theirs, 0.95)
    verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
    print(
        f"\n    ours / LangChain's per step: median {ratio:.3f} (1/{1 / ratio:.1f}), "
        f"p95 {ratio_p95:.3f}; target <= {TARGET_RATIO} -> {verdict} the target"
    )


if __name__ == "__main__":
    main()
