"""Hooks for every test folder: the `needs` marker (tests/needs.py), applied before fixtures."""

from __future__ import annotations

import pytest

from tests.needs import apply_needs, register_marker


def pytest_configure(config: pytest.Config) -> None:
    register_marker(config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    apply_needs(item)
