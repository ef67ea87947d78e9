"""A document's sections cut into passages of bounded size that keep their heading path.

A passage is what `search_docs` returns and what is embedded and indexed: paragraphs of one
section packed up to `max_chars`; a paragraph longer than that is cut at sentence ends, and a
sentence longer than that at a space. Each passage names its section (the heading path joined
by " > "; "part N" in a file without headings), and what is indexed (`Passage.indexed`) starts
with the document's title and that section, so a question naming a heading finds its text.

Part of memory/: pure functions, imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memory.documents.extract import Section

__all__ = ["DEFAULT_PASSAGE_CHARS", "Passage", "split_passages"]

DEFAULT_PASSAGE_CHARS = 1000
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage: its ordinal in the document, its section's name, and its text."""

    ordinal: int
    section: str
    text: str

    def indexed(self, title: str) -> str:
        """What search matches: the title, the section, then the text."""
        return f"{title}\n{self.section}\n{self.text}"


def _pieces(text: str, max_chars: int) -> Iterator[str]:
    """``text`` in pieces of at most ``max_chars``: whole sentences where they fit."""
    buffer = ""
    for sentence in _SENTENCE_END.split(text):
        while len(sentence) > max_chars:  # one huge "sentence": cut at the last space that fits
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            if buffer:
                yield buffer
                buffer = ""
            yield sentence[:cut].strip()
            sentence = sentence[cut:].strip()
        if buffer and len(buffer) + 1 + len(sentence) > max_chars:
            yield buffer
            buffer = ""
        buffer = f"{buffer} {sentence}" if buffer else sentence
    if buffer.strip():
        yield buffer.strip()


def _packed(text: str, max_chars: int) -> Iterator[str]:
    """Paragraphs of ``text`` packed together up to ``max_chars``."""
    buffer = ""
    for paragraph in _PARAGRAPH.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        for piece in [paragraph] if len(paragraph) <= max_chars else list(_pieces(paragraph, max_chars)):
            if buffer and len(buffer) + 2 + len(piece) > max_chars:
                yield buffer
                buffer = ""
            buffer = f"{buffer}\n\n{piece}" if buffer else piece
    if buffer:
        yield buffer


def split_passages(sections: Sequence[Section], *, max_chars: int = DEFAULT_PASSAGE_CHARS) -> list[Passage]:
    """The passages of ``sections``, in order, numbered from 0."""
    if max_chars < 50:
        raise ValueError(f"max_chars must be at least 50, got {max_chars}")
    passages: list[Passage] = []
    for section in sections:
        for text in _packed(section.text, max_chars):
            name = " > ".join(section.path) if section.path else f"part {len(passages) + 1}"
            passages.append(Passage(len(passages), name, text))
    return passages
