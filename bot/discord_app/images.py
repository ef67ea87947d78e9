"""A message's (or /ask's) image attachments, fetched and read for the model (bot.turn.images).

An attachment is an image by its content type (image/...) or its file name (.png, .jpg,
.jpeg, .webp, .gif); Pillow then decides what it really is. Nothing is downloaded for a model
that cannot see images, or for an image over IMAGE_MAX_BYTES by its announced size; decoding
runs in a thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from pathlib import PurePath

import aiohttp
import discord

from bot.settings.config import Settings
from bot.turn.images import ImageIntake, intake, model_sees_images, too_big, unseen
from bot.settings.place import PlaceSettings

__all__ = ["IMAGE_SUFFIXES", "is_image", "take_images"]

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})


def is_image(attachment: discord.Attachment) -> bool:
    """Whether the attachment claims to be an image (by content type or file name)."""
    return ((attachment.content_type or "").startswith("image/")
            or PurePath(attachment.filename).suffix.lower() in IMAGE_SUFFIXES)


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
    read = await asyncio.to_thread(intake, files, max_bytes=limits.image_max_bytes,
                                   max_count=limits.image_max_count, skipped=skipped)
    return dataclasses.replace(read, problems=(*problems, *read.problems))
