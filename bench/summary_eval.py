"""The running summary on a long generated history: what of a conversation far outside the
context window still reaches the model, and what folding costs.

Run: `python bench/summary_eval.py [--user ines]` (a few seconds). One user's history of
bench/data/hard_histories.py (432 exchanges over nine months) is one channel: each exchange
is stored as the pipeline stores a turn (question and answer at one time), and after each
the channel is folded as the pipeline does after a turn (bot.knowledge.summary,
RunningSummaries.fold, with the default SUMMARY_EVERY, BUFFER_WINDOW and the history budget of
the default MAX_CONTEXT_TOKENS). Then the last turn's history is built as the pipeline builds
it (the summary, then the messages after it, fitted by bot.turn.context_budget).

There is no language model here, so what a real summary keeps is not measured. The model is
a stand-in that keeps, of the summary so far and the new messages, the lines naming a person
(capitalised words past the first), newest kept when over the summary's bound. Counted, over
the `fact` questions whose evidence lies outside the last turn's window:
- seen: evidence turns that reached the model in a fold (with no summary: 0, they were dropped);
- carried: evidence turns whose words are in the last turn's prompt (stand-in summary);
and the folds' number and prompt size. The output is kept in bench/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from datetime import UTC
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.events import Usage  # noqa: E402
from agent.llm import Completion  # noqa: E402
from bench.data.hard_histories import build  # noqa: E402
from bot.knowledge.summary import SUMMARY_MAX_TOKENS, RunningSummaries, summary_message  # noqa: E402
from bot.settings.config import load_settings  # noqa: E402
from bot.turn.context_budget import fit_context  # noqa: E402
from bot.turn.history import history_messages  # noqa: E402
from memory.semantic.ranking import names_in  # noqa: E402
from memory.stores.buffer import BufferedMessage, ChannelBuffer  # noqa: E402
from memory.stores.database import Database  # noqa: E402
from memory.stores.summaries import ChannelSummaries  # noqa: E402
from memory.tokens import estimate_tokens  # noqa: E402

CHANNEL, GUILD, USER = "1", "9", "5"
HISTORY_TOKENS = 3588  # TurnPipeline.history_token_budget with the default settings and built-in tools (2026-12-03)


class StandIn:
    """A summariser without a model: the lines that name a person, newest kept within the bound."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(self, messages: list[dict[str, Any]], *, stop: Any = None, tools: Any = None) -> Completion:
        text = messages[1]["content"]
        self.prompts.append(text)
        lines = [line[2:] for line in text.splitlines() if line.startswith("> ") and line[2:] != "(none yet)"]
        named = [line for line in lines if names_in(line.split(": ", 1)[-1])]
        kept: list[str] = []
        for line in reversed(named):
            if estimate_tokens("\n".join([line, *kept])) > SUMMARY_MAX_TOKENS:
                break
            kept.insert(0, line)
        return Completion(content="\n".join(kept), usage=Usage())


async def main(args: argparse.Namespace) -> None:
    history = next(h for h in build() if h.user == args.user)
    settings = load_settings({"LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    every, window = settings.features.knowledge.summary_every, settings.buffer_window
    model = StandIn()
    with tempfile.TemporaryDirectory() as folder:
        async with Database.open(Path(folder) / "bot.sqlite3") as db:
            buffer = ChannelBuffer(db)
            summaries = RunningSummaries(buffer, ChannelSummaries(db), model, every=every, window=window,
                                         history_tokens=lambda: HISTORY_TOKENS)
            turn_of: dict[str, str] = {}
            for turn in history.turns:
                when = turn.when.replace(tzinfo=UTC)
                await buffer.append_many([
                    BufferedMessage(CHANNEL, GUILD, USER, args.user, "user", turn.user, when),
                    BufferedMessage(CHANNEL, GUILD, "bot", "bot", "assistant", turn.bot, when)])
                turn_of[turn.id] = turn.user
                await summaries.fold(CHANNEL)
            summary = await summaries.current(CHANNEL)
            recent = await buffer.recent(CHANNEL, limit=window)
            after = [m for m in recent if summary is None or m.created_at > summary.through]
            fitted = fit_context("and what else?", history_messages(after, USER), [], budget=HISTORY_TOKENS,
                                 summary=summary_message(summary) if summary else None)
            bare = fit_context("and what else?", history_messages(recent, USER), [], budget=HISTORY_TOKENS)
    in_window = {m.content for m in recent}
    far = [q for q in history.questions if q.kind == "fact"
           and all(turn_of[e] not in in_window for e in q.evidence)]
    evidence = [turn_of[e] for q in far for e in q.evidence]
    folded_text = "\n".join(model.prompts)
    prompt = "\n".join(m["content"] for m in fitted.history)
    plain = "\n".join(m["content"] for m in bare.history)
    seen = sum(text in folded_text for text in evidence)
    carried = sum(text in prompt for text in evidence)
    sizes = [estimate_tokens(p) for p in model.prompts]
    print(f"history {args.user}: {len(history.turns)} exchanges = {2 * len(history.turns)} messages in one channel; "
          f"SUMMARY_EVERY={every}, BUFFER_WINDOW={window}, history budget {HISTORY_TOKENS} tokens")
    print(f"far 'fact' questions: {len(far)} ({len(evidence)} evidence turns outside the last turn's window)")
    print(f"evidence seen by the summariser: {seen}/{len(evidence)}; without a summary: 0 (dropped unseen)")
    print(f"evidence carried into the last prompt, stand-in summariser: {carried}/{len(evidence)}; "
          f"without a summary: {sum(text in plain for text in evidence)}/{len(evidence)}")
    print(f"folds: {len(model.prompts)} (one per {2 * len(history.turns) / max(len(model.prompts), 1):.1f} messages); "
          f"fold prompt tokens median {statistics.median(sizes):.0f}, max {max(sizes)}; "
          f"summary {estimate_tokens(summary.text) if summary else 0} tokens, {summary.folded if summary else 0} "
          f"messages folded; last prompt history {fitted.tokens} tokens")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", default="ines")
    asyncio.run(main(parser.parse_args()))
