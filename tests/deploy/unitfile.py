"""A reader of systemd unit files for the deploy tests: sections of (key, value) pairs, repeated
keys kept in order (systemd appends most of them), comments and blank lines dropped.

Test helper only; imports nothing from the project's packages.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["UnitFile"]


class UnitFile:
    """The settings of one unit file (or drop-in), as written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sections: dict[str, list[tuple[str, str]]] = {}
        section: list[tuple[str, str]] | None = None
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                section = self.sections.setdefault(line[1:-1], [])
                continue
            if section is None or "=" not in line or line.endswith("\\"):
                raise ValueError(f"{path}:{number}: not a 'Key=value' line in a section: {raw!r}")
            key, _, value = line.partition("=")
            section.append((key.strip(), value.strip()))

    def values(self, section: str, key: str) -> list[str]:
        """Every value given to ``key`` in ``section``, in file order."""
        return [v for k, v in self.sections.get(section, []) if k == key]

    def value(self, section: str, key: str) -> str | None:
        """The one value of ``key`` (None when absent); a key given twice is an error here."""
        found = self.values(section, key)
        if len(found) > 1:
            raise AssertionError(f"{self.path}: {key} is set {len(found)} times in [{section}]")
        return found[0] if found else None

    def words(self, section: str, key: str) -> list[str]:
        """All space-separated words over every value of a list-valued key."""
        return [w for v in self.values(section, key) for w in v.split()]
