"""Hooks for every test folder: the `needs` marker (tests/needs.py), applied before fixtures; the
modules marked `slow` handed out first, so that the workers finish together instead of one
running a long module alone at the end; and a guard that no test writes into the working
folder's `data/` (the console chat's default data folder): every test keeps its files in its
own temporary folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.needs import apply_needs, register_marker

WORKING_DATA = Path(__file__).resolve().parent.parent / "data"


def pytest_configure(config: pytest.Config) -> None:
    register_marker(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow modules first, each module's tests still together and in their order (pytest-xdist's
    `--dist loadfile` hands out modules in this order with `--no-loadscope-reorder`, which
    pyproject's addopts passes; without it xdist re-sorts them by their number of tests)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    apply_needs(item)


def folder_stamps(folder: Path) -> dict[str, int]:
    """The modification times of ``folder`` and of the folders in it: a file created or removed
    in either changes one (cheap enough to take around every test)."""
    try:
        stamps = {".": folder.stat().st_mtime_ns}
        with os.scandir(folder) as entries:
            stamps |= {e.name: e.stat().st_mtime_ns for e in entries if e.is_dir(follow_symlinks=False)}
    except FileNotFoundError:
        return {}
    return stamps


@pytest.fixture(autouse=True)
def _nothing_written_to_the_working_data_folder() -> Iterator[None]:
    before = folder_stamps(WORKING_DATA)
    yield
    if folder_stamps(WORKING_DATA) != before:
        pytest.fail(f"{WORKING_DATA} changed during this test (or one running beside it): give every "
                    "store a DATA_DIR under tmp_path", pytrace=False)
