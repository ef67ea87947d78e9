"""What one member can make the bot do, against the fake Discord and the fake model: DMs under
the operator's allow lists, the operator's cooldown as a floor of /settings, /trace's
permission read in the answer's channel, images fetched only for a turn let in (and capped in
pixels), and at most two turns of one person in flight."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from PIL import Image

from bot.turn.images import MAX_PIXELS
from tests.bot.discord_fixtures import World, answer, final_answers
from tests.fakes import discord_payloads as p
from tests.fakes.openai_server import FakeOpenAI

REFUSED_TRACE = "Only the person who asked"


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("1", (width, height), 1).save(out, format="PNG")  # a bomb: few bytes, many pixels
    return out.getvalue()


async def _last_content(world: World, inter: Any) -> str:
    await world.dc.wait_for(lambda: any(e.kind in ("followup", "original_edit") for e in inter.events), timeout=15)
    edits = [e for e in inter.events if e.kind in ("followup", "original_edit")]
    return str(edits[-1].json.get("content") or "")


# ------------------------------------------------------------------ DMs and the allow lists


async def test_with_a_guild_allow_list_a_dm_from_someone_outside_it_is_not_answered(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: hello"
    await run_bot(ALLOWED_GUILD_IDS=world.other_guild)
    carol = world.dc.add_member(world.guild, name="carol")  # of Guild One only
    carol_dm = world.dc.add_dm_channel(carol)
    ignored = await world.dc.user_says(carol_dm, carol, "hi from outside")
    served = await world.dc.user_says(world.alice_dm, world.alice, "hi from a member")  # alice: of Guild Two
    assert "hello" in (await answer(world, served)).content
    await asyncio.sleep(0.5)
    assert not [m for m in world.dc.bot_messages(carol_dm) if m.reference_id == ignored.id]
    assert len(fake.requests) == 1


async def test_with_a_role_allow_list_a_dm_needs_the_role(world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: hello"
    await run_bot(ALLOWED_ROLE_IDS=world.roles["moderators"])
    mod_dm = world.dc.add_dm_channel(world.mod)
    refused = await world.dc.user_says(world.alice_dm, world.alice, "may I?")
    served = await world.dc.user_says(mod_dm, world.mod, "and I?")
    assert "hello" in (await answer(world, served)).content
    await asyncio.sleep(0.5)
    assert not [m for m in world.dc.bot_messages(world.alice_dm) if m.reference_id == refused.id]


async def test_a_dm_slash_command_from_outside_the_guild_list_is_refused(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot(ALLOWED_GUILD_IDS=world.guild)
    stranger = world.dc.add_member(world.other_guild, name="stranger")
    inter = await world.dc.invoke_command(world.dc.add_dm_channel(stranger), stranger, "usage")
    await world.dc.wait_for(lambda: inter.callback is not None, timeout=15)
    assert "not" in str(inter.callback.json["data"]["content"]).lower()  # type: ignore[union-attr]


# ------------------------------------------------------------------ the operator's cooldown floor


async def test_settings_cannot_set_a_cooldown_below_the_operators(world: World, run_bot, fake: FakeOpenAI) -> None:
    running = await run_bot(USER_COOLDOWN_S="30", ADMIN_USER_IDS=world.mod)
    inter = await world.dc.invoke_command(world.general, world.mod, "settings", {"key": "cooldown", "value": "0"},
                                          subcommand="set")
    await world.dc.wait_for(lambda: final_answers(inter), timeout=15)
    told = final_answers(inter)[-1]
    assert told.startswith("Cooldown must be between 30 seconds (the operator's minimum)")
    assert running.runtime.places.rows(world.guild) == []


# ------------------------------------------------------------------ /trace


async def test_manage_messages_where_trace_is_run_does_not_open_an_answer_of_a_channel_that_denies_it(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: the secret plan"
    running = await run_bot()
    asked = await world.dc.user_says(world.general, world.alice, "plan?", mention_bot=True)
    answered = await answer(world, asked)
    for _ in range(150):  # the turn is stored (memory, then its trace) after the answer is sent
        if await running.services.traces.trace_for_message(str(answered.id)) is not None:
            break
        await asyncio.sleep(0.1)
    world.dc.deny_in_channel(world.general, world.roles["moderators"], p.MANAGE_MESSAGES)
    general = running.bot.get_channel(int(world.general))
    await world.dc.wait_for(lambda: general.overwrites, timeout=15)  # the CHANNEL_UPDATE reached the cache
    link = f"https://discord.com/channels/{world.guild}/{world.general}/{answered.id}"
    inter = await world.dc.invoke_command(world.random, world.mod, "trace", {"message": link})
    assert (await _last_content(world, inter)).startswith(REFUSED_TRACE)
    assert world.dc.threads == []


# ------------------------------------------------------------------ images


async def test_an_image_is_not_downloaded_for_a_person_in_their_cooldown(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: seen"
    await run_bot(LLM_VISION="true", USER_COOLDOWN_S="600")
    first = await world.dc.user_says(world.general, world.alice, "first", mention_bot=True)
    await answer(world, first)
    again = await world.dc.user_says(world.general, world.alice, "look", mention_bot=True,
                                     attachments=[("big.png", png(4000, 3000))])
    told = await answer(world, again)
    assert told.content.startswith("You're going a bit fast")
    assert world.dc.attachment_downloads == []  # nothing fetched, nothing decoded
    assert len(fake.requests) == 1


async def test_an_image_over_twelve_megapixels_is_refused_and_a_phone_photo_is_read(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.default_content = "Final Answer: seen"
    await run_bot(LLM_VISION="true", USER_COOLDOWN_S="0")
    assert MAX_PIXELS == 12_000_000
    asked = await world.dc.user_says(world.general, world.alice, "look", mention_bot=True,
                                     attachments=[("bomb.png", png(4100, 3000))])
    assert "4100×3000 pixels, too large" in (await answer(world, asked)).content
    assert fake.requests == []
    photo = await world.dc.user_says(world.general, world.alice, "and this", mention_bot=True,
                                     attachments=[("phone.png", png(4000, 3000))])
    assert "seen" in (await answer(world, photo)).content


# ------------------------------------------------------------------ turns in flight


async def test_a_members_third_concurrent_turn_is_told_to_wait_and_the_others_are_answered(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    """Auto-threads give each turn its own channel: alice's first two turns hold, her third is
    told to wait at once, bob is answered meanwhile."""
    gate = asyncio.Event()

    async def responder(request: dict[str, Any]) -> str:
        if "bob" not in str(request["messages"][-1]["content"]):
            await asyncio.wait_for(gate.wait(), 30)
        return "Final Answer: done"

    fake.responder = responder
    await run_bot(MAX_CONCURRENT_TURNS="8")
    channels = [world.general, world.random, world.dc.add_channel(world.guild, "third")]
    held = [await world.dc.user_says(channels[i], world.alice, f"long question {i}", mention_bot=True)
            for i in range(2)]
    await world.dc.wait_for(lambda: len(fake.requests) == 2, timeout=15)
    third = await world.dc.user_says(channels[2], world.alice, "and another", mention_bot=True)
    told = await answer(world, third)
    assert told.content.startswith("I'm still answering your other questions")
    bobs = await world.dc.user_says(channels[2], world.bob, "bob here", mention_bot=True)
    assert "done" in (await answer(world, bobs)).content
    gate.set()
    for asked in held:
        assert "done" in (await answer(world, asked)).content
