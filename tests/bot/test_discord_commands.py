"""`/trace`, `/memory show|export|forget` and `/reset` end to end against FakeDiscord."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.discord_app.views import ConfirmView
from memory.semantic import scope_for
from tests.bot.conftest import system_text
from tests.bot.discord_fixtures import BotUnderTest, World, answer, final_answers
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeInteraction, FakeMessage
from tests.fakes.openai_server import FakeOpenAI

CALCULATE = 'Thought: I should compute it.\nAction: calculator\nAction Input: {"expression": "6*7"}'


async def _answer_with_a_tool(world: World, fake: FakeOpenAI, user: str, running: BotUnderTest) -> str:
    """``user`` asks by mention; the model uses the calculator; returns the answer's message id
    once the turn (and its trace) is stored: the reply is shown before the turn ends."""
    fake.reply(CALCULATE).reply("Final Answer: 42")
    asked = await world.dc.user_says(world.general, user, "six times seven?", mention_bot=True)
    reply = await answer(world, asked)
    assert await running.pipeline.tracker.wait_idle(10)
    return reply.id


def _link(world: World, message_id: str) -> str:
    return f"https://discord.com/channels/{world.guild}/{world.general}/{message_id}"


async def _last_content(world: World, inter: FakeInteraction) -> str:
    """What the bot told the person (these commands give one text, after any deferral)."""
    await world.dc.wait_for(lambda: final_answers(inter))
    return final_answers(inter)[-1]


# ------------------------------------------------------------------ /trace


async def test_trace_opens_a_thread_on_the_callers_last_answer_with_one_message_per_step(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    answer_id = await _answer_with_a_tool(world, fake, world.alice, running)
    inter = await world.dc.invoke_command(world.general, world.alice, "trace")
    told = await _last_content(world, inter)
    [thread] = world.dc.threads
    assert thread["id"] == answer_id and thread["type"] == p.PUBLIC_THREAD
    assert told.startswith(f"Trace posted in <#{answer_id}>.")  # then the memories it recalled: none
    assert told.endswith("No memories were recalled for that answer.")
    assert inter.callback is not None and inter.callback.ephemeral
    steps = [m.content for m in world.dc.messages_in(answer_id)]
    assert len(steps) == 3
    assert steps[0].startswith("**Step 1** · `calculator` · ok") and '"6*7"' in steps[0]
    assert steps[1].startswith("**Step 2** · final answer") and "42" in steps[1]
    assert steps[2].startswith("**Summary** · 2 steps ·") and steps[2].endswith("answered")


async def test_trace_sent_while_the_answer_is_still_being_stored_opens_that_answer(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    earlier = await _answer_with_a_tool(world, fake, world.alice, running)
    storing = fake.hold_embeddings("43")   # the new answer's memory item: the turn stays unstored
    fake.reply("Final Answer: 43")
    asked = await world.dc.user_says(world.general, world.alice, "and one more?", mention_bot=True)
    await world.dc.wait_for(lambda: any("43" in str(r["input"]) for r in fake.embedding_requests))
    inter = await world.dc.invoke_command(world.general, world.alice, "trace")
    await world.dc.wait_for(lambda: any(e.kind == "callback" for e in inter.events))
    await asyncio.sleep(0.5)   # time enough for /trace to read the store, were it not to wait
    storing.set()
    told = await _last_content(world, inter)
    latest = await answer(world, asked)
    assert latest.id != earlier
    assert [thread["id"] for thread in world.dc.threads] == [latest.id]
    assert told.startswith(f"Trace posted in <#{latest.id}>.")
    assert "43" in world.dc.messages_in(latest.id)[0].content


async def test_trace_by_message_link_is_refused_to_another_member_without_manage_messages(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    answer_id = await _answer_with_a_tool(world, fake, world.alice, running)
    inter = await world.dc.invoke_command(world.general, world.bob, "trace", {"message": _link(world, answer_id)})
    told = await _last_content(world, inter)
    assert told.startswith("Only the person who asked")
    assert inter.callback is not None and inter.callback.ephemeral
    assert world.dc.threads == []


async def test_trace_by_message_link_is_shown_to_a_member_with_manage_messages(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    answer_id = await _answer_with_a_tool(world, fake, world.alice, running)
    inter = await world.dc.invoke_command(world.general, world.mod, "trace", {"message": _link(world, answer_id)})
    told = await _last_content(world, inter)
    assert told == f"Trace posted in <#{answer_id}>."
    assert world.dc.messages_in(answer_id)[-1].content.startswith("**Summary**")


async def test_trace_of_an_unknown_message_says_so(world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot()
    inter = await world.dc.invoke_command(world.general, world.alice, "trace", {"message": "not a link"})
    assert await _last_content(world, inter) == "That is not a message link or id."
    inter = await world.dc.invoke_command(world.general, world.alice, "trace")
    assert await _last_content(world, inter) == "I have no trace for that answer."


# ------------------------------------------------------------------ /memory


async def _tell_a_fact(world: World, fake: FakeOpenAI, running: BotUnderTest) -> None:
    """Alice tells a fact by mention; returns once the turn is stored. The reply alone does not
    say so: a slow end of the turn shows the answer's preview before the turn is stored."""
    fake.reply("Final Answer: Noted, teal it is.")
    await answer(world, await world.dc.user_says(world.general, world.alice, "my favourite colour is teal",
                                                 mention_bot=True))
    assert await running.pipeline.tracker.wait_idle(10)


