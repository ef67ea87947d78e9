"""An MCP tool result as the model's observation (the SDK's own result types, no server)."""

from __future__ import annotations

import base64

import pytest
from mcp import types

from agent.tools.mcp.results import observation_text
from agent.tools.registry import ToolError


def result(*content: types.ContentBlock, structured: dict | None = None, error: bool = False):
    return types.CallToolResult(content=list(content), structuredContent=structured, isError=error)


def text(t: str) -> types.TextContent:
    return types.TextContent(type="text", text=t)


def test_text_blocks_are_joined_by_lines() -> None:
    assert observation_text(result(text("one"), text("two")), "s__t", limit=100) == "one\ntwo"


def test_structured_content_is_compact_json_and_its_text_repeat_is_dropped() -> None:
    value = {"temp": 21.5, "city": "Oslo", "tags": ["a", "b"]}
    r = result(text('{\n  "temp": 21.5,\n  "city": "Oslo",\n  "tags": ["a", "b"]\n}'), structured=value)
    assert observation_text(r, "s__t", limit=1000) == '{"temp":21.5,"city":"Oslo","tags":["a","b"]}'


def test_a_wrapped_plain_value_is_shown_as_its_text() -> None:
    assert observation_text(result(text("42"), structured={"result": 42}), "s__t", limit=100) == "42"
    assert observation_text(result(text("hi"), structured={"result": "hi"}), "s__t", limit=100) == "hi"


def test_structured_content_with_other_text_keeps_both() -> None:
    r = result(text("Found 1 row."), structured={"rows": [1]})
    assert observation_text(r, "s__t", limit=100) == 'Found 1 row.\n{"rows":[1]}'


def test_images_audio_and_blobs_are_named_by_type_and_size_not_pasted() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\x00" * 2044).decode()
    blob = base64.b64encode(b"\x01" * (3 * 1024 * 1024)).decode()
    r = result(
        types.ImageContent(type="image", data=png, mimeType="image/png"),
        types.AudioContent(type="audio", data=base64.b64encode(b"RIFF").decode(), mimeType="audio/wav"),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
            uri="file:///x.bin", blob=blob, mimeType="application/zip")),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
            uri="file:///notes.txt", text="the notes")),
        types.ResourceLink(type="resource_link", uri="file:///big.csv", name="big", mimeType="text/csv"),
    )
    out = observation_text(r, "s__t", limit=10_000)
    assert out.splitlines() == [
        "[image image/png, 2.0 KB: not shown]",
        "[audio audio/wav, 4 bytes: not shown]",
        "[resource file:///x.bin application/zip, 3.0 MB: not shown]",
        "the notes",
        "[resource link file:///big.csv (text/csv)]",
    ]
    assert png not in out


def test_an_error_result_raises_a_tool_error_with_the_servers_text() -> None:
    with pytest.raises(ToolError, match=r"^s__t failed: no such repository$"):
        observation_text(result(text("no such repository"), error=True), "s__t", limit=100)
    with pytest.raises(ToolError, match="the server gave no reason"):
        observation_text(result(error=True), "s__t", limit=100)


def test_an_empty_result_says_so() -> None:
    assert observation_text(result(), "s__t", limit=100) == "(no output)"


def test_a_huge_text_is_cut_just_past_the_limit_so_the_registry_adds_its_note() -> None:
    out = observation_text(result(text("y" * 2_000_000)), "s__t", limit=4000)
    assert len(out) == 4001
