"""Images attached to a question: checked and converted with Pillow, described for storage.

An image is read only for a model that can see images (`model_sees_images`): its bytes must be
at most IMAGE_MAX_BYTES, Pillow must recognise it as PNG, JPEG, WebP or GIF (by its content,
not its name), it must be at most MAX_PIXELS (a decompression bomb is refused before it is
decoded), and it must decode whole (a truncated or corrupt file is refused). A GIF is sent as
its first frame, re-encoded as PNG (models take still images). At most IMAGE_MAX_COUNT images
of one message are sent; the rest are named only. A refused image gets one short sentence.

What is stored (channel buffer, memory, trace) is the question's text, which carries only a
short description of each image (`describe`: file name and size), never its bytes.

Decoding is blocking work: `read_image` is meant to run in a thread (asyncio.to_thread).
Part of bot/: platform-free; imports agent.images for the image type.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from agent.images import ImageInput
from bot.settings.config import Settings
from bot.settings.model_catalog import model_for_turn
from bot.settings.place import PlaceSettings

__all__ = [
    "MAX_PIXELS",
    "NO_VISION",
    "ImageIntake",
    "describe",
    "intake",
    "model_sees_images",
    "read_image",
    "too_big",
    "unseen",
]

log = logging.getLogger(__name__)

# 12 MP: a phone's 4000×3000 photo; vision models scale every image down to about 2 MP anyway,
# and decoding costs memory by the pixel (a 40 MP PNG of 155 KB took 240 MB and 0.45 s)
MAX_PIXELS = 12_000_000
_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/png"}
NO_VISION = "(I can't see images with this model, so I answered from your text alone.)"


def model_sees_images(settings: Settings, place: PlaceSettings) -> bool:
    """Whether the model of a turn in ``place`` reads images: the one place that decides (the
    catalogue entry's vision flag, bot.settings.model_catalog; LLM_VISION for the default model)."""
    return model_for_turn(settings.models, place.model).vision


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    return f"{n / 1000:.0f} KB" if n >= 1000 else f"{n} bytes"


def describe(name: str, size: int, *, note: str = "") -> str:
    """What the stored question says of an image: "[image: cat.png, 12 KB]"."""
    return f"[image: {name}, {_size(size)}{'; ' + note if note else ''}]"


def too_big(name: str, size: int, max_bytes: int) -> str | None:
    """The sentence for an image over the size limit (checked before downloading it too)."""
    if size > max_bytes:
        return f"{name} is {_size(size)}, over the {_size(max_bytes)} limit for images."
    return None


def read_image(name: str, data: bytes, *, max_bytes: int) -> ImageInput | str:
    """The image to send, or the sentence saying why it cannot be (never raises for bad data)."""
    if (problem := too_big(name, len(data), max_bytes)) is not None:
        return problem
    try:
        with Image.open(io.BytesIO(data)) as probe:
            kind = probe.format or ""
            if kind not in _TYPES:
                return f"{name} is not a PNG, JPEG, WebP or GIF image."
            width, height = probe.size
            if width * height > MAX_PIXELS:
                return f"{name} is {width}×{height} pixels, too large for me to read."
            probe.verify()  # structure and checksums, without decoding
        with Image.open(io.BytesIO(data)) as image:
            image.load()  # decodes: a truncated or corrupt body fails here
            if kind != "GIF":
                return ImageInput(name, _TYPES[kind], data)
            frame = io.BytesIO()
            image.seek(0)
            image.convert("RGBA").save(frame, format="PNG")
            return ImageInput(name, "image/png", frame.getvalue())
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError, ValueError) as exc:
        log.info("image %s refused: %s", name, exc)
        return f"I could not read {name}: it is damaged or not really an image."


@dataclass(frozen=True, slots=True)
class ImageIntake:
    """What a message's images become: ``images`` for the model, ``notes`` for the stored
    question, ``problems`` (sentences for the person: the turn does not run) and a ``preface``
    for the answer (the model cannot see them, or some were left out)."""

    images: tuple[ImageInput, ...] = ()
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    preface: str = ""

    def question(self, text: str) -> str:
        """The question with the images' descriptions after it."""
        return "\n".join([text, *self.notes]).strip() if self.notes else text


def unseen(files: Sequence[tuple[str, int]]) -> ImageIntake:
    """Images (name, size) for a model that cannot see them: named only, and the answer says so."""
    if not files:
        return ImageIntake()
    return ImageIntake(notes=tuple(describe(n, size, note="not shown: this model cannot see images")
                                   for n, size in files), preface=NO_VISION)


def intake(files: Sequence[tuple[str, bytes]], *, max_bytes: int, max_count: int,
           skipped: Sequence[tuple[str, int]] = ()) -> ImageIntake:
    """Read ``files`` ((name, bytes) of a message's first ``max_count`` images) for a model that
    sees images; ``skipped`` (name, size) are the ones past the count, named only.

    Blocking (decodes images): run it in a thread.
    """
    images: list[ImageInput] = []
    notes: list[str] = []
    problems: list[str] = []
    for name, data in files[:max_count]:
        read = read_image(name, data, max_bytes=max_bytes)
        if isinstance(read, str):
            problems.append(read)
        else:
            images.append(read)
            notes.append(describe(name, len(data)))
    notes += [describe(n, size, note="not shown: too many images") for n, size in skipped]
    preface = f"(I looked at the first {max_count} images only.)" if skipped else ""
    return ImageIntake(tuple(images), tuple(notes), tuple(problems), preface)
