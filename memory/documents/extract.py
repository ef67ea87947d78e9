"""Text out of a server's document: plain text, Markdown, HTML, CSV or PDF, as headed sections.

`extract(data, kind)` turns a file's bytes into `Section`s, each the text under one heading
path ("Rules > 3. Respect"), in reading order; `passages.split_passages` cuts them to size.
Every refusal is a `DocumentRefused` whose message is one sentence for the person who added
the file (an unreadable file, a PDF whose pages hold no text, a file with no text at all).

Maintained libraries do the parsing: pypdf reads PDF text, markdownify turns HTML into
Markdown (scripts and styles dropped) so that HTML and Markdown share one heading reader,
markdown-it-py finds the headings (so a `#` inside a code block is not one), the standard
`csv` module reads CSV, and charset-normalizer guesses the encoding of text that is not UTF-8.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["KINDS", "DocumentRefused", "Section", "extract", "kind_of"]

log = logging.getLogger(__name__)

# file suffix -> kind
KINDS = {"txt": "text", "text": "text", "md": "markdown", "markdown": "markdown", "html": "html",
         "htm": "html", "csv": "csv", "pdf": "pdf"}
_MEDIA_TYPES = {"text/plain": "text", "text/markdown": "markdown", "text/html": "html",
                "application/xhtml+xml": "html", "text/csv": "csv", "application/pdf": "pdf"}
CSV_ROWS_PER_SECTION = 20


class DocumentRefused(ValueError):
    """A document that cannot be added; the message is one sentence for a person."""


@dataclass(frozen=True, slots=True)
class Section:
    """The text under one heading path (empty: before any heading, or a file without any)."""

    path: tuple[str, ...]
    text: str


def kind_of(name: str, media_type: str | None = None) -> str:
    """The kind of a file from its name's suffix, else from its media type; DocumentRefused
    for anything else."""
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if suffix in KINDS:
        return KINDS[suffix]
    media = (media_type or "").split(";", 1)[0].strip().lower()
    if media in _MEDIA_TYPES:
        return _MEDIA_TYPES[media]
    raise DocumentRefused("I can read .txt, .md, .pdf, .html and .csv documents only.")


def extract(data: bytes, kind: str) -> list[Section]:
    """The sections of a document of ``kind`` ("text", "markdown", "html", "csv", "pdf"),
    without empty ones; DocumentRefused when nothing readable is in it. Blocking (a large PDF
    takes a while): run it off the event loop."""
    if kind == "pdf":
        sections = _pdf(data)
    elif kind == "csv":
        sections = _csv(_decode(data))
    elif kind == "html":
        sections = _markdown(_html_to_markdown(_decode(data)))
    elif kind == "markdown":
        sections = _markdown(_decode(data))
    elif kind == "text":
        sections = [Section((), _decode(data))]
    else:
        raise DocumentRefused("I can read .txt, .md, .pdf, .html and .csv documents only.")
    kept = [Section(s.path, s.text.strip()) for s in sections if s.text.strip()]
    if not kept:
        raise DocumentRefused("That document has no text I can read.")
    return kept


def _decode(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise DocumentRefused("That file is not text (it looks like a binary file).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise DocumentRefused("I could not tell how that file's text is encoded.")
    return str(best)


def _html_to_markdown(html: str) -> str:
    from markdownify import markdownify

    # links and images keep their text only; headings as "#" lines for the shared heading reader
    return markdownify(html, heading_style="ATX", strip=["a", "img"])


def _markdown(text: str) -> list[Section]:
    """Sections under each heading, read by markdown-it-py (CommonMark, so setext headings and
    code blocks are understood), the heading path being the chain of enclosing headings."""
    from markdown_it import MarkdownIt

    lines = text.splitlines()
    tokens = MarkdownIt("commonmark").parse(text)
    headings: list[tuple[int, int, int, str]] = []  # (first line, end line, level, text)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map is not None:
            inline = tokens[i + 1].content if i + 1 < len(tokens) else ""
            headings.append((token.map[0], token.map[1], int(token.tag[1:]), " ".join(inline.split())))
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    start = 0
    current: tuple[str, ...] = ()
    for first, end, level, title in headings:
        sections.append(Section(current, "\n".join(lines[start:first])))
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        current = tuple(t for _, t in path if t)
        start = end
    sections.append(Section(current, "\n".join(lines[start:])))
    return sections


def _csv(text: str) -> list[Section]:
    """Rows as "column: value; ..." lines, a section per CSV_ROWS_PER_SECTION rows."""
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise DocumentRefused(f"That CSV file cannot be read ({exc}).") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        return []
    header, body = rows[0], rows[1:] or [rows[0]]
    named = len(rows) > 1

    def line(row: list[str]) -> str:
        if not named:
            return "; ".join(cell.strip() for cell in row)
        cells = [f"{(header[i].strip() if i < len(header) else f'column {i + 1}')}: {cell.strip()}"
                 for i, cell in enumerate(row) if cell.strip()]
        return "; ".join(cells)

    sections = []
    for at in range(0, len(body), CSV_ROWS_PER_SECTION):
        chunk = body[at:at + CSV_ROWS_PER_SECTION]
        last = at + len(chunk)
        sections.append(Section((f"rows {at + 1}-{last}",), "\n".join(line(r) for r in chunk)))
    return sections


def _pdf(data: bytes) -> list[Section]:
    """A section per page ("page N"); a PDF with no text on any page is refused as scanned."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise DocumentRefused("That PDF is encrypted; add a copy without a password.")
        sections = list(_pages(reader))
    except DocumentRefused:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        log.info("unreadable PDF: %s: %s", type(exc).__name__, exc)
        raise DocumentRefused("That PDF cannot be read (it may be damaged).") from None
    if not any(s.text.strip() for s in sections):
        raise DocumentRefused("That PDF has no text in it (a scanned PDF?); add a PDF with a text layer.")
    return sections


def _pages(reader: object) -> Iterator[Section]:
    for number, page in enumerate(reader.pages, 1):  # type: ignore[attr-defined]
        yield Section((f"page {number}",), page.extract_text() or "")
