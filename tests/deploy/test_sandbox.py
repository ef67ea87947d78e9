"""The venv's libraries work inside the sandbox the unit files ask for (rebuilt without a
running systemd, see tests/deploy/sandbox.py): the bot embeds, stores and queries with its
system call filter and /proc view at full CPU speed, MemoryDenyWriteExecute would break its
embeddings (why the bot unit leaves it out), and the Chroma server serves and stops cleanly
inside its own, stricter sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deploy.conftest import BOT_UNIT, CHROMA_UNIT
from tests.deploy.sandbox import Sandbox, build_sandbox_run
from tests.deploy.unitfile import UnitFile

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs("gcc", "libseccomp-dev", "systemd-analyze", "unshare", "setpriv",
                      root="rebuild the units' sandbox in new mount and PID namespaces"),
]

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
CHROMA = str(Path(sys.prefix) / "bin" / "chroma")


@pytest.fixture(scope="module")
def sandbox_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sandbox_run(tmp_path_factory.mktemp("bin"))


def host_cpu_capability() -> str:
    done = subprocess.run([PYTHON, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                          capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.strip()


def test_sandbox_run_enforces_the_filter_it_is_given(sandbox_run: Path, tmp_path: Path) -> None:
    sandbox = Sandbox(UnitFile(BOT_UNIT), tmp_path, sandbox_run)
    done = sandbox.run(PYTHON, "-c", "import os; os.nice(5)")
    assert done.returncode != 0 and "Operation not permitted" in done.stderr  # nice is in @resources


def test_the_bot_stack_works_inside_the_bot_units_sandbox_at_full_cpu_speed(sandbox_run: Path, tmp_path: Path) -> None:
    sandbox = Sandbox(UnitFile(BOT_UNIT), tmp_path, sandbox_run)
    done = sandbox.run(PYTHON, str(HERE / "sandbox_workload.py"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-3:] == [f"cpu={host_cpu_capability()}", "embedder=onnx", "ok"]
    assert (sandbox.state / "react-discord-bot" / "bot.sqlite3").exists()


def test_memory_deny_write_execute_breaks_torch_on_the_cpu(sandbox_run: Path, tmp_path: Path) -> None:
    sandbox = Sandbox(UnitFile(BOT_UNIT), tmp_path, sandbox_run, mdwe=True)
    done = sandbox.run(PYTHON, "-c", "import torch; torch.nn.functional.gelu(torch.randn(64, 384))")
    assert done.returncode != 0
    assert "could not create a primitive" in done.stderr


def test_the_same_torch_call_works_without_it(sandbox_run: Path, tmp_path: Path) -> None:
    sandbox = Sandbox(UnitFile(BOT_UNIT), tmp_path, sandbox_run, mdwe=False)
    done = sandbox.run(PYTHON, "-c", "import torch; print(torch.nn.functional.gelu(torch.randn(64, 384)).shape)")
    assert (done.returncode, done.stdout.strip()) == (0, "torch.Size([64, 384])"), done.stderr[-2000:]


def test_the_chroma_server_serves_and_stops_cleanly_inside_its_units_sandbox(
    sandbox_run: Path, tmp_path: Path, unused_tcp_port: int
) -> None:
    unit = UnitFile(CHROMA_UNIT)
    assert unit.value("Service", "MemoryDenyWriteExecute") == "yes"
    sandbox = Sandbox(unit, tmp_path, sandbox_run)
    path = sandbox.state / "react-discord-bot-chroma"
    server = sandbox.start(CHROMA, "run", "--path", str(path), "--host", "127.0.0.1",
                           "--port", str(unused_tcp_port), log=tmp_path / "chroma.log")
    try:
        client = subprocess.run([PYTHON, "-c", CLIENT, str(unused_tcp_port)], capture_output=True, text=True,
                                timeout=120)
        assert (client.returncode, client.stdout.strip()) == (0, "cat"), client.stderr[-2000:]
    finally:
        stop(server)
    assert server.returncode == 0, (tmp_path / "chroma.log").read_text(errors="replace")[-3000:]
    assert (path / "chroma.sqlite3").exists()


CLIENT = """
import sys, time, chromadb
for attempt in range(300):
    try:
        client = chromadb.HttpClient(host="127.0.0.1", port=int(sys.argv[1]))
        client.heartbeat()
        break
    except Exception:
        time.sleep(0.1)
items = client.get_or_create_collection("memories")
items.add(ids=["cat", "job"], embeddings=[[0.9, 0.1, 0.0], [0.0, 0.2, 0.9]], documents=["cat", "job"])
print(items.query(query_embeddings=[[0.8, 0.2, 0.1]], n_results=1)["ids"][0][0])
"""


def stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server (the child of `unshare --fork`), as systemd stops it; wait."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    for _ in range(100):
        pids = children.read_text().split() if children.exists() else []
        if pids or server.poll() is not None:
            break
        time.sleep(0.05)
    for pid in pids:
        os.kill(int(pid), signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
