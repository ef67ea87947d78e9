"""Bench: how long one streamed reply of many tiny chunks holds the event loop, with the
stream's yield every `agent.llm.STREAM_YIELD_EVERY` chunks and without it (issue 22).

    python bench/stream_yield_bench.py [--runs 5] [--chunks 25000]

The loopback FakeOpenAI serves the reply from a thread of its own (its own event loop, so
its writing is not counted here) as `--chunks` chunks of 4 characters (100 KB at 25,000, the
hostile replies' size). `LLMClient.stream` reads it on this loop while a ticker task sleeps
1 ms at a time; the figure is the ticker's longest wait past its due time: how long the loop
was held at once (a gateway heartbeat would have waited that long). Yield on and off
alternate, `--runs` each; medians printed with the load average (other processes' time adds
to every figure on a busy machine; the ratio is what to read).

Part of bench/: figures only; nothing is asserted here.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import agent.llm as llm  # noqa: E402
from agent.llm import LLMClient  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

NO_YIELD = 10**12  # a chunk count no reply reaches: the loop is never given a turn


def serve(replies: int, chunks: int, ready: threading.Event, stop: threading.Event,
          url: list[str]) -> None:
    """Run the fake in this thread, with `replies` streamed replies queued."""
    async def main() -> None:
        async with FakeOpenAI() as fake:
            for _ in range(replies):
                fake.reply(chunks=["abcd"] * chunks)
            url.append(fake.base_url)
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)
    asyncio.run(main())


async def one_run(client: LLMClient) -> tuple[float, float]:
    """(longest loop hold in ms, the whole stream's time in s)."""
    worst = 0.0

    async def ticker() -> None:
        nonlocal worst
        while True:
            due = time.perf_counter() + 0.001
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - due)

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    async for _ in client.stream([{"role": "user", "content": "hostile reply, please"}]):
        pass
    took = time.perf_counter() - started
    ticking.cancel()
    return worst * 1000, took


async def bench(runs: int, chunks: int) -> None:
    ready, stop, url = threading.Event(), threading.Event(), []
    server = threading.Thread(target=serve, args=(2 * runs, chunks, ready, stop, url), daemon=True)
    server.start()
    await asyncio.to_thread(ready.wait)
    client = LLMClient(base_url=url[0], api_key="sk-bench", model="fake-model", timeout_s=300.0, max_retries=0)
    shipped = llm.STREAM_YIELD_EVERY
    figures: dict[str, list[tuple[float, float]]] = {f"yield every {shipped}": [], "no yield": []}
    load = os.getloadavg()[0]
    try:
        for _ in range(runs):
            for name, every in ((f"yield every {shipped}", shipped), ("no yield", NO_YIELD)):
                llm.STREAM_YIELD_EVERY = every
                figures[name].append(await one_run(client))
    finally:
        llm.STREAM_YIELD_EVERY = shipped
        await client.aclose()
        stop.set()
    print(f"one reply of {chunks:,} chunks of 4 characters, {runs} runs each, alternating; "
          f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':<20}{'longest loop hold (median)':>30}{'worst of the runs':>20}{'stream time (median)':>24}")
    for name, rows in figures.items():
        holds = [h for h, _ in rows]
        print(f"{name:<20}{statistics.median(holds):>27.1f} ms{max(holds):>17.1f} ms"
              f"{statistics.median(t for _, t in rows):>22.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=25_000)
    args = parser.parse_args()
    asyncio.run(bench(args.runs, args.chunks))


if __name__ == "__main__":
    main()
