"""What of a memory item is keyword-indexed, beyond what is embedded, from its metadata.

An item shows its text alone; what finds it may say more. `memory.semantic.validation.indexed_text`
is what is embedded (the text, "<speaker>: " before it, the `context` of a short reply
before that); the keyword index reads that and, from metadata written with the item:
- `before` (the turns that came just before it in the conversation, joined by newlines),
  before it: words of the question asked just before an answer help BM25 find the answer,
  while the same turns in the embedded text blur what the embedding of one turn says
  (bench/locomo_eval.py measured both);
- `dates` (relative dates resolved when stored, `memory.semantic.time_mentions.dates_of`), after it
  in parentheses;
- `context_terms_hashed` (the hashes of an `index_only_context`'s terms, which is embedded but
  not stored: `memory.semantic.keyword_index.hidden_terms`), after all of it.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory.semantic.keyword_index import hidden_terms
from memory.semantic.validation import HIDDEN_TERMS_KEY, INDEX_ONLY_KEY, indexed_text, visible

__all__ = ["BEFORE_KEY", "DATES_KEY", "kept_metadata", "keyword_text"]

BEFORE_KEY = "before"
DATES_KEY = "dates"


def _field(metadata: Mapping[str, Any], key: str) -> str:
    value = metadata.get(key)
    return visible(value).strip() if isinstance(value, str) else ""


def keyword_text(text: str, metadata: Mapping[str, Any]) -> str:
    """What an item is keyword-indexed by: what it is embedded by (`indexed_text`), after its
    `before` turns and a newline, with its resolved `dates` in parentheses after it and the
    hashed terms of its index-only context after those."""
    body = indexed_text(text, metadata)
    if dates := _field(metadata, DATES_KEY):
        body = f"{body} ({dates})"
    if hidden := _field(metadata, HIDDEN_TERMS_KEY):
        body = f"{body} {hidden}"
    if before := _field(metadata, BEFORE_KEY):
        return f"{before}\n{body}"
    return body


def kept_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata an item keeps: its `index_only_context` (embedded, `indexed_text`) taken out,
    the hashes of its terms (`context_terms_hashed`) put in, when it has any."""
    kept = dict(metadata)
    hidden = kept.pop(INDEX_ONLY_KEY, None)
    if isinstance(hidden, str) and (terms := hidden_terms(hidden)):
        kept[HIDDEN_TERMS_KEY] = terms
    return kept
