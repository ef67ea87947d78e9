"""Auditing memory on Discord, end to end against FakeDiscord: `/trace` lists the memories an answer
recalled (to the asker alone), `/memory show` pages entries with date, place, link and older ones
marked, and one entry is forgotten by its number or from a select menu."""

from __future__ import annotations

import pytest

from bot import services
from bot.turn.memory_reach import list_reach
from bot.turn.privacy import Reach
from memory.semantic import MemoryHit, UserMemory
from tests.bot.discord_fixtures import BotUnderTest, World, answer, final_answers
from tests.fakes.discord_server import FakeInteraction, FakeMessage
from tests.fakes.openai_server import FakeOpenAI

FORGET_ONE = "memory:forget-one"


async def _say(world: World, fake: FakeOpenAI, running: BotUnderTest, text: str, reply: str,
               user: str | None = None) -> FakeMessage:
    """A person says ``text`` to the bot by mention; returns their message once the turn is stored."""
    fake.reply(f"Final Answer: {reply}")
    asked = await world.dc.user_says(world.general, user or world.alice, text, mention_bot=True)
    await answer(world, asked)
    assert await running.pipeline.tracker.wait_idle(10)
    return asked


async def _told(world: World, inter: FakeInteraction) -> str:
    await world.dc.wait_for(lambda: final_answers(inter))
    return final_answers(inter)[-1]


def _link(world: World, message_id: str) -> str:
    return f"https://discord.com/channels/{world.guild}/{world.general}/{message_id}"


async def _items(running: BotUnderTest, world: World) -> list[str]:
    return sorted(hit.text for hit in await running.services.memory.memory_items(world.alice, world.guild))


# ------------------------------------------------------------------ /trace


