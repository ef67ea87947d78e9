"""Server documents: files and pages a server's admins add, cut into headed passages and
searched by meaning and by words, each server's apart from every other's.

- `extract`: a file's text as headed sections (pypdf, markdownify, markdown-it-py, csv).
- `passages`: sections cut into passages that keep their heading path.
- `index`: one server's passages searched in this process (BM25 + dense, the memory's fusion).
- `store`: ServerDocuments, SQLite rows plus Chroma vectors, limits and refusals.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from memory.documents.extract import DocumentRefused, kind_of
from memory.documents.index import DocHit
from memory.documents.store import DocumentInfo, DocumentLimits, ServerDocuments, open_server_documents, too_big

__all__ = ["DocHit", "DocumentInfo", "DocumentLimits", "DocumentRefused", "ServerDocuments", "kind_of",
           "open_server_documents", "too_big"]
