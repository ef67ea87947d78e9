"""Every case of the real-reply corpus (bench/data/parser_cases.py) is read as it expects.

The cases reproduce shapes that real models wrote (bench/data/parser_survey.md); a case that
regresses fails here. The scoring is bench/parser_eval.py's, so bench and tests agree.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from agent.parser import parse_response
from tests.agent.test_parser import check_invariants

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EVAL = _load(ROOT / "bench" / "parser_eval.py")
CASES = EVAL.CASES


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_case_is_read_as_expected(case: dict) -> None:
    reply = parse_response(case["content"], case["reasoning"], tools=case["tools"])
    check_invariants(reply)
    assert EVAL.judge_ours(case, reply), (case["expect"], reply)
    if "error" in case["expect"]:
        assert reply.named_tool == case["expect"]["named_tool"]


def test_the_corpus_is_large_and_covers_every_category_in_both_splits() -> None:
    assert len(CASES) >= 200
    for category in EVAL.CATEGORIES:
        splits = [case["split"] for case in CASES if case["category"] == category]
        assert len(splits) >= 12, category
        assert splits.count("held") >= 3, category
    assert {case["split"] for case in CASES} == {"tune", "held"}


def test_every_case_names_its_source() -> None:
    assert all(case["source"].strip() for case in CASES)
