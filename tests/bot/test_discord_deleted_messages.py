"""A message its author deletes on Discord leaves the channel's kept conversation (and the answer
kept with it), so the next person's model request no longer carries it. Against FakeDiscord."""

from __future__ import annotations

import asyncio

from tests.bot.conftest import request_text
from tests.bot.discord_fixtures import BotUnderTest, World, answer, shows
from tests.fakes.openai_server import FakeOpenAI


async def _kept(running: BotUnderTest, channel: str) -> list[str]:
    return [m.content for m in await running.runtime.buffer.recent(channel, limit=50)]


async def _until_kept(running: BotUnderTest, channel: str, expected: list[str]) -> None:
    for _ in range(200):
        if await _kept(running, channel) == expected:
            return
        await asyncio.sleep(0.05)
    assert await _kept(running, channel) == expected


async def test_a_deleted_question_and_its_answer_leave_the_next_persons_request(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    fake.reply("Final Answer: Noted: the door code is 4471.")
    secret = await world.dc.user_says(world.general, world.alice, "the door code is 4471", mention_bot=True)
    await shows(world, await answer(world, secret), "Noted: the door code is 4471.")
    assert await running.pipeline.tracker.wait_idle(10)
    await world.dc.user_deletes(secret)
    await _until_kept(running, world.general, [])

    fake.reply("Final Answer: Hello Bob.")
    await shows(world, await answer(world, await world.dc.user_says(world.general, world.bob, "hi", mention_bot=True)),
                "Hello Bob.")
    assert "4471" not in request_text(fake.requests[-1])


async def test_a_question_deleted_while_its_turn_runs_leaves_once_the_turn_is_stored(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    fake.delay(1.0).reply("Final Answer: Noted.")
    secret = await world.dc.user_says(world.general, world.alice, "the door code is 4471", mention_bot=True)
    await world.dc.wait_for(lambda: len(fake.requests) == 1)  # the turn is waiting for the model
    await world.dc.user_deletes(secret)
    assert await running.pipeline.tracker.wait_idle(10)
    await _until_kept(running, world.general, [])


async def test_a_question_that_opened_its_own_thread_leaves_that_thread(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot()
    await running.runtime.places.set_value(world.guild, None, "auto_thread", "on", world.alice)
    fake.reply("Final Answer: Noted.")
    secret = await world.dc.user_says(world.general, world.alice, "the door code is 4471", mention_bot=True)
    await shows(world, await world.dc.wait_for_message(secret.id, lambda m: m.author_id == world.dc.bot_id), "Noted.")
    assert await running.pipeline.tracker.wait_idle(10)
    assert "the door code is 4471" in " ".join(await _kept(running, secret.id))
    await world.dc.user_deletes(secret)
    await _until_kept(running, secret.id, [])


async def test_deleted_chatter_leaves_and_the_rest_stays(world: World, run_bot) -> None:
    running = await run_bot(BUFFER_ALL_MESSAGES="true")
    kept = await world.dc.user_says(world.general, world.bob, "anyone up for chess?")
    gone = await world.dc.user_says(world.general, world.alice, "my new address is 9 Elm Street")
    await _until_kept(running, world.general, ["anyone up for chess?", "my new address is 9 Elm Street"])
    await world.dc.user_deletes(gone)
    await _until_kept(running, world.general, ["anyone up for chess?"])
    assert kept.content.endswith("anyone up for chess?")


async def test_messages_a_moderator_deletes_at_once_all_leave(world: World, run_bot) -> None:
    running = await run_bot(BUFFER_ALL_MESSAGES="true")
    said = [await world.dc.user_says(world.general, world.bob, f"message {i}") for i in range(3)]
    await _until_kept(running, world.general, ["message 0", "message 1", "message 2"])
    await world.dc.moderator_bulk_deletes(said[:2])
    await _until_kept(running, world.general, ["message 2"])


async def test_deleting_a_message_that_was_never_kept_changes_nothing(world: World, run_bot) -> None:
    running = await run_bot(BUFFER_ALL_MESSAGES="true")
    await world.dc.user_says(world.general, world.bob, "anyone up for chess?")
    await _until_kept(running, world.general, ["anyone up for chess?"])
    assert await running.services.channels.messages_deleted(world.general, ["1234567890"]) == 0
    assert await _kept(running, world.general) == ["anyone up for chess?"]
