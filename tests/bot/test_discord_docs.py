"""`/docs` and `search_docs` end to end: the product's bot on a real Runtime against the loopback
FakeDiscord and FakeOpenAI. An admin adds a document, a member asks about it and the answer
cites it; members without Manage Server, other servers and DMs get nothing of it; refusals
are one sentence."""

from __future__ import annotations

import json
import re
from typing import Any

from bot.discord_app.cogs.docs import NOT_PERMITTED, ONE_SOURCE
from tests.bot.conftest import request_text, system_text
from tests.bot.discord_fixtures import World, answer, final_answers
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeInteraction
from tests.fakes.openai_server import FakeOpenAI
from tests.memory.pdf_builder import pdf_bytes

RULES = b"""# Server rules

## 1. Be kind
No insults or harassment of any member.

## 3. No spam
Advertising other servers or products is not allowed in any channel.
"""
CITATION = re.compile(r"from \*([^*]+)\*, section ([^:\n]+):")


def _admin(world: World) -> str:
    admins = world.dc.add_role(world.guild, "admins", p.MANAGE_GUILD)
    return world.dc.add_member(world.guild, name="admin", roles=[admins])


def _searching_model(request: dict[str, Any]) -> str:
    """Searches the documents when it may and has not yet, then answers citing the first
    passage the search returned."""
    seen = CITATION.search(request_text(request).replace("\\n", "\n"))
    if seen is not None:
        return f"Final Answer: No advertising here (from *{seen.group(1)}*, section {seen.group(2)})."
    if "search_docs" in system_text(request):
        return 'Action: search_docs\nAction Input: {"query": "advertising other servers"}'
    return "Final Answer: I have no documents to go on."


async def _docs(world: World, user: str, subcommand: str, where: str | None = None,
                **options: Any) -> FakeInteraction:
    return await world.dc.invoke_command(where or world.general, user, "docs", options, subcommand=subcommand)


async def _told(world: World, inter: FakeInteraction) -> str:
    """The last ephemeral text the bot answered a /docs command with."""
    await world.dc.wait_for(lambda: final_answers(inter) and "thinking" not in final_answers(inter)[-1], timeout=20)
    assert inter.callback is not None and inter.callback.ephemeral
    return final_answers(inter)[-1]


async def test_an_admin_adds_a_document_and_a_members_answer_cites_it(world: World, run_bot,
                                                                      fake: FakeOpenAI) -> None:
    fake.responder = _searching_model
    admin = _admin(world)
    await run_bot()
    added = await _docs(world, admin, "add", file=("rules.md", RULES), title="Server rules")
    assert await _told(world, added) == ("Added *Server rules* (2 passages). I will answer from it in this "
                                         "server and cite it.")
    asked = await world.dc.user_says(world.general, world.bob, "can I advertise my server here?", mention_bot=True)
    reply = await answer(world, asked)
    await world.dc.wait_for(lambda: "(from *Server rules*" in reply.content)
    assert reply.content == "No advertising here (from *Server rules*, section Server rules > 3. No spam)."
    observation = next(r for r in fake.requests if "from *Server rules*" in request_text(r))
    assert "Advertising other servers" in request_text(observation)


async def test_another_server_and_a_dm_are_not_offered_the_documents(world: World, run_bot,
                                                                     fake: FakeOpenAI) -> None:
    fake.responder = _searching_model
    admin = _admin(world)
    await run_bot(ALLOW_DMS="true")
    await _told(world, await _docs(world, admin, "add", file=("rules.md", RULES), title="Server rules"))
    for channel in (world.elsewhere, world.alice_dm):
        asked = await world.dc.user_says(channel, world.alice, "can I advertise my server here?",
                                         mention_bot=channel != world.alice_dm)
        reply = await answer(world, asked) if channel != world.alice_dm else await world.dc.wait_for_message(
            channel, lambda m: m.author_id == world.dc.bot_id)
        await world.dc.wait_for(lambda: "documents" in reply.content)
        assert reply.content == "I have no documents to go on."
    assert not any("search_docs" in system_text(r) for r in fake.requests)


