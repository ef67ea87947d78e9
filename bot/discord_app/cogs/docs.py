"""`/docs add | list | remove | export`: a server's own documents, which the bot answers from.

For members with Manage Server (and the operator's ADMIN_USER_IDS), in servers only; everyone
else gets one ephemeral sentence. Everything is ephemeral. `add` takes an attached file
(.txt, .md, .pdf, .html, .csv) or a public URL, with an optional title; whatever is refused
(too big, unreadable, a scanned PDF, a private or loopback address, over the server's
limits) is said in one sentence (memory.documents.DocumentRefused). `remove` offers the
server's documents by title as you type; `export` sends a JSON file of what was added.
"""

from __future__ import annotations

import io
import json
import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_app.interactions import tell
from bot.discord_app.views import paginate
from memory.documents import DocumentInfo, DocumentRefused, too_big

if TYPE_CHECKING:
    from bot.knowledge.documents import DocumentsService

__all__ = ["DocsCog", "NOT_PERMITTED"]

log = logging.getLogger(__name__)

NOT_PERMITTED = "Only members with the Manage Server permission can manage this server's documents."
IN_SERVERS_ONLY = "Documents belong to a server: use /docs in one."
ONE_SOURCE = "Give either a file or a url (one of the two)."
TITLE_CHARS = 100


def _line(n: int, doc: DocumentInfo) -> str:
    return (f"{n}. *{doc.title}* ({doc.kind}, {doc.passages} passages, added {doc.added_at:%Y-%m-%d} by "
            f"<@{doc.added_by}>) from {doc.source}")


class DocsCog(commands.Cog):
    """The /docs command group."""

    docs = app_commands.Group(name="docs", description="This server's documents, which I answer from",
                              guild_only=True, default_permissions=discord.Permissions(manage_guild=True))

    def __init__(self, documents: DocumentsService, *, admin_user_ids: frozenset[str]) -> None:
        self.documents = documents
        self.admin_user_ids = admin_user_ids

    async def _server(self, interaction: discord.Interaction) -> str | None:
        """The server's id when the person may manage its documents; else None (told why)."""
        if interaction.guild_id is None:
            await tell(interaction, IN_SERVERS_ONLY)
            return None
        if not (interaction.permissions.manage_guild or str(interaction.user.id) in self.admin_user_ids):
            await tell(interaction, NOT_PERMITTED)
            return None
        return str(interaction.guild_id)

    @docs.command(name="add", description="Add a document (a file or a public URL) for me to answer from")
    @app_commands.describe(file="A .txt, .md, .pdf, .html or .csv file", url="A public web page or file",
                           title="How answers should name it (default: the file's name)")
    async def add(self, interaction: discord.Interaction, file: discord.Attachment | None = None,
                  url: str | None = None, title: app_commands.Range[str, 1, TITLE_CHARS] | None = None) -> None:
        if (guild_id := await self._server(interaction)) is None:
            return
        if (file is None) == (url is None or not url.strip()):
            await tell(interaction, ONE_SOURCE)
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        actor = str(interaction.user.id)
        try:
            if file is not None:
                if file.size > self.documents.max_file_bytes:
                    raise too_big(file.size, self.documents.max_file_bytes)
                data = await file.read()
                doc = await self.documents.add_file(guild_id, actor, filename=file.filename,
                                                    media_type=file.content_type, data=data, title=title)
            else:
                doc = await self.documents.add_url(guild_id, actor, url=url or "", title=title)
        except DocumentRefused as exc:
            await tell(interaction, str(exc))
            return
        except discord.HTTPException:
            log.warning("/docs add: the attachment could not be downloaded", exc_info=True)
            await tell(interaction, "I could not download that file from Discord; try again.")
            return
        await tell(interaction, f"Added *{doc.title}* ({doc.passages} passages). I will answer from it in this "
                                "server and cite it.")

    @docs.command(name="list", description="The documents I answer from in this server")
    async def list_(self, interaction: discord.Interaction) -> None:
        if (guild_id := await self._server(interaction)) is None:
            return
        docs = await self.documents.list(guild_id)
        if not docs:
            await tell(interaction, "This server has no documents yet; add one with /docs add.")
            return
        pages = paginate([_line(n, d) for n, d in enumerate(docs, 1)])
        await tell(interaction, pages[0] + (f"\n({len(pages) - 1} more page(s): use /docs export)" if len(pages) > 1
                                            else ""))

    @docs.command(name="remove", description="Remove one of this server's documents")
    @app_commands.describe(document="The document to remove")
    async def remove(self, interaction: discord.Interaction, document: str) -> None:
        if (guild_id := await self._server(interaction)) is None:
            return
        removed = await self.documents.remove(guild_id, document.strip())
        if removed is None:
            await tell(interaction, "This server has no such document; pick one from the list as you type.")
            return
        await tell(interaction, f"Removed *{removed.title}*; I no longer answer from it.")

    @remove.autocomplete("document")
    async def _documents_named(self, interaction: discord.Interaction,
                               current: str) -> list[app_commands.Choice[str]]:
        if interaction.guild_id is None or not (interaction.permissions.manage_guild
                                                or str(interaction.user.id) in self.admin_user_ids):
            return []
        wanted = current.casefold().strip()
        docs = await self.documents.list(str(interaction.guild_id))
        return [app_commands.Choice(name=d.title[:TITLE_CHARS], value=d.id)
                for d in docs if wanted in d.title.casefold()][:25]

    @docs.command(name="export", description="Download this server's documents as JSON")
    async def export(self, interaction: discord.Interaction) -> None:
        if (guild_id := await self._server(interaction)) is None:
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        docs = await self.documents.export(guild_id)
        data = json.dumps({"guild_id": guild_id, "documents": docs}, ensure_ascii=False, indent=2)
        file = discord.File(io.BytesIO(data.encode("utf-8")), filename="documents.json")
        await interaction.followup.send(f"{len(docs)} document(s).", file=file, ephemeral=True)
