"""One turn: a person's request in, one answer (or one clear sentence) out.

- `requests`: what a front end hands the pipeline and gets back (TurnRequest, TurnResult).
- `pipeline`: TurnPipeline, the turn itself (budget, context, the agent's run, storing).
- `scheduling`: TurnScheduler, a FIFO lock per channel, a global limit, cooldowns.
- `context_budget`: fit_context, what is sent to the model within a token budget.
- `agent`: TurnAgents, the agent a turn runs with the place's persona, model and tools.
- `memory_tools`: MemoryTools, the turn's `recall_memory` and `remember` tools.
- `privacy`: MemoryPolicy, where a person's items are stored, recalled and managed.
- `memory_reach`: searching, listing and forgetting a person's memory over a policy's Reach.
- `history`: the channel's messages as a turn's chat history, other people's words quoted.
- `images`: ImageIntake, images attached to a question, checked and converted.
- `tracking`: TurnTracker, the turns in flight, for graceful shutdown.

The light parts are re-exported here; the pipeline, the agent, the memory tools and images
(which import agent/, memory/ and Pillow) are imported from their modules.
"""

from __future__ import annotations

from bot.turn.context_budget import Budgeted, fit_context
from bot.turn.requests import TurnRequest, TurnResult
from bot.turn.scheduling import TurnScheduler
from bot.turn.tracking import TurnTracker

__all__ = ["Budgeted", "TurnRequest", "TurnResult", "TurnScheduler", "TurnTracker", "fit_context"]
