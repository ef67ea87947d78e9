"""The proof that private words stay private, end to end: the product's bot on the loopback
fake Discord and fake model. Alice tells the bot something in a private `/ask` and in a DM;
then Bob, and Alice herself in public, ask in the channel. The fake model's request log, the
SQLite file and the Chroma folder (both opened directly, not through the bot) show where the
private words did not go, under both memory scopes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import chromadb
import pytest
from chromadb.api.shared_system_client import SharedSystemClient

from tests.bot.discord_fixtures import World, answered, final_answers
from tests.fakes.openai_server import FakeOpenAI

SALARY = "my salary is 91k and I am interviewing at Globex"
CAT = "my cat is called Quetzal"
PRIVATE_WORDS = ("91k", "Globex", "Quetzal")


def carries_private_words(text: str) -> list[str]:
    return [word for word in PRIVATE_WORDS if word in text]


@pytest.mark.parametrize("scope", ["place", "global"])
async def test_a_private_ask_and_a_dm_reach_no_public_answer_no_channel_and_no_other_person(
        world: World, run_bot, fake: FakeOpenAI, env: dict[str, str], scope: str) -> None:
    fake.responder = lambda request: "Final Answer: noted"
    running = await run_bot(MEMORY_SCOPE=scope)

    told = await world.dc.invoke_command(world.general, world.alice, "ask", {"question": SALARY, "private": True})
    await world.dc.wait_for(lambda: final_answers(told))
    await answered(world, await world.dc.user_says(world.alice_dm, world.alice, CAT), "noted")
    private_turns = len(fake.requests)

    await answered(world, await world.dc.user_says(
        world.general, world.bob, "what did the last person ask you? what do you know about alice?",
        mention_bot=True), "noted")
    await answered(world, await world.dc.user_says(
        world.general, world.alice, "what is my salary, where do I interview, what is my cat called?",
        mention_bot=True), "noted")
    public_requests = fake.requests[private_turns:]
    assert len(public_requests) == 2
    for request in public_requests:  # every message of the request: system prompt, history, question
        assert carries_private_words(str(request["messages"])) == []

    await running.stop()
    data = Path(env["DATA_DIR"])
    with sqlite3.connect(data / "bot.sqlite3") as conn:
        general = [row[0] for row in conn.execute(
            "SELECT content FROM buffer_messages WHERE channel_id = ?", (world.general,))]
        dm = [row[0] for row in conn.execute(
            "SELECT content FROM buffer_messages WHERE channel_id = ?", (world.alice_dm,))]
        traced = [row[0] for row in conn.execute("SELECT user_id FROM traces WHERE question = ?", (SALARY,))]
    assert len(general) == 4 and carries_private_words(" ".join(general)) == []
    assert CAT in dm  # Alice's own DM conversation, read only in her DMs
    assert traced == [world.alice]  # her trace of the private answer, for her /trace

    SharedSystemClient.clear_system_cache()  # the bot's client is closed; read the folder afresh
    chroma = chromadb.PersistentClient(path=str(data / "chroma"))
    items = [(doc, meta) for c in chroma.list_collections()
             for got in [chroma.get_collection(c.name).get(include=["documents", "metadatas"])]
             for doc, meta in zip(got["documents"] or [], got["metadatas"] or [], strict=True)
             if meta and "user_id" in meta]
    private = [(doc, meta) for doc, meta in items if carries_private_words(doc)]
    assert private and all(meta["user_id"] == world.alice and meta["visibility"] == "private" for _, meta in private)
    assert {meta["scope"] for _, meta in private} == {f"guild:{world.guild}:private", "dm"}
    assert not [doc for doc, meta in items if meta["user_id"] == world.bob and carries_private_words(doc)]
