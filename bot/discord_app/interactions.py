"""Small helpers every slash command shares: answering once, refusing politely, parsing links.

`tell` answers an interaction whether or not it was already responded to, so no error path can
leave one unanswered ("The application did not respond"). Imports discord.py only.
"""

from __future__ import annotations

import logging
import re

import discord

__all__ = ["NOT_ALLOWED", "NOT_THIS_SERVERS_CHANNEL", "parse_message_ref", "tell"]

log = logging.getLogger(__name__)

NOT_ALLOWED = "Sorry, I'm not available to you here."
NOT_THIS_SERVERS_CHANNEL = "That channel is not one of this server's text channels."
_LINK = re.compile(r"https?://(?:[\w-]+\.)?discord(?:app)?\.com/channels/(?:@me|\d+)/\d+/(\d+)")
_ID = re.compile(r"\d{15,21}")


def parse_message_ref(text: str) -> str | None:
    """The message id of a message link or a bare id; None if neither."""
    text = text.strip()
    if match := _LINK.fullmatch(text):
        return match.group(1)
    return text if _ID.fullmatch(text) else None


async def tell(interaction: discord.Interaction, text: str, *, ephemeral: bool = True) -> None:
    """Answer the interaction with `text`: the response if none was sent yet, else a followup."""
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=ephemeral)
        else:
            await interaction.response.send_message(text, ephemeral=ephemeral)
    except discord.HTTPException:
        log.warning("could not answer interaction %s", interaction.id, exc_info=True)
