"""Server documents: files and pages a server's admins add, cut into headed passages and
searched by meaning and by words, each server's apart from every other's.

- `extract`: a file's text as headed sections (pypdf, markdownify, markdown-it-py, csv).
- `passages`: sections cut into passages that keep their heading path.
- `index`: one server's passages searched in this process (BM25 + dense, the memory's fusion).
- `limits`: what one server may keep.
- `store`: ServerDocuments, SQLite rows plus Chroma vectors, limits and refusals.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory.documents.extract import DocumentRefused, kind_of
    from memory.documents.index import DocHit
    from memory.documents.limits import DocumentLimits
    from memory.documents.store import DocumentInfo, ServerDocuments, open_server_documents, too_big

# Loaded on first use (PEP 562): reading the settings (`DocumentLimits`) must not import Chroma.
_MODULE_OF = {
    "DocumentRefused": "extract", "kind_of": "extract", "DocHit": "index", "DocumentInfo": "store",
    "DocumentLimits": "limits", "ServerDocuments": "store", "open_server_documents": "store", "too_big": "store",
}

__all__ = ["DocHit", "DocumentInfo", "DocumentLimits", "DocumentRefused", "ServerDocuments", "kind_of",
           "open_server_documents", "too_big"]


def __getattr__(name: str) -> object:
    if name in _MODULE_OF:
        return getattr(import_module(f"memory.documents.{_MODULE_OF[name]}"), name)
    raise AttributeError(f"module 'memory.documents' has no attribute {name!r}")