async def test_memory_show_lists_what_is_remembered_ephemerally(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _tell_a_fact(world, fake, running)
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="show")
    shown = await _last_content(world, inter)
    assert shown.startswith("1. [") and "my favourite colour is teal" in shown
    assert "] you: my favourite colour is teal / me: Noted, teal it is." in shown
    assert "\n2. " not in shown  # the message and the answer kept beside it: one entry
    assert all(e.ephemeral for e in inter.events)


async def test_memory_show_pages_a_long_list_with_buttons(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    facts = [f"fact number {i}: " + "something worth remembering " * 5 for i in range(20)]
    await running.runtime.user_memory.add_many(
        [(world.alice, fact, {"channel_id": world.general}, scope_for(world.guild)) for fact in facts])
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="show")
    await world.dc.wait_for_response(inter, "followup")
    page = world.dc.messages[inter.original_message_id]
    pages = int(page.content.rsplit(" of ", 1)[1])
    assert page.ephemeral and pages >= 2 and page.content.endswith(f"page 1 of {pages}")
    texts = [page.content]
    for number in range(2, pages + 1):
        _previous, following, _forget_one = page.custom_ids()
        click = await world.dc.click_button(page.id, following, world.alice)
        await world.dc.wait_for_response(click, "callback")
        assert page.content.endswith(f"page {number} of {pages}")
        texts.append(page.content)
    assert all(len(text) <= 2000 for text in texts)
    shown = [line for text in texts for line in text.splitlines() if "fact number" in line]
    assert len(shown) == 20 and len({line.split(". ", 1)[0] for line in shown}) == 20  # numbered 1..20 once


async def test_memory_show_of_someone_else_shows_only_their_own(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _tell_a_fact(world, fake, running)
    inter = await world.dc.invoke_command(world.general, world.bob, "memory", subcommand="show")
    assert await _last_content(world, inter) == "I don't remember anything about you here."


async def test_memory_export_sends_a_json_file_with_the_items(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _tell_a_fact(world, fake, running)
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="export")
    await world.dc.wait_for_response(inter, "followup")
    message = world.dc.messages[inter.original_message_id]
    assert message.ephemeral and message.attachments[0]["filename"] == "memory.json"
    data = json.loads(world.dc.attachment_bytes(message.id))
    assert data["user_id"] == world.alice
    said, _reply = sorted(data["items"], key=lambda i: i["metadata"]["kind"])  # the turn and the bot's reply
    assert "my favourite colour is teal" in said["text"]


async def _forget_prompt(world: World, fake: FakeOpenAI, running: BotUnderTest) -> FakeMessage:
    """Alice tells a fact, then runs /memory forget; returns the confirmation prompt."""
    await _tell_a_fact(world, fake, running)
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="forget")
    await world.dc.wait_for_response(inter, "callback")
    return world.dc.messages[inter.original_message_id]


