"""A turn's trace keeps the memories it recalled: the prompt's recall and each recall_memory call, ranked."""

from __future__ import annotations

from bot.process.runtime import Runtime
from tests.bot.conftest import ALICE, ask
from tests.fakes.openai_server import FakeOpenAI

CHANNEL = "300000000000000001"
RECALL = 'Thought: let me look.\nAction: recall_memory\nAction Input: {"query": "favourite colour"}'


async def _trace(runtime: Runtime):
    return await runtime.services.traces.last_trace(ALICE, CHANNEL)


async def test_the_prompts_recall_is_kept_in_the_trace_ranked(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Noted.")
    await runtime.pipeline.handle(ask("My favourite colour is teal."))
    ids = {hit.id for hit in await runtime.user_memory.list(ALICE)}
    fake.reply("Final Answer: Teal.")
    await runtime.pipeline.handle(ask("What is my favourite colour?"))
    recalled = (await _trace(runtime)).recalled
    assert recalled and {r.search for r in recalled} == {"prompt"}
    assert [r.rank for r in recalled] == list(range(1, len(recalled) + 1))
    assert {r.item_id for r in recalled} <= ids


async def test_each_recall_memory_call_is_kept_as_its_own_search(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Noted.")
    await runtime.pipeline.handle(ask("My favourite colour is teal."))
    fake.reply(RECALL).reply(RECALL).reply("Final Answer: Teal.")
    await runtime.pipeline.handle(ask("Remind me, what colour do I like?"))
    searches = [r.search for r in (await _trace(runtime)).recalled]
    assert "tool 1" in searches and "tool 2" in searches
    assert searches.index("tool 1") < searches.index("tool 2")


async def test_a_first_turn_recalls_nothing_and_its_trace_says_so(runtime: Runtime, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Hello!")
    await runtime.pipeline.handle(ask("Hello there"))
    assert (await _trace(runtime)).recalled == ()
