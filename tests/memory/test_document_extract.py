"""Text out of server documents: headed sections from Markdown, HTML, CSV, PDF and plain
text, passages that keep their headings, and one sentence for whatever cannot be read."""

from __future__ import annotations

import pytest

from memory.documents.extract import DocumentRefused, Section, extract, kind_of
from memory.documents.passages import split_passages
from tests.memory.pdf_builder import pdf_bytes

RULES_MD = b"""# Server rules

Welcome to the server.

## 1. Be kind

No insults, no harassment.

```
# a comment in code, not a heading
```

## 3. No spam

No advertising in any channel.
"""


def test_markdown_sections_carry_their_heading_path() -> None:
    sections = extract(RULES_MD, "markdown")
    assert [s.path for s in sections] == [("Server rules",), ("Server rules", "1. Be kind"),
                                          ("Server rules", "3. No spam")]
    assert "advertising" in sections[2].text


def test_a_hash_line_inside_a_code_block_is_not_a_heading() -> None:
    sections = extract(RULES_MD, "markdown")
    assert "# a comment in code" in sections[1].text


def test_html_headings_become_sections_and_scripts_are_dropped() -> None:
    html = (b"<html><head><style>p{color:red}</style><script>steal()</script></head><body>"
            b"<h1>FAQ</h1><p>Intro.</p><h2>Refunds</h2><p>Refunds take <b>5 days</b>.</p></body></html>")
    sections = extract(html, "html")
    assert sections[-1].path == ("FAQ", "Refunds")
    assert "5 days" in sections[-1].text
    assert not any("steal" in s.text or "color" in s.text for s in sections)


def test_csv_rows_read_as_column_value_lines() -> None:
    sections = extract(b"role,channel\nmoderator,#mods\nartist,#art\n", "csv")
    assert sections == [Section(("rows 1-2",), "role: moderator; channel: #mods\nrole: artist; channel: #art")]


def test_pdf_text_comes_page_by_page() -> None:
    sections = extract(pdf_bytes([["Opening hours", "Monday to Friday"], ["Closed on holidays"]]), "pdf")
    assert [s.path for s in sections] == [("page 1",), ("page 2",)]
    assert "Monday to Friday" in sections[0].text


def test_a_pdf_without_a_text_layer_is_refused_as_scanned() -> None:
    with pytest.raises(DocumentRefused, match="scanned"):
        extract(pdf_bytes([[], []]), "pdf")


def test_a_damaged_pdf_is_refused_in_one_sentence() -> None:
    with pytest.raises(DocumentRefused, match="cannot be read"):
        extract(b"%PDF-1.4\nthis is not really a pdf", "pdf")


def test_a_binary_file_named_txt_is_refused() -> None:
    with pytest.raises(DocumentRefused, match="not text"):
        extract(b"\x00\x01\x02binary", "text")


def test_an_empty_file_is_refused() -> None:
    with pytest.raises(DocumentRefused, match="no text"):
        extract(b"  \n\n ", "markdown")


def test_latin1_text_is_decoded() -> None:
    sections = extract("Café crème: règles du serveur, à lire avant de poster.".encode("latin-1"), "text")
    assert "Café crème" in sections[0].text


@pytest.mark.parametrize(("name", "media", "kind"), [
    ("rules.MD", None, "markdown"), ("faq.htm", None, "html"), ("notes.pdf", None, "pdf"),
    ("download", "text/csv; charset=utf-8", "csv"), ("page", "text/html", "html")])
def test_the_kind_comes_from_the_name_then_the_media_type(name: str, media: str | None, kind: str) -> None:
    assert kind_of(name, media) == kind


def test_other_kinds_of_file_are_refused() -> None:
    with pytest.raises(DocumentRefused, match=r"\.txt, \.md, \.pdf, \.html and \.csv"):
        kind_of("song.mp3", "audio/mpeg")


def test_passages_keep_the_heading_path_as_their_section() -> None:
    passages = split_passages(extract(RULES_MD, "markdown"))
    assert [p.section for p in passages] == ["Server rules", "Server rules > 1. Be kind", "Server rules > 3. No spam"]
    assert passages[2].indexed("Rules").startswith("Rules\nServer rules > 3. No spam\n")


def test_a_long_section_is_cut_into_passages_at_sentence_ends() -> None:
    text = " ".join(f"Sentence number {n} says something." for n in range(200))
    passages = split_passages([Section(("Long",), text)], max_chars=300)
    assert len(passages) > 10
    assert all(len(p.text) <= 300 for p in passages)
    assert all(p.text.endswith(".") for p in passages)
    assert all(p.section == "Long" for p in passages)


def test_one_huge_word_is_cut_to_size_too() -> None:
    passages = split_passages([Section((), "x" * 5000)], max_chars=1000)
    assert [len(p.text) for p in passages] == [1000] * 5


def test_a_file_without_headings_names_its_passages_by_part() -> None:
    passages = split_passages([Section((), "First paragraph.\n\nSecond paragraph.")], max_chars=60)
    assert [p.section for p in passages] == ["part 1"]
    long = split_passages([Section((), "a" * 40 + ".\n\n" + "b" * 40 + ".")], max_chars=60)
    assert [p.section for p in long] == ["part 1", "part 2"]
