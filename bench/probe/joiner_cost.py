"""CPU of agent.llm's stream joiner on one reply of 100 KB to 1 MB in 4-character pieces, its
content and then one tool call's arguments (chunks built here, no server: the joiner alone).
A diagnosis tool, not a bench. Usage: python bench/probe/joiner_cost.py [repository root]"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[2]))
from agent.llm import _Joiner  # noqa: E402  (the repository chosen above)

SIZES = (100_000, 400_000, 1_000_000)


def chunk(content: str | None = None, arguments: str | None = None) -> SimpleNamespace:
    """What the joiner reads of an openai ChatCompletionChunk."""
    calls = None if arguments is None else [
        SimpleNamespace(index=0, id="call_1", function=SimpleNamespace(name="", arguments=arguments))]
    delta = SimpleNamespace(content=content, tool_calls=calls, reasoning_content=None, reasoning=None)
    return SimpleNamespace(usage=None, choices=[SimpleNamespace(finish_reason=None, delta=delta)])


def joined_cpu(pieces: list[SimpleNamespace]) -> tuple[float, int, int]:
    joiner = _Joiner(["Observation:"])
    started = time.process_time()
    for piece in pieces:
        joiner.add(piece)
    joiner.flush()
    content, calls = joiner.content, joiner.tool_calls()
    return time.process_time() - started, len(content), sum(len(c.arguments) for c in calls)


def main() -> None:
    for size in SIZES:
        text_s, text_chars, _ = joined_cpu([chunk(content="abcd") for _ in range(size // 4)])
        args_s, _, args_chars = joined_cpu([chunk(arguments='{"a"') for _ in range(size // 4)])
        assert text_chars == args_chars == size
        print(f"{size:>9,} characters: content {text_s:6.2f} CPU-s, tool-call arguments {args_s:6.2f} CPU-s")


if __name__ == "__main__":
    main()
