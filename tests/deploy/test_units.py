"""The systemd units: what they run, as whom, where their state lives, how they restart and stop,
and the hardening they carry. Read from the files as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings.config import load_settings
from tests.deploy.conftest import BOT_UNIT, CHROMA_DROPIN, CHROMA_UNIT, GATE_SOCKET, GATE_UNIT, NAME
from tests.deploy.unitfile import UnitFile

HARDENING = {
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "PrivateUsers": "yes",
    "PrivateIPC": "yes",
    "PrivateMounts": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "ProtectProc": "invisible",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "RemoveIPC": "yes",
    "SystemCallArchitectures": "native",
    "SystemCallErrorNumber": "EPERM",
    "UMask": "0077",
}


@pytest.mark.parametrize("path", [BOT_UNIT, CHROMA_UNIT, GATE_UNIT], ids=["bot", "chroma", "gate"])
def test_both_units_carry_every_hardening_setting(path: Path) -> None:
    unit = UnitFile(path)
    found = {key: unit.value("Service", key) for key in HARDENING}
    assert found == HARDENING


def test_bot_unit_opens_only_internet_and_local_sockets(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "RestrictAddressFamilies") == "AF_INET AF_INET6 AF_UNIX"
    assert bot_unit.value("Service", "IPAddressDeny") == "link-local multicast fd00:ec2::254"


def test_bot_unit_keeps_proc_cpuinfo_for_torch(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "ProcSubset") is None
    assert "No ProcSubset=pid" in BOT_UNIT.read_text(encoding="utf-8"), "the reason is a comment"


def test_chroma_unit_adds_what_the_bot_cannot_have(chroma_unit: UnitFile) -> None:
    assert chroma_unit.value("Service", "ProcSubset") == "pid"
    assert chroma_unit.value("Service", "MemoryDenyWriteExecute") == "yes"
    assert chroma_unit.value("Service", "RestrictAddressFamilies") == "AF_INET AF_INET6"


def test_bot_unit_filters_system_calls_to_the_service_set_without_privileged_or_resources(
    bot_unit: UnitFile,
) -> None:
    assert bot_unit.values("Service", "SystemCallFilter") == ["@system-service", "~@privileged @resources"]


def test_bot_unit_does_not_deny_writable_executable_memory_for_torch(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "MemoryDenyWriteExecute") is None
    assert "MemoryDenyWriteExecute" in BOT_UNIT.read_text(encoding="utf-8"), "the reason is a comment"


def test_bot_unit_runs_the_discord_bot_from_the_venv_as_its_own_user(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "ExecStart") == f"/opt/{NAME}/bin/python -m bot run"
    assert bot_unit.value("Service", "User") == NAME
    assert bot_unit.value("Service", "Group") == NAME
    assert bot_unit.value("Service", "DynamicUser") is None


def test_bot_unit_keeps_data_dir_in_its_state_directory(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "StateDirectory") == NAME
    assert f"DATA_DIR=%S/{NAME}" in bot_unit.words("Service", "Environment")
    assert bot_unit.value("Service", "EnvironmentFile") == f"/etc/{NAME}/bot.env"


def test_bot_unit_never_fetches_models_from_a_hub(bot_unit: UnitFile) -> None:
    assert "HF_HUB_OFFLINE=1" in bot_unit.words("Service", "Environment")


def test_bot_unit_restarts_on_failure_within_a_start_limit(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "Restart") == "on-failure"
    assert bot_unit.value("Unit", "StartLimitIntervalSec") == "600"
    assert bot_unit.value("Unit", "StartLimitBurst") == "5"


def test_bot_unit_does_not_restart_on_a_configuration_error(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "RestartPreventExitStatus") == "2"


def test_bot_unit_gives_a_graceful_shutdown_time_to_finish_turns(bot_unit: UnitFile) -> None:
    assert bot_unit.value("Service", "KillSignal") == "SIGTERM"
    assert bot_unit.value("Service", "KillMode") == "mixed"
    # More than the bot's own wait for running turns, so closing the databases is not cut off.
    assert int(bot_unit.value("Service", "TimeoutStopSec") or 0) > load_settings({"LLM_MODEL": "m"}).shutdown_timeout_s


def test_bot_unit_is_ordered_after_the_optional_chroma_unit_without_requiring_it(
    bot_unit: UnitFile,
) -> None:
    assert f"{NAME}-chroma.service" in bot_unit.words("Unit", "After")
    assert f"{NAME}-chroma.service" not in bot_unit.words("Unit", "Wants")
    assert f"{NAME}-chroma.service" not in bot_unit.words("Unit", "Requires")


def test_chroma_dropin_pulls_in_the_gate_and_points_the_bot_at_it_with_the_token() -> None:
    dropin = UnitFile(CHROMA_DROPIN)
    assert dropin.words("Unit", "Wants") == [f"{NAME}-chroma-gate.socket"]
    assert dropin.words("Service", "Environment") == ["CHROMA_HOST=127.0.0.1", "CHROMA_PORT=8000"]
    assert dropin.value("Service", "EnvironmentFile") == f"/etc/{NAME}/chroma-token.env"


def test_chroma_unit_serves_only_its_own_network_namespace_as_a_user_of_its_own(chroma_unit: UnitFile) -> None:
    assert chroma_unit.value("Service", "ExecStart") == (
        f"/opt/{NAME}/bin/chroma run --path %S/{NAME}-chroma --host 127.0.0.1 --port 8001"
    )
    assert chroma_unit.value("Service", "PrivateNetwork") == "yes"  # nothing outside reaches its port
    assert chroma_unit.value("Service", "DynamicUser") == "yes"  # nor the bot's user its files
    assert chroma_unit.value("Service", "User") is None
    assert chroma_unit.value("Service", "StateDirectory") == f"{NAME}-chroma"
    assert chroma_unit.value("Service", "IPAddressAllow") == "localhost"
    assert chroma_unit.value("Service", "IPAddressDeny") == "any"


def test_the_gate_listens_where_the_bot_connects_and_joins_chromas_namespace() -> None:
    socket, gate = UnitFile(GATE_SOCKET), UnitFile(GATE_UNIT)
    assert socket.value("Socket", "ListenStream") == "127.0.0.1:8000"
    assert socket.value("Socket", "Service") == f"{NAME}-chroma-gate.service"
    assert gate.value("Unit", "JoinsNamespaceOf") == f"{NAME}-chroma.service"
    assert f"{NAME}-chroma.service" in gate.words("Unit", "Requires")
    assert gate.value("Service", "PrivateNetwork") == "yes" and gate.value("Service", "DynamicUser") == "yes"
    assert gate.value("Service", "ExecStart") == f"/opt/{NAME}/bin/python -m chromagate --upstream http://127.0.0.1:8001"
    assert gate.value("Service", "EnvironmentFile") == f"/etc/{NAME}/chroma-token.env"


def test_both_units_start_at_boot_once_enabled(bot_unit: UnitFile, chroma_unit: UnitFile) -> None:
    assert bot_unit.value("Install", "WantedBy") == "multi-user.target"
    assert chroma_unit.value("Install", "WantedBy") == "multi-user.target"


@pytest.mark.parametrize("path", [BOT_UNIT, CHROMA_UNIT], ids=["bot", "chroma"])
def test_both_units_cap_memory_and_tasks(path: Path) -> None:
    unit = UnitFile(path)
    high, most = (unit.value("Service", key) for key in ("MemoryHigh", "MemoryMax"))
    assert high and most and _bytes(high) < _bytes(most)
    assert int(unit.value("Service", "TasksMax") or 0) > 0


def _bytes(size: str) -> int:
    """Bytes of a systemd size such as 512M or 3G."""
    power = {"K": 1, "M": 2, "G": 3, "T": 4}.get(size[-1])
    return int(size) if power is None else int(size[:-1]) * 1024 ** power


def test_bot_unit_denies_the_ipv4_and_ipv6_metadata_services_and_link_local(bot_unit: UnitFile) -> None:
    denied = bot_unit.words("Service", "IPAddressDeny")
    assert {"link-local", "multicast", "fd00:ec2::254"} <= set(denied)  # 169.254.169.254 is link-local
    assert bot_unit.value("Service", "IPAddressAllow") is None


def test_bot_unit_loads_the_token_and_keys_as_credentials_named_after_their_variables(
        bot_unit: UnitFile) -> None:
    loaded = dict(line.split(":", 1) for line in bot_unit.values("Service", "LoadCredential"))
    assert loaded == {name: f"/etc/{NAME}/credentials/{name}"
                      for name in ("DISCORD_TOKEN", "OPENAI_API_KEY", "EMBEDDING_API_KEY")}
