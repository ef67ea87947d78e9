"""Probe: were a load run's late heartbeats late leaving the bot, or late being read by the fake?

Reads the bot's "beat-probe" lines (bench/probe/sitecustomize.py, `CHAOS_STALL_SAMPLE`: when
discord.py's keep-alive thread woke for each heartbeat, and when the event loop ran its send)
and the run's printed "late heartbeats, stamped at ..." line (the fake Discord's receipt
stamps, same monotonic clock), and prints, for the bot's side, the gaps between the thread's
wake-ups and the loop's delay in running each send, then, for each beat the fake stamped late,
the bot's own timing of it. Not part of the product or of the bench's figures.

    python bench/chaos.py load --bot-env CHAOS_STALL_SAMPLE=0.25 --workdir RUN ... > OUT
    python bench/probe/beat_gaps.py RUN/load/bot.log OUT [--interval 2.0]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

LATE_FACTOR = 1.1  # bench/chaos_load.py's rule: a gap over 1.1x the interval is late


def bot_beats(log: Path) -> list[tuple[float, float, float]]:
    """(woke, ran, ran - woke in ms) of each heartbeat, in order."""
    beats = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("beat-probe "):
            woke, ran, delay_ms = map(float, line.split()[1:4])
            beats.append((woke, ran, delay_ms))
    return beats


def fake_late_stamps(output: Path) -> list[tuple[float, float]]:
    """(stamp, gap) of each heartbeat the fake counted late, from the run's printed output."""
    found = re.search(r"late heartbeats, stamped at [^:]*: (.*)", output.read_text(errors="replace"))
    if found is None:
        return []
    return [(float(stamp), float(gap)) for stamp, gap in
            (part.split(" / ") for part in found.group(1).split(", "))]


def report(beats: list[tuple[float, float, float]], late: list[tuple[float, float]], interval_s: float) -> list[str]:
    """The printed lines."""
    if len(beats) < 2:
        return ["fewer than two beat-probe lines: was the bot run with CHAOS_STALL_SAMPLE?"]
    gaps = [(b[0] - a[0], b) for a, b in zip(beats, beats[1:])]
    over = [(gap, beat) for gap, beat in gaps if gap > LATE_FACTOR * interval_s]
    delays = sorted(beat[2] for beat in beats)
    lines = [f"the bot's side: {len(beats)} heartbeats; gaps between the keep-alive thread's wake-ups "
             f"over {LATE_FACTOR}x {interval_s:g} s: {len(over)} of {len(gaps)}"
             + "".join(f"; {gap:.2f} s (woke {beat[0]:.3f})" for gap, beat in over),
             f"  the loop's delay in running each send (ms): p50 {delays[len(delays) // 2]:.0f}, "
             f"p95 {delays[int(len(delays) * 0.95)]:.0f}, max {delays[-1]:.0f}",
             f"the fake's late stamps: {len(late)}"]
    for stamp, gap in late:
        index = min(range(len(beats)), key=lambda i: abs(beats[i][1] - stamp))
        woke, ran, delay_ms = beats[index]
        own_gap = woke - beats[index - 1][0] if index else float("nan")
        lines.append(f"  stamped {stamp:.3f} ({gap:.2f} s after the one before): the bot's thread woke "
                     f"{woke:.3f}, {own_gap:.2f} s after its previous wake-up; its send ran {delay_ms:.0f} ms "
                     f"later; the fake stamped it {stamp - ran:+.3f} s after the send ran")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bot_log", type=Path)
    parser.add_argument("output", type=Path, help="the load run's printed output")
    parser.add_argument("--interval", type=float, default=2.0, help="the fake's heartbeat interval, seconds")
    args = parser.parse_args()
    print("\n".join(report(bot_beats(args.bot_log), fake_late_stamps(args.output), args.interval)))


if __name__ == "__main__":
    main()
