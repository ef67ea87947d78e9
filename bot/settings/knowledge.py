"""Settings of what a server knows: its documents' limits, /tldr, and the running summary.

Variables (empty values count as unset):
    DOCS_MAX_FILE_BYTES    largest document file or page (default 5000000)
    DOCS_MAX_CHARS         most characters of text in one document (default 500000)
    DOCS_MAX_PER_SERVER    documents one server may keep (default 50)
    DOCS_MAX_PASSAGES      passages one server may keep, all documents together (default 5000)
    TLDR_MAX_MESSAGES      most messages one /tldr reads (default 300)
    SUMMARY_EVERY          a channel's running summary folds in the messages that left the
                           context once this many have (default 20; 0 turns the summary off)

Read by bot.settings.features into ``FeatureSettings.knowledge``. Part of bot/; imports only
envsettings and memory.documents' limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from envsettings import read_int
from memory.documents import DocumentLimits

__all__ = ["KnowledgeSettings", "load_knowledge_settings"]


@dataclass(frozen=True, slots=True)
class KnowledgeSettings:
    """See the module docstring for each variable."""

    documents: DocumentLimits = field(default_factory=DocumentLimits)
    tldr_max_messages: int = 300
    summary_every: int = 20


def load_knowledge_settings(env: Mapping[str, str]) -> KnowledgeSettings:
    """Read the variables; a bad value raises envsettings.SettingError naming it."""
    return KnowledgeSettings(
        documents=DocumentLimits(
            max_file_bytes=read_int(env, "DOCS_MAX_FILE_BYTES", 5_000_000, low=1000, high=100_000_000),
            max_document_chars=read_int(env, "DOCS_MAX_CHARS", 500_000, low=100, high=20_000_000),
            max_documents=read_int(env, "DOCS_MAX_PER_SERVER", 50, low=1, high=10_000),
            max_passages=read_int(env, "DOCS_MAX_PASSAGES", 5_000, low=1, high=1_000_000),
        ),
        tldr_max_messages=read_int(env, "TLDR_MAX_MESSAGES", 300, low=10, high=5_000),
        summary_every=read_int(env, "SUMMARY_EVERY", 20, low=0, high=10_000),
    )
