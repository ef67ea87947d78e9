"""Messages addressed to the bot, end to end: the real discord.py client logged into FakeDiscord,
the real pipeline on SQLite + embedded Chroma, a loopback FakeOpenAI as the model."""

from __future__ import annotations

import pytest

from bot.errors import sentence_for
from bot.turn.history import QUOTE_MARK
from tests.bot.conftest import last_user_text
from tests.bot.discord_fixtures import World, answer, sent_by_bot, shows
from tests.fakes.openai_server import FakeOpenAI


async def test_a_mention_is_answered_as_a_reply_with_the_mention_stripped_while_typing(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Paris.")
    await run_bot()
    asked = await world.dc.user_says(world.general, world.alice, "what is the capital of France?",
                                     mention_bot=True)
    reply = await answer(world, asked)
    await shows(world, reply, "Paris.")
    assert reply.reference_id == asked.id
    assert last_user_text(fake.requests[-1]) == "what is the capital of France?"
    typing = [t for t in world.dc.typing_events if t.channel_id == world.general]
    assert typing and typing[0].at <= reply.created_at


async def test_messages_of_other_bots_and_of_the_bot_itself_are_ignored(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    # The bot's own answer mentions itself: were its own messages not ignored, it would loop.
    fake.reply(f"Final Answer: I am <@{world.dc.bot_id}>.")
    fake.default_content = "Final Answer: second answer"
    await run_bot()
    await world.dc.user_says(world.general, world.helper_bot, "hello fellow bot", mention_bot=True)
    first = await answer(world, await world.dc.user_says(world.general, world.alice, "who are you?",
                                                         mention_bot=True))
    second = await answer(world, await world.dc.user_says(world.general, world.alice, "and now?",
                                                          mention_bot=True))
    await shows(world, first, f"I am <@{world.dc.bot_id}>.")
    await shows(world, second, "second answer")
    assert [last_user_text(r) for r in fake.requests] == ["who are you?", "and now?"]
    assert len(sent_by_bot(world, world.general)) == 2


async def test_a_reply_to_the_bots_message_is_talking_to_it(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.replies("Final Answer: Paris.", "Final Answer: Berlin.")
    await run_bot()
    first = await answer(world, await world.dc.user_says(world.general, world.alice, "capital of France?",
                                                         mention_bot=True))
    follow_up = await world.dc.user_says(world.general, world.alice, "and of Germany?",
                                         reply_to=first.id)
    second = await answer(world, follow_up)
    await shows(world, second, "Berlin.")
    assert second.reference_id == follow_up.id
    assert last_user_text(fake.requests[-1]) == "and of Germany?"


async def test_a_reply_to_the_bot_without_the_ping_is_answered_when_content_is_visible(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.replies("Final Answer: Paris.", "Final Answer: Berlin.")
    await run_bot(BUFFER_ALL_MESSAGES="true")
    first = await answer(world, await world.dc.user_says(world.general, world.alice, "capital of France?",
                                                         mention_bot=True))
    second = await answer(world, await world.dc.user_says(world.general, world.alice, "and of Germany?",
                                                           reply_to=first.id, mention_replied=False))
    await shows(world, second, "Berlin.")
    assert last_user_text(fake.requests[-1]) == "and of Germany?"


async def test_a_reply_without_the_ping_that_arrives_blank_is_left_alone(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    # Without the message-content intent Discord blanks such a reply: nothing to answer.
    fake.replies("Final Answer: Paris.", "Final Answer: Rome.")
    await run_bot()
    first = await answer(world, await world.dc.user_says(world.general, world.alice, "capital of France?",
                                                         mention_bot=True))
    blank = await world.dc.user_says(world.general, world.alice, "and of Germany?", reply_to=first.id,
                                     mention_replied=False)
    served = await answer(world, await world.dc.user_says(world.general, world.alice, "capital of Italy?",
                                                          mention_bot=True))
    await shows(world, served, "Rome.")
    assert not [m for m in sent_by_bot(world, world.general) if m.reference_id == blank.id]
    assert [last_user_text(r) for r in fake.requests] == ["capital of France?", "capital of Italy?"]


async def test_other_chatter_is_kept_as_context_only_with_buffer_all_messages(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: ok"
    running = await run_bot(BUFFER_ALL_MESSAGES="true")
    await world.dc.user_says(world.general, world.bob, "the meeting moved to Thursday")
    await answer(world, await world.dc.user_says(world.general, world.alice, "when is the meeting?",
                                                 mention_bot=True))
    history = [m["content"] for m in fake.requests[-1]["messages"][1:-1]]
    assert history == [f"{QUOTE_MARK} bob (user {world.bob}) wrote:\n> the meeting moved to Thursday"]
    assert world.dc.identifies[-1]["intents"] & (1 << 15)  # message content: asked for
    assert running.bot.intents.message_content


async def test_without_buffer_all_messages_the_message_content_intent_is_not_requested(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: ok"
    await run_bot()
    await world.dc.user_says(world.general, world.bob, "chatter the bot should not keep")
    await answer(world, await world.dc.user_says(world.general, world.alice, "hello", mention_bot=True))
    assert len(fake.requests[-1]["messages"]) == 2  # system prompt + the question, no chatter
    assert not world.dc.identifies[-1]["intents"] & (1 << 15)


async def test_any_direct_message_is_answered(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Hello Alice.")
    await run_bot()
    asked = await world.dc.user_says(world.alice_dm, world.alice, "hello there")
    reply = await answer(world, asked)
    await shows(world, reply, "Hello Alice.")
    assert reply.reference_id == asked.id
    assert last_user_text(fake.requests[-1]) == "hello there"


async def test_a_text_attachment_is_read_into_the_question(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: pineapple")
    await run_bot()
    asked = await world.dc.user_says(world.general, world.alice, "what is the secret word in this file?",
                                     mention_bot=True,
                                     attachments=[("notes.txt", b"the secret word is pineapple\n")])
    await answer(world, asked)
    question = last_user_text(fake.requests[-1])
    assert question.startswith("what is the secret word in this file?")
    assert "notes.txt" in question and "the secret word is pineapple" in question


async def test_an_image_attachment_is_only_named_for_a_model_without_vision(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: a cat, I suppose")
    await run_bot()
    image = b"\x89PNG\r\n\x1a\n" + b"IMAGEDATA" * 50
    await answer(world, await world.dc.user_says(world.general, world.alice, "what is in this picture?",
                                                 mention_bot=True, attachments=[("cat.png", image)]))
    question = last_user_text(fake.requests[-1])
    assert "[image: cat.png, 458 bytes; not shown: this model cannot see images]" in question
    assert "IMAGEDATA" not in question


class _LostFiles(dict):
    """The CDN side of FakeDiscord after it lost every upload: attachment downloads get 404."""

    def __setitem__(self, key: str, value: bytes) -> None:
        pass


async def test_an_attachment_that_cannot_be_downloaded_is_named_and_the_question_answered(
        world: World, run_bot, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.reply("Final Answer: answered anyway")
    await run_bot()
    monkeypatch.setattr(world.dc, "files", _LostFiles())
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "read this",
                                                         mention_bot=True, attachments=[("notes.txt", b"lost")]))
    await shows(world, reply, "answered anyway")
    question = last_user_text(fake.requests[-1])
    assert question.startswith("read this")
    assert "[Attachment not read: notes.txt could not be downloaded]" in question


async def test_a_mention_with_nothing_to_ask_gets_a_sentence_not_a_model_call(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot()
    reply = await answer(world, await world.dc.user_says(world.general, world.alice, "", mention_bot=True))
    assert reply.content == sentence_for("empty")
    assert fake.requests == []