async def test_trace_lists_the_recalled_memories_with_rank_place_date_and_a_link_to_the_message(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    said = await _say(world, fake, running, "my favourite colour is teal", "Noted, teal it is.")
    await _say(world, fake, running, "what is my favourite colour?", "Teal.")
    inter = await world.dc.invoke_command(world.general, world.alice, "trace")
    told = await _told(world, inter)
    assert told.startswith("Trace posted in <#")
    assert "Memories recalled for that answer (only you see this):" in told
    line = next(row for row in told.splitlines() if "my favourite colour is teal" in row)
    assert line.startswith("**#") and "(prompt)" in line and f"<#{world.general}>" in line
    assert f"[message](<{_link(world, said.id)}>)" in line
    assert inter.callback is not None and inter.callback.ephemeral and all(e.ephemeral for e in inter.events)


async def test_a_moderator_sees_the_steps_but_not_the_askers_memories(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    fake.reply("Final Answer: Teal.")
    asked = await world.dc.user_says(world.general, world.alice, "what is my favourite colour?", mention_bot=True)
    reply = await answer(world, asked)
    assert await running.pipeline.tracker.wait_idle(10)
    inter = await world.dc.invoke_command(world.general, world.mod, "trace", {"message": _link(world, reply.id)})
    told = await _told(world, inter)
    assert told == f"Trace posted in <#{reply.id}>."
    assert not any("teal" in m.content for m in world.dc.messages_in(reply.id))  # nor in the thread


@pytest.mark.parametrize("who", ["alice", "mod"])
async def test_the_thread_shows_a_recall_memory_step_but_not_the_memories_it_found(
        world: World, run_bot, fake: FakeOpenAI, who: str) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    fake.reply('Thought: I should look it up.\nAction: recall_memory\nAction Input: {"query": "favourite colour"}')
    fake.reply("Final Answer: You told me once.")
    asked = await world.dc.user_says(world.general, world.alice, "what is my favourite colour?", mention_bot=True)
    reply = await answer(world, asked)
    assert await running.pipeline.tracker.wait_idle(10)
    assert "teal" in fake.requests[-1]["messages"][-1]["content"]  # the tool found it, and the model read it
    await _told(world, await world.dc.invoke_command(world.general, getattr(world, who), "trace",
                                                     {"message": _link(world, reply.id)}))
    thread = [m.content for m in world.dc.messages_in(reply.id)]
    assert any("`recall_memory`" in content for content in thread)  # the step is there
    assert not any("teal" in content for content in thread)  # the thread is the channel's to read


async def test_a_memory_forgotten_since_shows_as_forgotten_in_the_trace(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    await _say(world, fake, running, "what is my favourite colour?", "Teal.")
    memory = running.services.memory
    first = (await memory.memory_entries(world.alice, world.guild))[0]
    assert await memory.forget_items(world.alice, first) == 2
    told = await _told(world, await world.dc.invoke_command(world.general, world.alice, "trace"))
    assert "forgotten since" in told and "my favourite colour is teal" not in told


# ------------------------------------------------------------------ /memory show


async def test_memory_show_dates_places_and_links_each_entry_and_marks_the_older_of_two_on_a_subject(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    lyon = await _say(world, fake, running, "I live in Lyon near the old town", "Lovely city.")
    await _say(world, fake, running, "I moved from Lyon to Berlin last month", "Big change!")
    told = await _told(world, await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="show"))
    first, second = told.splitlines()[:2]
    assert first.startswith("1. [20") and f", <#{world.general}>] you: I live in Lyon" in first
    assert "*older*" in first and f"[message](<{_link(world, lyon.id)}>)" in first
    assert second.startswith("2. [") and "I moved from Lyon to Berlin" in second and "*older*" not in second


async def test_memory_show_offers_a_select_menu_that_forgets_one_entry_after_confirming(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    await _say(world, fake, running, "my cat is called Miso", "Cute.")
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="show")
    await world.dc.wait_for_response(inter, "followup")
    page = world.dc.messages[inter.original_message_id]
    assert page.custom_ids() == [FORGET_ONE]  # one page: no pager buttons
    choice = await world.dc.choose(page.id, FORGET_ONE, ["1"], world.alice)
    await world.dc.wait_for_response(choice, "callback")
    assert page.content.startswith("Forget 1. “you: my favourite colour is teal / me: Noted.”")
    confirm, _cancel = page.custom_ids()
    click = await world.dc.click_button(page.id, confirm, world.alice)
    await world.dc.wait_for_response(click, "original_edit")
    assert page.content.startswith("Done: I forgot memory 1 (2 item(s)).") and page.components == []
    assert await _items(running, world) == ["Cute.", "my cat is called Miso"]


async def test_the_forget_menu_refuses_anyone_else_and_forgets_nothing(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", subcommand="show")
    await world.dc.wait_for_response(inter, "followup")
    page = world.dc.messages[inter.original_message_id]
    choice = await world.dc.choose(page.id, FORGET_ONE, ["1"], world.bob)
    assert await _told(world, choice) == "These buttons are not yours."
    assert await _items(running, world) == ["Noted.", "my favourite colour is teal"]


# ------------------------------------------------------------------ /memory forget <number>


async def test_memory_forget_by_number_asks_then_forgets_only_that_entry(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    await _say(world, fake, running, "my cat is called Miso", "Cute.")
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", {"item": 2}, subcommand="forget")
    await world.dc.wait_for_response(inter, "followup")
    prompt = world.dc.messages[inter.original_message_id]
    assert prompt.ephemeral and prompt.content.startswith("Forget 2. “you: my cat is called Miso / me: Cute.”")
    assert len(await _items(running, world)) == 4  # not yet
    confirm, _cancel = prompt.custom_ids()
    click = await world.dc.click_button(prompt.id, confirm, world.alice)
    await world.dc.wait_for_response(click, "original_edit")
    assert prompt.content.startswith("Done: I forgot memory 2 (2 item(s)).")
    assert await _items(running, world) == ["Noted.", "my favourite colour is teal"]


@pytest.mark.parametrize("private", [False, True])
async def test_forgetting_one_entry_says_what_still_holds_its_words(
        world: World, run_bot, fake: FakeOpenAI, private: bool) -> None:
    running = await run_bot()
    fake.reply("Final Answer: Noted.")
    asked = await world.dc.invoke_command(world.general, world.alice, "ask",
                                          {"question": "my favourite colour is teal", "private": private})
    await world.dc.wait_for(lambda: "Noted." in (final_answers(asked) or [""])[-1])
    assert await running.pipeline.tracker.wait_idle(10)
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", {"item": 1}, subcommand="forget")
    await world.dc.wait_for_response(inter, "followup")
    prompt = world.dc.messages[inter.original_message_id]
    confirm, _cancel = prompt.custom_ids()
    await world.dc.wait_for_response(await world.dc.click_button(prompt.id, confirm, world.alice), "original_edit")
    held = "the answer's trace" if private else "the recent conversation where it was said and the answer's trace"
    assert prompt.content.endswith(f"Your words stay in {held} until they age out; `/memory forget` erases everything.")


async def test_memory_forget_by_number_lists_the_persons_items_once(
        world: World, run_bot, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    listed: list[str] = []

    async def counted(memory: UserMemory, user_id: str, reach: Reach) -> list[MemoryHit]:
        listed.append(user_id)
        return await list_reach(memory, user_id, reach)

    monkeypatch.setattr(services, "list_reach", counted)
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", {"item": 1}, subcommand="forget")
    await world.dc.wait_for_response(inter, "followup")
    prompt = world.dc.messages[inter.original_message_id]
    confirm, _cancel = prompt.custom_ids()
    click = await world.dc.click_button(prompt.id, confirm, world.alice)
    await world.dc.wait_for_response(click, "original_edit")
    assert prompt.content.startswith("Done: I forgot memory 1 (2 item(s)).")
    assert listed == [world.alice]


async def test_memory_forget_of_a_number_not_shown_says_so_and_forgets_nothing(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    inter = await world.dc.invoke_command(world.general, world.alice, "memory", {"item": 99}, subcommand="forget")
    assert await _told(world, inter) == "There is no memory 99 here: `/memory show` lists 1."
    assert len(await _items(running, world)) == 2


async def test_another_persons_entry_cannot_be_forgotten_by_its_item_ids(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await _say(world, fake, running, "my favourite colour is teal", "Noted.")
    memory = running.services.memory
    alices = (await memory.memory_entries(world.alice, world.guild))[0]
    assert await memory.forget_items(world.bob, alices) == 0
    assert len(await _items(running, world)) == 2
