"""Model replies written to make a parser slow, at any size: the shapes of issue 22.

Each shape is a function of a size in characters that returns a reply of about that size. A
prompt injection can ask a model to write exactly these, so the parser must read each in time
linear in its length. The shapes: stop-word residue before a long run of spaces or tabs (the
one the issue reports), deep nesting, repeated keywords, unterminated and broken strings,
long lines of markdown markers, and the broken JSON that `json_repair` reads slowly.

Pure data: imports nothing from the project.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["HOSTILE", "SIZES"]

SIZES = (25_000, 50_000, 100_000)

ACTION = "Thought: I will compute it.\nAction: calculator\nAction Input: "


def _fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


REPAIRABLE = 19_000  # broken JSON this long is still handed to json_repair (under its cap)


def _repair_bait(opening: str, unit: str) -> Callable[[int], str]:
    """A thought that fills the reply, then broken JSON of REPAIRABLE characters."""
    def build(size: int) -> str:
        bait = _fill(unit, REPAIRABLE, opening)
        return _fill("I am still thinking about it. ", size - len(ACTION) - len(bait)) + "\n" + ACTION + bait
    return build


HOSTILE: dict[str, Callable[[int], str]] = {
    # stop-sequence residue ("Obs") glued to the input, then a long blank run and more text
    "residue + spaces": lambda n: _fill(" ", n, ACTION + "1Obs", "x"),
    "residue + tabs": lambda n: _fill("\t", n, ACTION + "1Obs", "\nmore"),
    "residue line + spaces": lambda n: _fill(" ", n, ACTION + "1\nObs", "x"),
    "residue colon + spaces": lambda n: _fill(" ", n, ACTION + "1Observation:", "x"),
    "many residues": lambda n: _fill("1Obs \t", n, ACTION),
    # nesting
    "nested brackets": lambda n: _fill("[", n, ACTION),
    "nested objects": lambda n: _fill('{"a": ', n, ACTION),
    "nested call": lambda n: _fill("(", n, "Action: calculator("),
    "nested blob": lambda n: _fill("[", n, '{"action": "calculator", "action_input": '),
    "nested brackets + text": lambda n: _fill("{", 64, ACTION) + _fill('x"', n - 64 - len(ACTION)),
    # repeated keywords
    "repeated action lines": lambda n: _fill("Action: calculator\n", n),
    "repeated input markers": lambda n: _fill("Action Input: ", n, "Action: calculator\n"),
    "repeated inline keywords": lambda n: _fill("Thought: x. Action: y. ", n),
    "repeated observations": lambda n: _fill("Observation: \n", n, ACTION + "1\n"),
    "repeated final answers": lambda n: _fill("final answer ", n, "x "),
    # strings
    "unterminated string": lambda n: _fill("x", n, ACTION + '{"expression": "'),
    "unescaped quotes": lambda n: _fill('x"', n, ACTION + '{"expression": "', '"}'),
    "single-quoted pairs": lambda n: _fill("{'", n, ACTION),
    "quoted words in a list": lambda n: _fill('["a" ', n, ACTION),
    "bracketed words": lambda n: _fill("[a]", n, '{"action": "calculator", "action_input": '),
    "call with keywords": lambda n: _fill("a=1,", n, "Action: calculator(", ")"),
    # broken JSON that json_repair reads in quadratic time (mangiucugna/json_repair#203)
    "repair bait: quotes in nested objects": _repair_bait("{" * 8, 'x"'),
    "repair bait: bare words in nested objects": _repair_bait("{" * 8, "x "),
    "repair bait: unclosed string, commas": _repair_bait('{"q": "', "a, "),
    "repair bait: single-quoted pairs": _repair_bait("{", "'a':'"),
    # lines of markers
    "asterisks": lambda n: _fill("*", n),
    "bold markers + blank": lambda n: _fill(" ", n, "**", "Action"),
    "headings": lambda n: _fill("#", n),
    "fences": lambda n: _fill("```\n", n),
    "colons": lambda n: _fill(":", n, "Action"),
    "escaped underscores": lambda n: _fill("\\_", n, "Action: "),
    "think tags": lambda n: _fill("<think>", n),
    "final answer + blanks": lambda n: _fill(" \t", n, "Final Answer: ", "x"),
}
