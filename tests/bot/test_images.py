"""Images: checked and converted with Pillow (bot.turn.images), and end to end against the fake
Discord and the fake model: an image part in both protocols, a model without vision saying so,
a bad image answered with one sentence, and only a description stored."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from PIL import Image

from bot.settings.config import load_settings
from bot.turn.images import NO_VISION, describe, intake, model_sees_images, read_image, unseen
from bot.settings.place import DEFAULTS, PlaceSettings
from tests.bot.discord_fixtures import World, answer, answered, shown_for, shows
from tests.fakes.openai_server import FakeOpenAI

LIMIT = 1_000_000


def picture(kind: str, size: tuple[int, int] = (8, 6), *, mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, 1 if mode == "1" else (200, 30, 30)).save(out, format=kind)
    return out.getvalue()


def animated_gif() -> bytes:
    frames = [Image.new("RGB", (4, 4), c) for c in ((255, 0, 0), (0, 0, 255))]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    return out.getvalue()


def image_parts(request: dict[str, Any]) -> list[str]:
    """The data URLs of the image parts of a chat request's last user message."""
    content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(content, str):
        return []
    return [part["image_url"]["url"] for part in content if part.get("type") == "image_url"]


def question_text(request: dict[str, Any]) -> str:
    content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")


# --- which model sees images ----------------------------------------------------------------

VISION_MODELS = '[{"name": "llava", "vision": true}, {"name": "plain"}]'


@pytest.mark.parametrize(("env", "model", "sees"), [
    ({}, None, False),                                   # the default model, nothing said
    ({"LLM_VISION": "true"}, None, True),                # LLM_VISION marks the default model
    ({"LLM_MODELS": VISION_MODELS}, "llava", True),      # a place's model with vision: true
    ({"LLM_MODELS": VISION_MODELS}, "plain", False),     # one without it
    ({"LLM_MODELS": VISION_MODELS, "LLM_VISION": "true"}, "plain", False),  # LLM_VISION is the default's only
    ({"LLM_MODELS": VISION_MODELS}, "removed", False),   # a model the operator removed: the default's flag
])
def test_whether_images_are_read_follows_the_places_model(env: dict[str, str], model: str | None,
                                                         sees: bool) -> None:
    settings = load_settings({"LLM_MODEL": "fake-model", **env})
    place = DEFAULTS if model is None else PlaceSettings(model=model)
    assert model_sees_images(settings, place) is sees


# --- reading one image ---------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "media_type"), [("PNG", "image/png"), ("JPEG", "image/jpeg"),
                                                  ("WEBP", "image/webp")])
def test_png_jpeg_and_webp_are_sent_as_they_came(kind: str, media_type: str) -> None:
    data = picture(kind)
    image = read_image("photo", data, max_bytes=LIMIT)
    assert not isinstance(image, str)
    assert (image.media_type, image.data) == (media_type, data)


def test_a_gif_is_sent_as_its_first_frame_in_png() -> None:
    image = read_image("anim.gif", animated_gif(), max_bytes=LIMIT)
    assert not isinstance(image, str) and image.media_type == "image/png"
    with Image.open(io.BytesIO(image.data)) as frame:
        assert frame.format == "PNG" and frame.convert("RGB").getpixel((1, 1)) == (255, 0, 0)


@pytest.mark.parametrize(("name", "data", "says"), [
    ("cut.png", picture("PNG", (64, 64))[:-40], "damaged or not really an image"),
    ("notes.png", b"these are not pixels at all", "damaged or not really an image"),
    ("empty.png", b"", "damaged or not really an image"),
    ("scan.bmp", picture("BMP"), "not a PNG, JPEG, WebP or GIF image"),
    ("huge.png", picture("PNG", (8000, 6000), mode="1"), "8000×6000 pixels, too large"),  # a bomb: small file
    ("big.png", picture("PNG") + b"\0" * LIMIT, "over the 1.0 MB limit"),
])
def test_a_bad_or_huge_image_gets_one_sentence_naming_it(name: str, data: bytes, says: str) -> None:
    refused = read_image(name, data, max_bytes=LIMIT)
    assert isinstance(refused, str) and name in refused and says in refused


