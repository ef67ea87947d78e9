"""Benchmark of the turn pipeline (no Discord): throughput, its own overhead, event-loop stalls.

Drives bot.turn.pipeline.TurnPipeline through a real Runtime (real agent loop and tool registry,
real SQLite file, real embedded Chroma with the offline all-MiniLM-L6-v2 embedder, in a temp
DATA_DIR) with an IN-PROCESS fake model: an LLMClient-compatible object whose `complete()`
sleeps a fixed delay (default 50 ms) and answers with one tool step (the calculator) and then a
final answer. So every turn is two model calls, one real tool call, a buffer read, a memory
search, and the persist (Chroma add + one SQLite transaction).

Workload: CONVERSATIONS conversations (default 200) over CHANNELS channels (default 50, in 5
guilds), each conversation one user asking TURNS questions (default 2), after pre-loading
MEMORIES memories (default 10,000) for those users with bulk add_many. Each channel's
conversations run one after another (a channel answers in order anyway); all channels send at
once, under MAX_CONCURRENT_TURNS (default 4, the product default; --max-concurrent to change).

Prints: bulk-load rate, turns per second, the pipeline's own overhead per turn p50/p95 (turn
wall time minus the model's fixed delays minus the time the turn waited for its channel's
earlier turns or a free slot, TurnResult.queued_ms, which is printed apart), the event loop's
worst stall (a 10 ms ticker's worst lateness), RSS. The overhead is also split into its two
store parts (TurnResult.recall_ms and store_ms); the rest is the agent loop, the tool call,
prompt building and the model sleeps' lateness.
Targets: overhead p95 <= 80 ms, worst stall <= 50 ms. Figures only; nothing is asserted.

    python bench/bot_bench.py
    python bench/bot_bench.py --memories 2000 --conversations 40   # a quick run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agent.events import Usage  # noqa: E402
from agent.llm import Completion  # noqa: E402
from bot.process.health import LoopLag  # noqa: E402
from bot.settings.config import load_settings  # noqa: E402
from bot.turn.requests import TurnRequest  # noqa: E402
from bot.process.runtime import Runtime  # noqa: E402
from memory.semantic import scope_for  # noqa: E402
from figures import percentile  # noqa: E402
from tests.fakes.chroma_server import ChromaServer  # noqa: E402  (a real `chroma run`)

TOPICS = ["Lisbon", "ramen", "bouldering", "the cello", "a beagle", "Kubernetes", "sourdough", "Kyoto",
          "chess", "pottery", "sailing", "Rust", "a parrot", "Oslo", "curry", "astronomy"]
TEMPLATES = ["I am planning a trip to {t} next month.", "I have been really into {t} lately.",
             "My friend keeps telling me about {t}.", "Remind me what I said about {t}.",
             "I finally tried {t} yesterday and loved it.", "Work has been busy, no time for {t}."]


class DelayedModel:
    """LLMClient-compatible fake: each call sleeps `delay_s`, then one calculator step, then
    a final answer (decided from whether the run already holds an observation)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    async def complete(self, messages: Sequence[dict[str, Any]], *, stop: Sequence[str] | None = None,
                       tools: Sequence[dict[str, Any]] | None = None) -> Completion:
        await asyncio.sleep(self.delay_s)
        last = messages[-1].get("content") or ""
        usage = Usage(prompt_tokens=sum(len(str(m.get("content", ""))) // 4 for m in messages),
                      completion_tokens=20)
        if last.startswith("Observation:"):
            return Completion(content="Thought: I have the result.\nFinal Answer: It comes to 42.",
                              usage=usage)
        return Completion(content='Thought: let me compute that.\nAction: calculator\n'
                                  'Action Input: {"expression": "6*7"}', usage=usage)

    async def aclose(self) -> None:
        return None


async def main(args: argparse.Namespace) -> None:
    rng = random.Random(7)
    guilds = [str(100000000000000000 + g) for g in range(5)]
    channels = [(guilds[c % len(guilds)], str(300000000000000000 + c)) for c in range(args.channels)]
    users = [str(200000000000000000 + u) for u in range(args.conversations)]
    # conversation i: user i in channel i % channels
    conv_place = {u: channels[i % len(channels)] for i, u in enumerate(users)}

    with tempfile.TemporaryDirectory(prefix="bot-bench-") as tmp, contextlib.ExitStack() as stack:
        env = {"LLM_MODEL": "bench-model", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
               "DATA_DIR": tmp, "USER_COOLDOWN_S": "0",
               "MAX_CONCURRENT_TURNS": str(args.max_concurrent),
               "LOG_LEVEL": "WARNING"}
        if args.chroma_server:
            server = stack.enter_context(ChromaServer(Path(tmp) / "chroma-server"))
            env.update(CHROMA_HOST=server.host, CHROMA_PORT=str(server.port))
            print(f"memory in a Chroma server at {server.host}:{server.port}", flush=True)
        else:
            print("memory in embedded Chroma", flush=True)
        settings = load_settings(env)
        model = DelayedModel(args.delay_ms / 1000)
        proc = psutil.Process()
        async with Runtime(settings, llm=model) as rt:
            print(f"pre-loading {args.memories} memories for {len(users)} users ...", flush=True)
            items = []
            for i in range(args.memories):
                user = users[i % len(users)]
                text = rng.choice(TEMPLATES).format(t=rng.choice(TOPICS)) + f" (note {i})"
                items.append((user, text, {"kind": "exchange", "channel_id": conv_place[user][1]},
                              scope_for(conv_place[user][0])))
            t0 = time.perf_counter()
            for start in range(0, len(items), 1000):
                await rt.user_memory.add_many(items[start:start + 1000])
            load_s = time.perf_counter() - t0
            print(f"bulk add: {args.memories} items in {load_s:.1f} s "
                  f"({args.memories / load_s:.0f} items/s); RSS {proc.memory_info().rss / 2**20:.0f} MiB",
                  flush=True)

            # one warm-up turn (first search of the model, first prompt build)
            await rt.pipeline.handle(TurnRequest(users[0], "warm", guilds[0], "1", "warm up: 1+1?"))

            overheads: list[float] = []
            queued: list[float] = []
            recall: list[float] = []
            store: list[float] = []
            outcomes: dict[str, int] = {}
            nominal_model_s = 2 * model.delay_s

            async def channel_driver(place: tuple[str, str]) -> None:
                for user in (u for u in users if conv_place[u] == place):
                    for turn in range(args.turns):
                        topic = rng.choice(TOPICS)
                        req = TurnRequest(user_id=user, display_name=f"user{user[-4:]}", guild_id=place[0],
                                          channel_id=place[1],
                                          text=f"Turn {turn}: what is 6*7, and what did I say about {topic}?")
                        t = time.perf_counter()
                        result = await rt.pipeline.handle(req)
                        wall_ms = (time.perf_counter() - t) * 1000
                        overheads.append(wall_ms - result.queued_ms - nominal_model_s * 1000)
                        queued.append(result.queued_ms)
                        recall.append(result.recall_ms)
                        store.append(result.store_ms)
                        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1

            lag = LoopLag(sample_s=0.01)  # the bot's own lateness ticker, sampling every 10 ms
            tick = asyncio.create_task(lag.run())
            t0 = time.perf_counter()
            await asyncio.gather(*(channel_driver(place) for place in channels))
            wall = time.perf_counter() - t0
            tick.cancel()
            await asyncio.gather(tick, return_exceptions=True)
            worst = lag.take_worst()

        turns = len(overheads)
        print(f"turns: {turns} ({args.conversations} conversations x {args.turns} turns over "
              f"{args.channels} channels, MAX_CONCURRENT_TURNS={settings.max_concurrent_turns}, "
              f"model delay {args.delay_ms:.0f} ms x 2 calls per turn); outcomes {outcomes}")
        print(f"throughput: {turns / wall:.1f} turns/s ({wall:.1f} s)")
        print(f"pipeline overhead per turn: p50 {percentile(overheads, 50):.1f} ms, p95 {percentile(overheads, 95):.1f} ms, "
              f"max {max(overheads):.1f} ms, mean {statistics.fmean(overheads):.1f} ms (target p95 <= 80 ms)")
        print(f"  of which reading the buffer + searching memory: p50 {percentile(recall, 50):.1f} ms, "
              f"p95 {percentile(recall, 95):.1f} ms; storing the turn (memory add + SQLite): "
              f"p50 {percentile(store, 50):.1f} ms, p95 {percentile(store, 95):.1f} ms")
        print(f"waiting for a slot or the channel (not counted above): p50 {percentile(queued, 50):.0f} ms, "
              f"p95 {percentile(queued, 95):.0f} ms")
        print(f"event loop worst stall: {worst * 1000:.1f} ms (target <= 50 ms)")
        print(f"RSS at end: {proc.memory_info().rss / 2**20:.0f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--turns", type=int, default=2, help="turns per conversation")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--max-concurrent", type=int, default=4, help="MAX_CONCURRENT_TURNS")
    parser.add_argument("--chroma-server", action="store_true",
                        help="keep memory in a `chroma run` server on loopback instead of embedded")
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(parser.parse_args()))