async def test_memory_forget_asks_first_and_erases_after_the_click(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    prompt = await _forget_prompt(world, fake, running)
    assert prompt.ephemeral and prompt.content.startswith("Erase everything")
    assert len(await running.services.memory.memory_items(world.alice, world.guild)) == 2  # not yet
    confirm, _cancel = prompt.custom_ids()
    click = await world.dc.click_button(prompt.id, confirm, world.alice)
    await world.dc.wait_for_response(click, "original_edit")
    assert prompt.content.startswith("Done: I forgot 2 memory item(s), 1 of your message(s) and 1 of my "
                                     "answer(s) in channel histories, 1 answer trace(s)")
    assert prompt.components == []
    assert await running.services.memory.memory_items(world.alice, world.guild) == []

    fake.reply("Final Answer: I don't know.")
    await answer(world, await world.dc.user_says(world.random, world.alice, "what is my favourite colour?",
                                                 mention_bot=True))
    assert "teal" not in system_text(fake.requests[-1])


async def test_memory_forget_cancelled_keeps_everything(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    prompt = await _forget_prompt(world, fake, running)
    _confirm, cancel = prompt.custom_ids()
    click = await world.dc.click_button(prompt.id, cancel, world.alice)
    await world.dc.wait_for_response(click, "callback")
    assert prompt.content == "Nothing was forgotten."
    assert len(await running.services.memory.memory_items(world.alice, world.guild)) == 2


async def test_a_forget_that_fails_says_so_and_keeps_the_memory(
        world: World, run_bot, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    running = await run_bot()
    prompt = await _forget_prompt(world, fake, running)

    async def fails(user_id: str, guild_id: str | None) -> int:
        raise RuntimeError("the store went away")

    monkeypatch.setattr(running.services.memory, "memory_forget", fails)
    confirm, _cancel = prompt.custom_ids()
    click = await world.dc.click_button(prompt.id, confirm, world.alice)
    told = await world.dc.wait_for_response(click, "followup")
    assert told.ephemeral
    assert told.json["content"] == "Something went wrong; nothing may have been forgotten. Please try again."
    assert len(await running.services.memory.memory_items(world.alice, world.guild)) == 2


async def test_memory_forget_buttons_refuse_anyone_else(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    prompt = await _forget_prompt(world, fake, running)
    confirm, _cancel = prompt.custom_ids()
    click = await world.dc.click_button(prompt.id, confirm, world.bob)
    refusal = await world.dc.wait_for_response(click, "callback")
    assert refusal.ephemeral and refusal.json["data"]["content"] == "These buttons are not yours."
    assert len(await running.services.memory.memory_items(world.alice, world.guild)) == 2


# ------------------------------------------------------------------ /reset


async def test_reset_needs_manage_messages(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _tell_a_fact(world, fake, running)
    inter = await world.dc.invoke_command(world.general, world.bob, "reset")
    told = await _last_content(world, inter)
    assert told == "You need the Manage Messages permission to reset this channel."
    assert inter.callback is not None and inter.callback.ephemeral
    assert len(await running.runtime.buffer.recent(world.general)) == 2


async def test_reset_by_a_moderator_clears_the_channel_buffer(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _tell_a_fact(world, fake, running)
    inter = await world.dc.invoke_command(world.general, world.mod, "reset")
    assert await _last_content(world, inter) == "Done: I forgot this channel's last 2 message(s)."
    assert await running.runtime.buffer.recent(world.general) == []

    fake.reply("Final Answer: hello")
    await answer(world, await world.dc.user_says(world.general, world.alice, "hello again", mention_bot=True))
    assert [m["role"] for m in fake.requests[-1]["messages"]] == ["system", "user"]


async def test_an_unanswered_forget_prompt_expires_and_loses_its_buttons(
        world: World, run_bot, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ConfirmView, "default_timeout_s", 0.2)
    running = await run_bot()
    await _tell_a_fact(world, fake, running)
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="forget")
    await world.dc.wait_for_response(inter, "original_edit")
    prompt = world.dc.messages[inter.original_message_id]
    assert prompt.content == ConfirmView.timeout_text and prompt.components == []
    assert len(await running.services.memory.memory_items(world.alice, world.guild)) == 2


async def test_manage_messages_in_another_guild_does_not_open_a_trace(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    admins = world.dc.add_role(world.other_guild, "admins", p.MANAGE_MESSAGES)
    outsider = world.dc.add_member(world.other_guild, name="outsider", roles=[admins])
    running = await run_bot()
    answer_id = await _answer_with_a_tool(world, fake, world.alice, running)
    inter = await world.dc.invoke_command(world.elsewhere, outsider, "trace", {"message": _link(world, answer_id)})
    assert (await _last_content(world, inter)).startswith("Only the person who asked")
    assert world.dc.threads == []


async def test_trace_of_a_dm_answer_follows_it_in_the_dm(world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot()
    fake.reply(CALCULATE).reply("Final Answer: 42")
    await answer(world, await world.dc.user_says(world.alice_dm, world.alice, "six times seven?"))
    inter = await world.dc.invoke_command(world.alice_dm, world.alice, "trace")
    told = await _last_content(world, inter)
    assert told.startswith("Trace posted below the answer.")
    posted = [m.content for m in world.dc.messages_in(world.alice_dm)
              if m.author_id == world.dc.bot_id and not m.interaction_id]
    assert posted[-1].startswith("**Summary** · 2 steps")
    assert posted[-3].startswith("**Step 1** · `calculator`")
    assert world.dc.threads == []