def test_images_past_the_count_are_named_but_not_sent() -> None:
    files = [(f"p{i}.png", picture("PNG")) for i in range(2)]
    seen = intake(files, max_bytes=LIMIT, max_count=2, skipped=[("p2.png", 70)])
    assert [i.name for i in seen.images] == ["p0.png", "p1.png"] and not seen.problems
    assert seen.notes[-1] == describe("p2.png", 70, note="not shown: too many images")
    assert seen.preface == "(I looked at the first 2 images only.)"
    assert seen.question("what are these?").splitlines()[0] == "what are these?"


def test_for_a_model_without_vision_images_are_only_named() -> None:
    seen = unseen([("cat.png", 12_345)])
    assert seen.images == () and seen.preface == NO_VISION
    assert seen.question("who is this?") == "who is this?\n[image: cat.png, 12 KB; not shown: this model cannot see images]"


# --- end to end ----------------------------------------------------------------------------


async def test_a_mentioned_image_reaches_the_model_as_an_image_part_and_only_its_name_is_stored(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    png = picture("PNG")
    fake.reply("Final Answer: a red rectangle")
    bot = await run_bot(LLM_VISION="true", LLM_PROTOCOL="text")
    asked = await world.dc.user_says(world.general, world.alice, "what is this?", mention_bot=True,
                                     attachments=[("shape.png", png)])
    reply = await answer(world, asked)
    await shows(world, reply, "a red rectangle")
    [url] = image_parts(fake.requests[0])
    assert url == "data:image/png;base64," + base64.b64encode(png).decode()
    assert question_text(fake.requests[0]) == f"what is this?\n[image: shape.png, {len(png)} bytes]"
    await bot.pipeline.tracker.wait_idle(5)
    [stored, _] = await bot.runtime.buffer.recent(world.general)
    assert stored.content == question_text(fake.requests[0])  # the description, never the bytes
    assert base64.b64encode(png).decode()[:40] not in str(await bot.runtime.user_memory.export(world.alice))


async def test_an_image_given_to_ask_reaches_the_model_in_the_native_protocol(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    jpeg = picture("JPEG", (16, 16))
    fake.reply("a blue square, I think")
    await run_bot(LLM_VISION="true", LLM_PROTOCOL="native")
    inter = await world.dc.invoke_command(world.general, world.alice, "ask",
                                          {"question": "and this?", "image": ("sq.jpg", jpeg)})
    await world.dc.wait_for(lambda: shown_for(world, inter) == ["a blue square, I think"])
    request = fake.requests[0]
    assert request.get("tools")  # native tool calling
    assert image_parts(request) == ["data:image/jpeg;base64," + base64.b64encode(jpeg).decode()]


async def test_a_model_without_vision_answers_saying_it_cannot_see_the_image(
        world: World, run_bot, fake: FakeOpenAI) -> None:
    fake.reply("Final Answer: Tell me what it shows and I will help.")
    await run_bot()  # LLM_VISION unset: false
    asked = await world.dc.user_says(world.general, world.alice, "what is this?", mention_bot=True,
                                     attachments=[("shape.png", picture("PNG"))])
    # not "Tell me" in the content: a slowly written answer's preview shows a part of it first
    await answered(world, asked, f"{NO_VISION}\n\nTell me what it shows and I will help.")
    assert image_parts(fake.requests[0]) == []
    assert "not shown: this model cannot see images" in question_text(fake.requests[0])


async def test_a_broken_image_gets_the_sentence_and_no_answer(world: World, run_bot, fake: FakeOpenAI) -> None:
    await run_bot(LLM_VISION="true")
    asked = await world.dc.user_says(world.general, world.alice, "what is this?", mention_bot=True,
                                     attachments=[("broken.png", picture("PNG", (64, 64))[:-40])])
    reply = await answer(world, asked)
    assert reply.content == "I could not read broken.png: it is damaged or not really an image."
    assert fake.requests == []  # the model was never asked
