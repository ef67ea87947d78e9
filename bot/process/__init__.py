"""The process: what `python -m bot` builds, watches and stops.

- `runtime`: Runtime, everything a front end needs, built from Settings, closed in reverse.
- `shutdown`: StopSignal and serve_until_stopped, graceful stop on SIGTERM/SIGINT.
- `health`: HealthLog, at most one log line a minute while something is wrong.
- `check`: run_checks, `python -m bot check`.
- `logging_setup`: configure_logging.
- `pacing`: LoopPacer, work ready at once spread over event-loop iterations.
- `heap`: freeze_start_up_heap, the imports' objects kept out of the collector's full scans.

The light parts are re-exported here; the runtime and the checks (which import every store)
are imported from their modules.
"""

from __future__ import annotations

from bot.process.health import HealthLog
from bot.process.heap import freeze_start_up_heap
from bot.process.logging_setup import configure_logging
from bot.process.pacing import LoopPacer
from bot.process.shutdown import StopSignal, serve_until_stopped

__all__ = ["HealthLog", "LoopPacer", "StopSignal", "configure_logging", "freeze_start_up_heap",
           "serve_until_stopped"]
