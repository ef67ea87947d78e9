"""systemd's own checks of the unit files: `systemd-analyze verify` finds nothing to say, and
`systemd-analyze security --offline=true` scores no worse than deploy/README.md states."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.conftest import BOT_UNIT, CHROMA_DROPIN, CHROMA_UNIT, DEPLOY_README, GATE_SOCKET, GATE_UNIT, NAME
from tests.needs import require_tool

pytestmark = pytest.mark.needs("systemd-analyze")

VENV_BIN = f"/opt/{NAME}/bin/"


def staged_units(where: Path) -> Path:
    """The units as installed (bot, Chroma, drop-in) in a unit folder of their own, with the
    venv's bin/ pointing at the bin/ of the venv running the tests, where python and chroma
    really exist (verify demands that ExecStart's binary exists). Nothing else is changed."""
    test_bin = str(Path(sys.prefix) / "bin") + "/"
    assert (Path(test_bin) / "python").exists() and (Path(test_bin) / "chroma").exists()
    units = where / "units"
    (units / f"{NAME}.service.d").mkdir(parents=True)
    for source, target in (
        (BOT_UNIT, units / f"{NAME}.service"),
        (CHROMA_UNIT, units / f"{NAME}-chroma.service"),
        (CHROMA_DROPIN, units / f"{NAME}.service.d" / "chroma.conf"),
        (GATE_UNIT, units / f"{NAME}-chroma-gate.service"),
        (GATE_SOCKET, units / f"{NAME}-chroma-gate.socket"),
    ):
        text = source.read_text(encoding="utf-8")
        target.write_text(text.replace(VENV_BIN, test_bin), encoding="utf-8")
    return units


def verify(units: Path, *names: str) -> subprocess.CompletedProcess[str]:
    tool = require_tool("systemd-analyze")
    # A trailing ':' keeps systemd's own unit folders (for the targets) after ours.
    env = dict(os.environ, SYSTEMD_UNIT_PATH=f"{units}:", SYSTEMD_LOG_COLOR="0")
    return subprocess.run(
        [tool, "verify", "--man=no", *(str(units / n) for n in names)],
        capture_output=True, text=True, env=env, timeout=60,
    )


def exposure(unit: Path) -> float:
    tool = require_tool("systemd-analyze")
    done = subprocess.run(
        [tool, "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d)", done.stdout)
    assert match, done.stdout
    return float(match.group(1))


def documented_exposure(which: str) -> float:
    """The figure deploy/README.md states, e.g. 'exposure of **1.1** ("OK") for the bot'."""
    text = " ".join(DEPLOY_README.read_text(encoding="utf-8").split())
    match = re.search(r"\*\*(\d+\.\d)\*\* \(\"\w+\"\) for " + which, text)
    assert match, f"deploy/README.md states no exposure figure for {which}"
    return float(match.group(1))


def test_verify_accepts_the_bot_and_chroma_units_with_the_dropin(tmp_path: Path) -> None:
    units = staged_units(tmp_path)
    done = verify(units, f"{NAME}.service", f"{NAME}-chroma.service", f"{NAME}-chroma-gate.service",
                  f"{NAME}-chroma-gate.socket")
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_verify_reports_a_mistake_in_a_unit(tmp_path: Path) -> None:
    units = staged_units(tmp_path)
    dropin = units / f"{NAME}.service.d" / "chroma.conf"
    dropin.write_text(dropin.read_text(encoding="utf-8") + "ProtectSystem=sometimes\n", encoding="utf-8")
    done = verify(units, f"{NAME}.service")
    assert "chroma.conf:12" in done.stderr and "sometimes" in done.stderr


@pytest.mark.parametrize(("unit", "which"), [(BOT_UNIT, "the bot"), (CHROMA_UNIT, "the Chroma unit"),
                                             (GATE_UNIT, "the gate")])
def test_security_exposure_is_at_most_the_documented_figure(unit: Path, which: str) -> None:
    assert exposure(unit) <= documented_exposure(which)


def test_security_exposure_grows_when_hardening_is_removed(tmp_path: Path) -> None:
    weakened = tmp_path / f"{NAME}.service"
    kept = [
        line for line in BOT_UNIT.read_text(encoding="utf-8").splitlines()
        if not line.startswith(("ProtectSystem=", "SystemCallFilter=", "PrivateDevices="))
    ]
    weakened.write_text("\n".join(kept) + "\n", encoding="utf-8")
    assert exposure(weakened) > documented_exposure("the bot")
