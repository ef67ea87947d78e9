"""Probe: how late an idle asyncio loop's 2 ms sleeps wake on this machine, alone and beside
processes spinning at nice 5: the floor under every "worst loop stall" the benches print
(bench/README.md, "Running them").

    python bench/probe/loop_floor.py --seconds 60 --burners 0 1 2
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time

TICK_S = 0.002


async def _lateness(seconds: float) -> list[float]:
    """Each tick's lateness (s) past its 2 ms sleep, for ``seconds``; sorted."""
    late: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        await asyncio.sleep(TICK_S)
        late.append(time.perf_counter() - start - TICK_S)
    return sorted(late)


def measure(burners: int, seconds: float) -> str:
    """One line: the ticker's lateness beside ``burners`` spinning processes."""
    spinners = [subprocess.Popen(["nice", "-n", "5", sys.executable, "-c", "while True: pass"])
                for _ in range(burners)]
    try:
        late = asyncio.run(_lateness(seconds))
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    worst = [round(x * 1000, 1) for x in late[-5:]]
    return (f"burners {burners}: {seconds:.0f} s, ticks {len(late)}, p99 {late[int(len(late) * 0.99)] * 1000:.2f} ms, "
            f"max {late[-1] * 1000:.1f} ms, over 10 ms {sum(x > 0.010 for x in late)}, "
            f"over 20 ms {sum(x > 0.020 for x in late)}; worst five {worst}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--burners", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    for burners in args.burners:
        print(measure(burners, args.seconds), flush=True)


if __name__ == "__main__":
    main()
