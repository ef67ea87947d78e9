"""An MCP tool result as the observation the model reads.

Text content is passed as is; structured content as compact JSON (a text block that only
repeats it, as servers send for older clients, is dropped; a plain value the SDK's servers wrap
as ``{"result": value}`` is shown as its text);
images, audio and embedded binary resources are named by type and size, never pasted; resource
links are named by URI. The registry cuts an over-long observation with a note, and a result
with ``isError`` becomes a ToolError, which the registry turns into an observation starting
with "Error:" that the model can recover from. The text is cut here too, a little past the
observation limit, so that a server's megabyte is not joined and copied whole.

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

import base64
import binascii
import json

from mcp import types

from agent.tools.registry import ToolError

__all__ = ["observation_text"]


def observation_text(result: types.CallToolResult, tool: str, *, limit: int) -> str:
    """The model's text for ``result`` of ``tool``; raise ToolError for an ``isError`` result."""
    parts = [_block_text(block) for block in result.content]
    structured = result.structuredContent
    if structured is not None:
        repeated = [p for p in parts if _repeats(p, structured)]
        parts = [p for p in parts if not _repeats(p, structured)]
        if repeated and _wrapped(structured):
            parts.insert(0, repeated[0])  # a plain value: its text says it best
        else:
            parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    text = "\n".join(p for p in parts if p) if parts else ""
    if len(text) > limit + 1:  # the registry's cut (and its note) still applies after this
        text = text[: limit + 1]
    if result.isError:
        raise ToolError(f"{tool} failed: {text or 'the server gave no reason'}")
    return text or "(no output)"


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind} {block.mimeType}, {_size(_decoded_len(block.data))}: not shown]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return res.text
        mime = res.mimeType or "application/octet-stream"
        return f"[resource {res.uri} {mime}, {_size(_decoded_len(res.blob))}: not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link {block.uri}{f' ({block.mimeType})' if block.mimeType else ''}]"
    return f"[{getattr(block, 'type', 'unknown')} content: not shown]"


def _decoded_len(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def _wrapped(structured: dict[str, object]) -> bool:
    """The SDK's servers wrap a plain return value as ``{"result": value}``."""
    return list(structured) == ["result"]


def _repeats(text: str, structured: dict[str, object]) -> bool:
    """Whether a text block only repeats the structured content (as JSON, or the wrapped
    value itself, as the SDK's servers send it)."""
    if _wrapped(structured) and text == structured["result"]:
        return True
    if len(text) > 100_000:  # a large text is the content itself, not a repeat worth parsing
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return value == structured or (_wrapped(structured) and value == structured["result"])
