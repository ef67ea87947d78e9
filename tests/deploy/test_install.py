"""deploy/install.sh in a throwaway root (--prefix): what a fresh install lays down, that a
second run changes nothing, that the env file is never overwritten, what --uninstall keeps and
--purge removes, and its usage errors. The venv is made with --no-pip (seconds, not minutes)."""

from __future__ import annotations

import hashlib
import re
import stat
import subprocess
from pathlib import Path

import pytest

from tests.deploy.conftest import (
    BOT_UNIT,
    CHROMA_DROPIN,
    CHROMA_UNIT,
    GATE_SOCKET,
    GATE_UNIT,
    DEPLOY_README,
    ENV_EXAMPLE,
    INSTALL_SH,
    NAME,
    Installer,
)
from tests.needs import require_tool

pytestmark = pytest.mark.needs("systemctl")  # install.sh enables the units with it

UNITS = Path("etc/systemd/system")
WANTS = UNITS / "multi-user.target.wants"


def snapshot(root: Path) -> dict[str, tuple[str, ...]]:
    """Every path under root with its type, mode, and content hash or link target."""
    seen: dict[str, tuple[str, ...]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        mode = oct(stat.S_IMODE(info.st_mode))
        if path.is_symlink():
            seen[str(path.relative_to(root))] = ("link", str(path.readlink()))
        elif path.is_dir():
            seen[str(path.relative_to(root))] = ("dir", mode)
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            seen[str(path.relative_to(root))] = ("file", mode, digest, str(info.st_mtime_ns))
    return seen


def actions(root: Path) -> list[str]:
    log = root / "install-actions.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def install(run_install: Installer, prefix: Path, *args: str) -> str:
    done = run_install("--no-pip", *args, prefix=prefix)
    assert done.returncode == 0, done.stderr
    return done.stdout


def add_data(prefix: Path) -> list[Path]:
    """What the running bot and Chroma server would have written."""
    files = [
        prefix / f"var/lib/{NAME}/bot.sqlite3",
        prefix / f"var/lib/{NAME}/chroma/chroma.sqlite3",
        prefix / f"var/lib/{NAME}-chroma/chroma.sqlite3",
        prefix / f"var/cache/{NAME}/cached",
    ]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("data", encoding="utf-8")
    return files


def test_fresh_install_creates_the_venv_env_file_unit_and_boot_link(run_install: Installer, prefix: Path) -> None:
    out = install(run_install, prefix)
    venv = prefix / f"opt/{NAME}"
    assert (venv / "bin/python").is_file() and (venv / "pyvenv.cfg").is_file()
    assert (prefix / UNITS / f"{NAME}.service").read_bytes() == BOT_UNIT.read_bytes()
    assert (prefix / WANTS / f"{NAME}.service").readlink() == Path(f"/etc/systemd/system/{NAME}.service")
    assert (venv / f"share/doc/{NAME}/README.md").read_bytes() == DEPLOY_README.read_bytes()
    assert "systemctl start" in out and "python -m bot check" in out


def test_fresh_install_writes_the_env_file_from_the_example_with_mode_0600(
    run_install: Installer, prefix: Path
) -> None:
    install(run_install, prefix)
    env_file = prefix / f"etc/{NAME}/bot.env"
    assert env_file.read_bytes() == ENV_EXAMPLE.read_bytes()
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert f"chown root:{NAME} /etc/{NAME}/bot.env" in actions(prefix)


def test_fresh_install_creates_the_system_user_and_reloads_systemd(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    recorded = actions(prefix)
    assert recorded[0].startswith("useradd --system --user-group ") and recorded[0].endswith(f" {NAME}")
    assert "--shell /usr/sbin/nologin" in recorded[0]
    assert recorded[-1] == "systemctl daemon-reload"


def test_fresh_install_leaves_the_state_folder_to_systemd_and_chroma_out(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    assert not (prefix / f"var/lib/{NAME}").exists()
    assert not (prefix / UNITS / f"{NAME}-chroma.service").exists()
    assert not (prefix / UNITS / f"{NAME}.service.d").exists()


def test_second_run_changes_nothing(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    before = snapshot(prefix)
    out = install(run_install, prefix)
    assert snapshot(prefix) == before
    assert f"kept existing {prefix}/etc/{NAME}/bot.env" in out


def test_an_existing_env_file_is_never_overwritten(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    env_file = prefix / f"etc/{NAME}/bot.env"
    env_file.write_text("DISCORD_TOKEN=secret-of-the-operator\nLLM_MODEL=m\n", encoding="utf-8")
    install(run_install, prefix, "--with-chroma")
    assert env_file.read_text(encoding="utf-8") == "DISCORD_TOKEN=secret-of-the-operator\nLLM_MODEL=m\n"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600


def test_install_creates_the_units_credentials_empty_and_readable_by_root_only(
        run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    folder = prefix / f"etc/{NAME}/credentials"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == ["DISCORD_TOKEN", "EMBEDDING_API_KEY", "OPENAI_API_KEY"]
    assert all(f.read_bytes() == b"" and stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


def test_a_filled_credential_is_never_overwritten(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    token = prefix / f"etc/{NAME}/credentials/DISCORD_TOKEN"
    token.write_text("the-operators-token", encoding="utf-8")
    install(run_install, prefix)
    assert token.read_text(encoding="utf-8") == "the-operators-token"


def test_a_second_run_restores_a_changed_unit_and_reloads(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    unit = prefix / UNITS / f"{NAME}.service"
    unit.write_text("[Service]\nExecStart=/bin/false\n", encoding="utf-8")
    install(run_install, prefix)
    assert unit.read_bytes() == BOT_UNIT.read_bytes()
    assert actions(prefix).count("systemctl daemon-reload") == 2


def test_with_chroma_installs_and_enables_the_server_and_the_dropin(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix, "--with-chroma")
    assert (prefix / UNITS / f"{NAME}-chroma.service").read_bytes() == CHROMA_UNIT.read_bytes()
    assert (prefix / UNITS / f"{NAME}.service.d/chroma.conf").read_bytes() == CHROMA_DROPIN.read_bytes()
    assert (prefix / WANTS / f"{NAME}-chroma.service").is_symlink()
    assert (prefix / WANTS / f"{NAME}.service").is_symlink()
    assert (prefix / UNITS / f"{NAME}-chroma-gate.service").read_bytes() == GATE_UNIT.read_bytes()
    assert (prefix / UNITS / f"{NAME}-chroma-gate.socket").read_bytes() == GATE_SOCKET.read_bytes()
    assert (prefix / UNITS / "sockets.target.wants" / f"{NAME}-chroma-gate.socket").is_symlink()


def test_with_chroma_writes_a_random_token_once_readable_by_root_only(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix, "--with-chroma")
    token_file = prefix / f"etc/{NAME}/chroma-token.env"
    first = token_file.read_text(encoding="utf-8")
    assert re.fullmatch(r"CHROMA_AUTH_TOKEN=[0-9a-f]{64}\n", first)
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    install(run_install, prefix, "--with-chroma")
    assert token_file.read_text(encoding="utf-8") == first


def test_a_later_run_without_with_chroma_keeps_the_chroma_server(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix, "--with-chroma")
    before = snapshot(prefix)
    install(run_install, prefix)
    assert snapshot(prefix) == before


def test_uninstall_removes_program_and_units_but_keeps_data_env_file_and_user(
    run_install: Installer, prefix: Path
) -> None:
    install(run_install, prefix, "--with-chroma")
    data = add_data(prefix)
    install(run_install, prefix, "--uninstall")
    assert not (prefix / f"opt/{NAME}").exists()
    assert sorted(p.name for p in (prefix / UNITS).iterdir()) == []
    assert (prefix / f"etc/{NAME}/bot.env").read_bytes() == ENV_EXAMPLE.read_bytes()
    assert all(f.read_text(encoding="utf-8") == "data" for f in data)
    recorded = actions(prefix)
    assert f"systemctl stop {NAME}.service" in recorded
    assert f"systemctl stop {NAME}-chroma.service" in recorded
    assert not any(line.startswith("userdel") for line in recorded)


def test_purge_removes_data_env_file_cache_and_user(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix, "--with-chroma")
    add_data(prefix)
    install(run_install, prefix, "--purge")
    assert not (prefix / f"etc/{NAME}").exists()
    assert not (prefix / f"var/lib/{NAME}").exists()
    assert not (prefix / f"var/lib/{NAME}-chroma").exists()
    assert not (prefix / f"var/cache/{NAME}").exists()
    assert not (prefix / f"opt/{NAME}").exists()
    assert actions(prefix)[-1] == f"userdel {NAME}"


def test_purge_after_uninstall_still_removes_the_kept_data(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    add_data(prefix)
    install(run_install, prefix, "--uninstall")
    install(run_install, prefix, "--purge")
    assert not (prefix / f"var/lib/{NAME}").exists()
    assert not (prefix / f"etc/{NAME}").exists()
    assert actions(prefix).count(f"userdel {NAME}") == 1


def test_install_after_uninstall_keeps_the_operators_env_file(run_install: Installer, prefix: Path) -> None:
    install(run_install, prefix)
    env_file = prefix / f"etc/{NAME}/bot.env"
    env_file.write_text("LLM_MODEL=kept\n", encoding="utf-8")
    install(run_install, prefix, "--uninstall")
    install(run_install, prefix)
    assert env_file.read_text(encoding="utf-8") == "LLM_MODEL=kept\n"
    assert sum(line.startswith("useradd") for line in actions(prefix)) == 1


def test_an_unknown_option_is_a_usage_error(run_install: Installer, prefix: Path) -> None:
    done = run_install("--frobnicate", prefix=prefix)
    assert done.returncode == 2
    assert "unknown option: --frobnicate" in done.stderr and "Usage: install.sh" in done.stderr
    assert not (prefix / "opt").exists()


def test_an_option_missing_its_value_is_a_usage_error(run_install: Installer) -> None:
    done = run_install("--prefix")
    assert done.returncode == 2
    assert "--prefix needs a directory" in done.stderr


def test_help_prints_the_usage(run_install: Installer) -> None:
    done = run_install("--help")
    assert done.returncode == 0
    assert "--uninstall" in done.stdout and "--purge" in done.stdout and "--with-chroma" in done.stdout


def test_a_source_that_is_not_the_repository_is_refused(run_install: Installer, prefix: Path, tmp_path: Path) -> None:
    done = run_install("--no-pip", "--source", str(tmp_path), prefix=prefix)
    assert done.returncode == 1
    assert "is not the bot's repository: pyproject.toml is missing" in done.stderr
    assert not (prefix / "etc").exists()


def test_a_python_older_than_3_11_is_refused(run_install: Installer, prefix: Path, tmp_path: Path) -> None:
    old = tmp_path / "python-3.8"
    old.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    old.chmod(0o755)
    done = run_install("--no-pip", "--python", str(old), prefix=prefix)
    assert done.returncode == 1
    assert "is not Python 3.11 or newer" in done.stderr
    assert not prefix.joinpath("etc").exists() and actions(prefix) == []


@pytest.mark.needs("setpriv", root="run install.sh as another user (setpriv --reuid)")
def test_without_prefix_it_refuses_to_run_as_a_normal_user(tmp_path: Path) -> None:
    setpriv = require_tool("setpriv")
    done = subprocess.run(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "bash", str(INSTALL_SH), "--no-pip"],
        capture_output=True, text=True, timeout=60, cwd="/",
    )
    assert done.returncode == 1
    assert "run as root" in done.stderr


def test_a_prefix_of_the_real_root_is_a_usage_error(run_install: Installer, tmp_path: Path) -> None:
    # --source names an empty folder: were the guard broken, the script would still stop
    # (status 1) before touching the real system.
    done = run_install("--no-pip", "--source", str(tmp_path), prefix=Path("/"))
    assert done.returncode == 2
    assert "--prefix / is the real system" in done.stderr