async def test_a_member_without_manage_server_cannot_add_or_remove(world: World, run_bot) -> None:
    await run_bot()
    for sub, options in (("add", {"file": ("rules.md", RULES)}), ("list", {}), ("export", {})):
        inter = await _docs(world, world.bob, sub, **options)
        assert await _told(world, inter) == NOT_PERMITTED
    assert await _told(world, await _docs(world, world.bob, "remove", document="x")) == NOT_PERMITTED


async def test_list_export_and_remove_cover_this_server_only(world: World, run_bot) -> None:
    admin = _admin(world)
    other_admin_role = world.dc.add_role(world.other_guild, "admins", p.MANAGE_GUILD)
    other_admin = world.dc.add_member(world.other_guild, name="otheradmin", roles=[other_admin_role])
    bot = await run_bot()
    await _told(world, await _docs(world, admin, "add", file=("rules.md", RULES), title="Server rules"))
    listed = await _told(world, await _docs(world, admin, "list"))
    assert listed.startswith("1. *Server rules* (markdown, 2 passages, added ")
    assert await _told(world, await _docs(world, other_admin, "list", where=world.elsewhere)) == (
        "This server has no documents yet; add one with /docs add.")

    exported = await _docs(world, admin, "export")
    await _told(world, exported)
    message = next(m for m in world.dc.messages.values() if m.interaction_id == exported.id and m.attachments)
    body = json.loads(world.dc.attachment_bytes(message.id))
    assert [d["title"] for d in body["documents"]] == ["Server rules"]
    assert body["documents"][0]["passages"][1]["section"] == "Server rules > 3. No spam"

    [doc] = await bot.services.documents.list(world.guild)
    refused = await _told(world, await _docs(world, other_admin, "remove", where=world.elsewhere, document=doc.id))
    assert refused.startswith("This server has no such document")
    assert await _told(world, await _docs(world, admin, "remove", document=doc.id)) == (
        "Removed *Server rules*; I no longer answer from it.")
    assert await bot.services.documents.list(world.guild) == []


async def test_refusals_are_one_sentence(world: World, run_bot) -> None:
    admin = _admin(world)
    await run_bot(DOCS_MAX_FILE_BYTES="2000")
    cases = [
        ({"file": ("scan.pdf", pdf_bytes([[], []]))}, "That PDF has no text in it (a scanned PDF?); add a PDF "
                                                      "with a text layer."),
        ({"file": ("song.mp3", b"ID3....")}, "I can read .txt, .md, .pdf, .html and .csv documents only."),
        ({"file": ("big.txt", b"word " * 1000)}, "That file is 5 KB; documents may be at most 2 KB."),
        ({"url": "http://127.0.0.1:9/rules.md"}, "I did not add it: that address is a local or private address; "
                                                 "not followed."),
        ({"url": "file:///etc/passwd"}, "I did not add it: that address is a file address, not http or https."),
        ({}, ONE_SOURCE),
        ({"file": ("rules.md", RULES), "url": "https://example.org/rules"}, ONE_SOURCE),
    ]
    for options, sentence in cases:
        assert await _told(world, await _docs(world, admin, "add", **options)) == sentence


async def test_remove_offers_this_servers_documents_by_title_as_you_type_to_its_admins_only(world: World, run_bot) -> None:
    admin = _admin(world)
    await run_bot()
    for title in ("Server rules", "Raid guide", "FAQ for raiders"):
        await _told(world, await _docs(world, admin, "add", file=("doc.md", RULES), title=title))
    choices = await world.dc.autocomplete(world.general, admin, "docs", "document", "RAID", subcommand="remove")
    assert [c["name"] for c in choices] == ["Raid guide", "FAQ for raiders"]
    other_role = world.dc.add_role(world.other_guild, "admins", p.MANAGE_GUILD)
    other_admin = world.dc.add_member(world.other_guild, name="otheradmin", roles=[other_role])
    for channel, member in ((world.general, world.bob), (world.elsewhere, other_admin)):
        assert await world.dc.autocomplete(channel, member, "docs", "document", "",
                                           subcommand="remove") == []  # not an admin here / another server's
