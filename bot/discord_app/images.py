"""A message's (or /ask's) image attachments, fetched and read for the model (bot.turn.images).

An attachment is an image by its content type (image/...) or its file name (.png, .jpg,
.jpeg, .webp, .gif); Pillow then decides what it really is. Nothing is downloaded for a model
that cannot see images, or for an image over IMAGE_MAX_BYTES by its announced size, and the
cogs download only for a turn the pipeline has let in (access, cooldown, budget, the person's
turns in flight: TurnPipeline.admit). Decoding runs in a pool of DECODE_WORKERS threads of its
own, so that images decode at most that many at once, whoever sends them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import PurePath

import aiohttp
import discord

from bot.settings.config import Settings
from bot.turn.images import ImageIntake, intake, model_sees_images, too_big, unseen
from bot.settings.place import PlaceSettings

__all__ = ["DECODE_WORKERS", "IMAGE_SUFFIXES", "is_image", "take_images", "will_download"]

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})
DECODE_WORKERS = 2  # images decoded at once, over all turns (each may take hundreds of MB)
_DECODE_POOL = ThreadPoolExecutor(max_workers=DECODE_WORKERS, thread_name_prefix="image-decode")


def is_image(attachment: discord.Attachment) -> bool:
    """Whether the attachment claims to be an image (by content type or file name)."""
    return ((attachment.content_type or "").startswith("image/")
            or PurePath(attachment.filename).suffix.lower() in IMAGE_SUFFIXES)


def will_download(attachments: Sequence[discord.Attachment], settings: Settings, place: PlaceSettings) -> bool:
    """Whether `take_images` would download ``attachments`` (a model that sees images)."""
    return bool(attachments) and model_sees_images(settings, place)


async def take_images(attachments: Sequence[discord.Attachment], settings: Settings,
                      place: PlaceSettings) -> ImageIntake:
    """The images of ``attachments`` for the model of a turn in ``place`` (see bot.turn.images.ImageIntake)."""
    if not attachments:
        return ImageIntake()
    if not model_sees_images(settings, place):
        return unseen([(a.filename, a.size) for a in attachments])
    limits = settings.features
    files: list[tuple[str, bytes]] = []
    problems: list[str] = []
    for att in attachments[:limits.image_max_count]:
        if (problem := too_big(att.filename, att.size, limits.image_max_bytes)) is not None:
            problems.append(problem)
            continue
        try:
            files.append((att.filename, await att.read()))
        except (discord.HTTPException, aiohttp.ClientError, asyncio.TimeoutError) as exc:
            log.warning("could not download image %s: %s", att.filename, exc)
            problems.append(f"I could not download {att.filename}.")
    skipped = [(a.filename, a.size) for a in attachments[limits.image_max_count:]]
    read = await asyncio.get_running_loop().run_in_executor(
        _DECODE_POOL, functools.partial(intake, files, max_bytes=limits.image_max_bytes,
                                        max_count=limits.image_max_count, skipped=skipped))
    return dataclasses.replace(read, problems=(*problems, *read.problems))
