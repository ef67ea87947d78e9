"""Probe: what one wake of the reminder delivery loop costs when a backlog of due reminders is
not this process's to start (another shard's, or a Discord bot's sharing DATA_DIR with the
console), at growing backlogs: the read goes through the whole due list, a page at a time.

    python bench/probe/due_backlog.py --sizes 400 4000 40000 --wakes 5

For each size, a fresh SQLite file holds that many due reminders of other people and one of
this process's own (the console's), due last; each wake (`ReminderDelivery.deliver_due`) must
read to the end to find it, delivers it, and it is added again for the next wake. Prints the median and worst
wake (wall time and this process's CPU) and the event loop's worst lateness meanwhile (a 10 ms
ticker, `bot.process.health.LoopLag`), then how each grows with the backlog. Not part of the
product or of the bench's figures: a diagnosis tool.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.figures import commit_of
from bot.console.reminders import ConsoleReminderSender
from bot.process.health import LoopLag
from bot.reminders.delivery import ReminderDelivery
from bot.reminders.service import Reminders
from bot.settings.reminders import ReminderSettings
from memory.stores.database import Database
from memory.stores.reminders import NewReminder, ReminderStore
from rich.console import Console

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def _due(user_id: str, n: int) -> NewReminder:
    return NewReminder(user_id=user_id, display_name=user_id, guild_id=None, channel_id="console", by_dm=True,
                       message=f"note {n}", ask=False, rule=None, zone="UTC", start_local="",
                       due_at=NOW - timedelta(hours=2) + timedelta(milliseconds=n))


async def one_size(folder: Path, size: int, wakes: int) -> tuple[list[float], list[float], float]:
    async with Database.open(folder / f"due-{size}.sqlite3") as db:
        store = ReminderStore(db)
        for n in range(size):
            await store.add(_due(f"2000000000000{n:05d}", n), max_pending=1, now=NOW)
        await store.add(_due("console", size), max_pending=1, now=NOW)
        reminders = Reminders(store, ReminderSettings(), now=lambda: NOW)
        sender = ConsoleReminderSender(Console(file=io.StringIO()), "console")
        delivery = ReminderDelivery(reminders, sender)
        lag = LoopLag(sample_s=0.01)
        ticker = asyncio.create_task(lag.run())
        walls, cpus = [], []
        try:
            for _ in range(wakes):
                wall, cpu = time.perf_counter(), time.process_time()
                started = await delivery.deliver_due(wait=True)
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
                assert started == 1, f"the own reminder was not reached ({started} started)"
                await store.add(_due("console", size), max_pending=1, now=NOW)  # due again, last
            worst = lag.take_worst()
        finally:
            ticker.cancel()
        return walls, cpus, worst


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[400, 4000, 40000])
    parser.add_argument("--wakes", type=int, default=5)
    args = parser.parse_args()
    print(f"# due_backlog at {commit_of(Path(__file__).parent)}; {args.wakes} wakes per size; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            walls, cpus, worst = await one_size(Path(folder), size, args.wakes)
            rows.append((size, statistics.median(walls), statistics.median(cpus), worst))
            print(f"backlog {size:>7,}: wake median {statistics.median(walls) * 1000:8.1f} ms "
                  f"(worst {max(walls) * 1000:8.1f}), CPU median {statistics.median(cpus) * 1000:8.1f} ms, "
                  f"worst loop lateness {worst * 1000:6.1f} ms")
    for (a, wall_a, cpu_a, _), (b, wall_b, cpu_b, _) in zip(rows, rows[1:], strict=False):
        print(f"growth {a:,} -> {b:,} (x{b / a:.0f}): wake x{wall_b / wall_a:.1f}, CPU x{cpu_b / cpu_a:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
