"""What one server may keep of its documents: the limits `ServerDocuments` enforces.

Apart from `memory.documents.store` so that reading the settings does not import Chroma.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.documents.passages import DEFAULT_PASSAGE_CHARS

__all__ = ["DocumentLimits"]


@dataclass(frozen=True, slots=True)
class DocumentLimits:
    """What one server may keep: bytes per file, characters of text per document, documents
    and passages per server, and the size of a passage."""

    max_file_bytes: int = 5_000_000
    max_document_chars: int = 500_000
    max_documents: int = 50
    max_passages: int = 5_000
    passage_chars: int = DEFAULT_PASSAGE_CHARS
