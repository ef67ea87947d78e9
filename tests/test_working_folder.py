"""The guard in tests/conftest.py: a change to the working folder's data/ is seen."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import folder_stamps


def test_a_file_created_in_a_folder_or_its_subfolders_changes_its_stamps(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert folder_stamps(data) == {}
    (data / "chroma").mkdir(parents=True)
    for folder in (data, data / "chroma"):  # an old time, so a change within the clock's tick shows too
        os.utime(folder, ns=(0, 0))
    before = folder_stamps(data)
    (data / "chroma" / "chroma.sqlite3").write_bytes(b"")
    assert folder_stamps(data) != before
    os.utime(data, ns=(0, 0))
    before = folder_stamps(data)
    (data / "bot.sqlite3").write_bytes(b"")
    assert folder_stamps(data) != before
