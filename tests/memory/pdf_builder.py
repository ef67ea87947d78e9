"""Small real PDFs for the document tests, written with pypdf's own objects: pages with a text
layer (Helvetica, one line per string), or pages with none (what a scan looks like to a reader)."""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def _escaped(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A PDF with one page per entry, each string a line of text; an empty list: a page with
    no text layer."""
    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({  # noqa: SLF001 - pypdf's way to add an indirect object
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica")}))
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        if not lines:
            continue
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops += [f"({_escaped(line)}) Tj", "T*"]
        ops.append("ET")
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)  # noqa: SLF001
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
