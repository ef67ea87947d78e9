"""`/ask` end to end: deferred at once, live status edits, the answer, private answers, traces."""

from __future__ import annotations

from bot.errors import sentence_for
from tests.bot.conftest import last_user_text
from tests.bot.discord_fixtures import World, final_answers, shown_for
from tests.fakes import discord_payloads as p
from tests.fakes.openai_server import FakeOpenAI

CALCULATE = 'Thought: I should compute it.\nAction: calculator\nAction Input: {"expression": "6*7"}'


async def test_ask_is_deferred_at_once_then_answered_by_editing_the_original(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.delay(0.3).reply("Final Answer: 42")
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "six times seven?"})
    edit = await world.dc.wait_for_response(inter, "original_edit")
    callback = inter.callback
    assert callback is not None and callback.callback_type == 5  # deferred "thinking"
    assert callback.at < 3.0 and callback.at < edit.at
    assert edit.json["content"] == "42"
    original = world.dc.messages[inter.original_message_id]
    assert original.content == "42" and not original.ephemeral and not original.loading
    assert last_user_text(fake.requests[0]) == "six times seven?"


async def test_ask_shows_the_tool_being_called_before_the_answer(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply(CALCULATE).reply("Final Answer: 42")
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "six times seven?"})
    await world.dc.wait_for(lambda: "42" in final_answers(inter))
    *status, final = final_answers(inter)
    assert final == "42"
    assert status and all("calculator" in line for line in status)
    assert "42" in last_user_text(fake.requests[1])  # the observation reached the model


async def test_private_ask_is_answered_ephemerally(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: only for you")
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.alice, "ask",
                                          {"question": "a secret?", "private": True})
    await world.dc.wait_for_response(inter, "original_edit")
    assert inter.callback is not None and inter.callback.ephemeral
    original = world.dc.messages[inter.original_message_id]
    assert original.ephemeral and original.content == "only for you"
    assert world.dc.threads == []


async def test_ask_with_trace_posts_the_steps_in_a_public_thread_under_the_answer(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply(CALCULATE).reply("Thought: done.\nFinal Answer: 42")
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.alice, "ask",
                                          {"question": "six times seven?", "trace": True})
    summary = await world.dc.wait_for(lambda: next(
        (m for t in world.dc.threads for m in world.dc.messages_in(t["id"])
         if m.content.startswith("**Summary**")), None))
    [thread] = world.dc.threads
    assert thread["id"] == inter.original_message_id  # started from the answer
    assert thread["type"] == p.PUBLIC_THREAD and thread["parent_id"] == world.general
    steps = [m.content for m in world.dc.messages_in(thread["id"])]
    assert len(steps) == 3 and steps[-1] == summary.content
    assert steps[0].startswith("**Step 1** · `calculator` · ok")
    assert '"6*7"' in steps[0] and "42" in steps[0]
    assert steps[1].startswith("**Step 2** · final answer")
    assert "2 steps" in summary.content and "answered" in summary.content


async def test_private_ask_with_trace_keeps_the_steps_private(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply(CALCULATE).reply("Final Answer: 42")
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.alice, "ask",
                                          {"question": "six times seven?", "trace": True, "private": True})
    await world.dc.wait_for(lambda: any(c.startswith("**Summary**") for c in final_answers(inter)))
    followups = [e for e in inter.events if e.kind == "followup"]
    assert followups and all(e.ephemeral for e in followups)
    assert world.dc.threads == []


async def test_a_long_ask_answer_continues_in_ordered_followups(world: World, run_bot, fake: FakeOpenAI) -> None:
    lines = [f"line {i}: " + "text " * 15 for i in range(60)]
    fake.reply("Final Answer: " + "\n".join(lines))
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "a long one"})
    expected = [line.rstrip() for line in lines]

    def shown_lines() -> list[str]:
        return [line.rstrip() for part in shown_for(world, inter) for line in part.split("\n")]

    await world.dc.wait_for(lambda: shown_lines() == expected)
    parts = shown_for(world, inter)
    assert len(parts) >= 3 and all(len(part) <= 2000 for part in parts)
    assert world.dc.messages[inter.original_message_id].content == parts[0]


async def test_ask_with_the_model_down_answers_one_sentence_and_the_next_ask_works(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.error(500).reply("Final Answer: recovered")
    await run_bot()
    failed = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "q1"})
    await world.dc.wait_for(lambda: final_answers(failed))
    assert final_answers(failed) == [sentence_for("server_error")]
    served = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": "q2"})
    await world.dc.wait_for(lambda: final_answers(served))
    assert final_answers(served) == ["recovered"]


async def test_ask_in_a_direct_message_is_answered(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: hello in private")
    await run_bot()
    inter = await world.dc.invoke_command(world.alice_dm, world.alice, "ask", {"question": "hi"})
    await world.dc.wait_for(lambda: final_answers(inter))
    assert final_answers(inter) == ["hello in private"]
    assert world.dc.messages[inter.original_message_id].channel_id == world.alice_dm
