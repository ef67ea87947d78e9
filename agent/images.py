"""Images sent to the model with a question: OpenAI chat content parts (``image_url`` data URLs).

The same user message goes out in every protocol (text ReAct and native tool calling): the
question as a text part, then one part per image. What an image is, and whether the model can
see it, is for the caller to decide (bot.turn.images checks and converts them).

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["IMAGE_TOKENS", "ImageInput", "content_chars", "user_content"]

# Tokens an image is counted as when a server reports no usage: OpenAI's figure for one
# 1024x1024 image at high detail (85 base + 4 tiles of 170), from its vision pricing guide.
IMAGE_TOKENS = 765


@dataclass(frozen=True, slots=True)
class ImageInput:
    """One image: its file name (for logs), MIME type (image/png, image/jpeg, ...) and bytes."""

    name: str
    media_type: str
    data: bytes = field(repr=False)

    def content_part(self) -> dict[str, Any]:
        """The OpenAI chat content part carrying the image as a base64 data URL."""
        encoded = base64.b64encode(self.data).decode("ascii")
        return {"type": "image_url", "image_url": {"url": f"data:{self.media_type};base64,{encoded}"}}


def user_content(text: str, images: Sequence[ImageInput]) -> str | list[dict[str, Any]]:
    """A user message's content: the text alone, or a text part followed by the images."""
    if not images:
        return text
    return [{"type": "text", "text": text}, *(image.content_part() for image in images)]


def content_chars(content: object) -> int:
    """Characters a message's content counts for a local token estimate: the text of its text
    parts, and IMAGE_TOKENS' worth (at four characters a token) per image, never its base64."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                total += IMAGE_TOKENS * 4
            elif isinstance(part, dict):
                total += len(str(part.get("text", "")))
        return total
    return len(str(content)) if content is not None else 0
