"""Agent benchmark: parser throughput, and the loop's own overhead per step against LangChain's.

Run: `python bench/agent_bench.py [--runs N]`. Prints figures; asserts nothing about timings.

(a) parser throughput: agent.parser.parse_response over a varied corpus of model replies
    (clean, decorated, hallucinated observations, broken JSON, reasoning-only, long), in
    replies per second; the median of several passes.
(b) our loop's overhead per step: Agent.run driven by an in-process model that returns
    scripted replies instantly (zero latency), with one trivial async tool; every step is a
    model call, a parse and (but for the last) a tool call. Per-run time divided by its steps;
    median and p95 over many runs.
    The same again with the model streaming each reply in pieces of four characters (about a
    token each), so the per-step figure includes the answer filter and the AnswerDelta events.
(c) LangChain's ReAct agent (langchain_classic create_react_agent + AgentExecutor, the
    bench extra) driven in the same process by FakeListLLM with the same replies and the same
    trivial tool (async), measured the same way; then the ratio ours / LangChain's against the
    target (ours at most one fifth of theirs), for whole and for streamed replies.
(d) joining a streamed reply: agent.llm's chunk joiner against openai's own
    ChatCompletionStreamState, per chunk, over replies of 200 and 2,000 content chunks.

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
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.events import RunEnded, Usage  # noqa: E402
from agent.llm import Completion, Delta, _Joiner  # noqa: E402
from agent.loop import Agent  # noqa: E402
from agent.parser import parse_response  # noqa: E402
from agent.tools.registry import ToolContext, ToolRegistry  # noqa: E402
from figures import percentile  # noqa: E402

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


class InstantStreamingModel(InstantModel):
    """InstantModel that streams each reply in pieces of four characters, then the Completion."""

    async def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        stop: list[str] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> AsyncIterator[Delta | Completion]:
        completion = await self.complete(messages, stop=stop, tools=tools)
        content = completion.content
        for i in range(0, len(content), 4):
            yield Delta(content=content[i : i + 4])
        yield completion


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


async def one_of_ours(agent: Agent) -> float:
    """One scripted run of our agent: microseconds per step."""
    started = time.perf_counter()
    async for event in agent.run(QUESTION, context=CONTEXT):
        if isinstance(event, RunEnded):
            end = event
    elapsed = time.perf_counter() - started
    if end.outcome != "answered" or end.steps != len(SCRIPT):
        raise RuntimeError(f"our agent did not follow the script: {end}")
    return elapsed / end.steps * 1e6


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


async def one_of_langchain(executor: Any) -> float:
    """One scripted run of LangChain's agent: microseconds per step."""
    started = time.perf_counter()
    result = await executor.ainvoke({"input": QUESTION})
    elapsed = time.perf_counter() - started
    if result.get("output") != "done" or len(result["intermediate_steps"]) != TOOL_STEPS:
        raise RuntimeError(f"LangChain's agent did not follow the script: {result}")
    return elapsed / len(SCRIPT) * 1e6


async def bench_loops(runs: int, with_langchain: bool) -> dict[str, list[float]]:
    """Per-step times of each contender, their runs interleaved (one of each per round, each
    going first in turn), so a change in the machine's load, or the garbage one leaves for the
    next, falls on all of them alike; the first 20 rounds warm up."""
    registry = our_registry()
    contenders: dict[str, Callable[[], Awaitable[float]]] = {
        "whole": partial(one_of_ours, Agent(InstantModel(SCRIPT), registry, max_steps=len(SCRIPT) + 2)),
        "streamed": partial(
            one_of_ours, Agent(InstantStreamingModel(SCRIPT), registry, max_steps=len(SCRIPT) + 2)
        ),
    }
    if with_langchain:
        contenders["langchain"] = partial(one_of_langchain, langchain_executor())
    names = list(contenders)
    results: dict[str, list[float]] = {name: [] for name in names}
    for i in range(runs + 20):
        for name in names[i % len(names):] + names[: i % len(names)]:  # each goes first in turn
            per_step = await contenders[name]()
            if i >= 20:
                results[name].append(per_step)
    return results


def chunks(n: int) -> list[Any]:
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Any:
        return ChatCompletionChunk.model_validate({
            "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })

    return [chunk({"role": "assistant", "content": ""}), *(chunk({"content": "word "}) for _ in range(n)),
            chunk({}, "stop")]


def bench_joining(n: int, passes: int = 5) -> tuple[float, float]:
    """Median microseconds per chunk: ours, then openai's ChatCompletionStreamState."""
    from openai.lib.streaming.chat import ChatCompletionStreamState

    stream = chunks(n)

    def ours() -> str:
        joiner = _Joiner(["Observation:"])
        for c in stream:
            joiner.add(c)
        return joiner.content

    def theirs() -> str:
        state = ChatCompletionStreamState()
        for c in stream:
            state.handle_chunk(c)
        return state.get_final_completion().choices[0].message.content or ""

    assert ours() == theirs() == "word " * n
    results = []
    for fn in (ours, theirs):
        times = []
        for _ in range(passes):
            started = time.perf_counter()
            fn()
            times.append((time.perf_counter() - started) / len(stream) * 1e6)
        results.append(statistics.median(times))
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="measured runs per agent")
    args = parser.parse_args()

    print(f"agent bench: Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")

    rate, n = bench_parser()
    print(f"\n(a) parser throughput: {rate:,.0f} replies/s (median of 7 passes over {n} varied replies)")

    try:
        langchain_executor()
        with_langchain = True
    except ImportError as exc:
        print(f"\n(c) LangChain not installed ({exc}); install the bench extra: pip install -e '.[bench]'")
        with_langchain = False
    times = asyncio.run(bench_loops(args.runs, with_langchain))
    ours, streamed = times["whole"], times["streamed"]
    print(
        f"\n(b) our loop overhead per step ({len(SCRIPT)} steps/run, {args.runs} runs, "
        "zero-latency model, trivial tool; runs interleaved with (c)):"
    )
    print(f"    whole replies     median {statistics.median(ours):8.1f} us   p95 {percentile(ours, 95):8.1f} us")
    print(
        f"    streamed replies  median {statistics.median(streamed):8.1f} us   "
        f"p95 {percentile(streamed, 95):8.1f} us  (4-character pieces)"
    )
    if with_langchain:
        theirs = times["langchain"]
        print("\n(c) LangChain ReAct (create_react_agent + AgentExecutor, FakeListLLM, same replies and tool):")
        print(f"    median {statistics.median(theirs):8.1f} us   p95 {percentile(theirs, 95):8.1f} us")
        print()
        for label, mine in (("whole replies", ours), ("streamed replies", streamed)):
            ratio = statistics.median(mine) / statistics.median(theirs)
            ratio_p95 = percentile(mine, 95) / percentile(theirs, 95)
            verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
            print(
                f"    ours ({label}) / LangChain's per step: median {ratio:.3f} (1/{1 / ratio:.1f}), "
                f"p95 {ratio_p95:.3f}; target <= {TARGET_RATIO} -> {verdict} the target"
            )

    print("\n(d) joining a streamed reply, per chunk (median of 5 passes):")
    for n in (200, 2000):
        mine, openai_state = bench_joining(n)
        print(
            f"    {n:5d} chunks: ours {mine:6.1f} us   openai ChatCompletionStreamState "
            f"{openai_state:6.1f} us   ({openai_state / mine:.0f}x)"
        )


if __name__ == "__main__":
    main()
