"""What the running summary's check after a turn costs when no fold is due (decision 0040).

One busy channel of `--messages` buffered messages (100 to 600 characters each) whose summary
covers all but the newest `--fresh` (they fit the kept window): the state after most turns.
Side by side, taking turns `--rounds` times: the check as it was (read the newest window + 400
messages, keep those after the summary, measure them in Python) and as it is (`RunningSummaries`
reads nothing when no fold is due: the buffer's count, then the newest window's sizes measured
in SQL). p50 / p95 in ms and the messages each brings into Python. Figures only.

    PYTHONPATH=. python bench/summary_fold_check.py --messages 5000 --rounds 200
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.knowledge.summary import FOLD_READ_LIMIT, kept
from memory.stores.buffer import BufferedMessage, ChannelBuffer, MessageSize
from memory.stores.database import Database
from memory.tokens import estimate_tokens
from figures import commit_of, median_p95_ms

CHANNEL = "300000000000000001"
WINDOW = 40
KEEP_TOKENS = 4000  # half a turn's history budget: every fresh message is kept
EVERY = 20
START = datetime(2026, 12, 1, tzinfo=UTC)


async def _before(buffer: ChannelBuffer, through: datetime) -> tuple[bool, int]:
    recent = await buffer.recent(CHANNEL, limit=WINDOW + FOLD_READ_LIMIT)
    fresh = [m for m in recent if m.created_at > through]
    keep = kept([MessageSize(m.created_at, estimate_tokens(m.content)) for m in fresh], window=WINDOW,
                token_budget=KEEP_TOKENS)
    return len(fresh) - keep >= EVERY, len(recent)


async def _now(buffer: ChannelBuffer, through: datetime) -> tuple[bool, int]:
    unsummarised = await buffer.count(CHANNEL, after=through)
    if unsummarised < EVERY:
        return False, 0
    newest = await buffer.sizes(CHANNEL, after=through, limit=WINDOW + 1)
    return unsummarised - kept(newest, window=WINDOW, token_budget=KEEP_TOKENS) >= EVERY, 0


async def run(messages: int, fresh: int, rounds: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="fold-check-") as folder:
        async with Database.open(Path(folder) / "bot.sqlite3") as db:
            buffer = ChannelBuffer(db)
            await buffer.append_many([
                BufferedMessage(CHANNEL, "100000000000000001", "200000000000000001", "Alice",
                                "user" if n % 2 == 0 else "assistant",
                                " ".join(rng.choice(["word", "weather", "match", "lunch", "train"])
                                         for _ in range(rng.randint(20, 120))),
                                START + timedelta(seconds=n)) for n in range(messages)])
            through = START + timedelta(seconds=messages - fresh - 1)
            times: dict[str, list[float]] = {"before": [], "now": []}
            read: dict[str, int] = {}
            due: dict[str, bool] = {}
            for _ in range(rounds):
                for name, check in (("before", _before), ("now", _now)):
                    began = time.perf_counter()
                    due[name], read[name] = await check(buffer, through)
                    times[name].append(time.perf_counter() - began)
            print(f"{messages} messages, {fresh} after the summary (all kept), window {WINDOW}, every {EVERY}")
            print("check     p50 / p95 ms    messages read   fold due")
            for name in ("before", "now"):
                print(f"{name:8}  {median_p95_ms(times[name])}   {read[name]:13d}   {due[name]}")
            ratio = statistics.median(times["before"]) / statistics.median(times["now"])
            print(f"before / now (p50): {ratio:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--fresh", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    print(f"# summary_fold_check: commit {commit_of(Path.cwd())}; load {os.getloadavg()[0]:.2f}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    asyncio.run(run(args.messages, args.fresh, args.rounds))


if __name__ == "__main__":
    main()
