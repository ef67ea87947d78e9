"""The `search_docs(query)` tool: a server's own documents, offered only in a server that has some.

The server comes from the runtime's ToolContext, never from the model (the tool has no server
parameter), so a turn searches the documents of the server it was asked in, and a DM or
another server never sees them (`for_turn` offers no tool there). The answer lists the best
passages, each with its document's title and section, and tells the model how to cite them.

Part of bot/: joins agent/ (tools) and memory/ (the documents store).
"""

from __future__ import annotations

from agent.tools.registry import Tool, ToolContext, ToolError, ToolFn, ToolRegistry
from memory.documents import DocHit, ServerDocuments

__all__ = ["DocsTools", "format_hits"]

SEARCH_K = 5
PASSAGE_SHOWN_CHARS = 1200


def format_hits(hits: list[DocHit]) -> str:
    """Passages as the model reads them: numbered, each headed by its title and section."""
    if not hits:
        return "No passage of this server's documents matches that."
    parts = []
    for n, hit in enumerate(hits, 1):
        text = hit.text if len(hit.text) <= PASSAGE_SHOWN_CHARS else hit.text[:PASSAGE_SHOWN_CHARS] + " [...]"
        parts.append(f"[{n}] from *{hit.title}*, section {hit.section}:\n{text}")
    parts.append("Answer from these passages and cite the ones you use like this: (from *title*, section ...).")
    return "\n\n".join(parts)


class DocsTools:
    """The `search_docs` tool over one documents store; `for_turn` offers it where it applies."""

    def __init__(self, documents: ServerDocuments, *, timeout_s: float | None = None) -> None:
        self._documents = documents
        self._tool = Tool.from_function(_search_in(documents), timeout_s=timeout_s)

    def catalog(self) -> ToolRegistry:
        """A registry with `search_docs`, as a turn in a server with documents is offered it:
        what the context budget sets aside room for."""
        registry = ToolRegistry()
        registry.register(self._tool)
        return registry

    def for_turn(self, guild_id: str | None) -> ToolRegistry | None:
        """A registry with `search_docs` for a turn in ``guild_id`` when that server has
        documents; None in a DM or a server without any."""
        if not self._documents.has_documents(guild_id):
            return None
        return self.catalog()


def _search_in(documents: ServerDocuments) -> ToolFn:
    async def search_docs(ctx: ToolContext, query: str) -> str:
        """Search this server's own documents (its rules, FAQ, notes, pages its admins added).

        Args:
            query: what to look for, in a few words or a question (e.g. "rules on advertising")
        """
        query = query.strip()
        if not query:
            raise ToolError("query is empty; say in a few words what to look for")
        if ctx.guild_id is None:
            return "There are no server documents in a direct message."
        return format_hits(await documents.search(ctx.guild_id, query, k=SEARCH_K))

    return search_docs
