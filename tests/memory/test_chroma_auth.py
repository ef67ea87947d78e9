"""CHROMA_AUTH_TOKEN against a REAL Chroma server that demands a token: `chroma run` behind the
token gate (`python -m chromagate`), as deploy/chroma.service and chroma-gate.service run them.
The memory works with the token; without it (or with another) it is refused with one line that
names the server and never the token; another local process gets chromadb's 403."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memory.config import load_memory_settings
from memory.errors import ConfigError, StoreUnavailable
from memory.semantic import open_user_memory, scope_for
from memory.semantic.embeddings import LocalEmbedder
from tests.fakes.chroma_server import ChromaServer, free_port

TOKEN = "chroma-Tq8!Vn3#Lx0"
ALICE = "111111111111111111"
GUILD = scope_for("900000000000000000")
REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = "/api/v2/tenants/default_tenant/databases/default_database/collections"


@dataclass
class Gate:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gate]:
    folder = tmp_path_factory.mktemp("chroma-auth")
    token_file = folder / "CHROMA_AUTH_TOKEN"
    token_file.write_text(TOKEN + "\n")
    with ChromaServer(folder / "data") as server:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "chromagate", "--upstream", server.url,
                                 "--token-file", str(token_file), "--port", str(port)], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("the gate did not start") from None
                    time.sleep(0.1)
            yield Gate("127.0.0.1", port)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _settings(gate: Gate, token: str | None, data: Path) -> dict[str, str]:
    env = {"CHROMA_HOST": gate.host, "CHROMA_PORT": str(gate.port), "DATA_DIR": str(data)}
    return env if token is None else {**env, "CHROMA_AUTH_TOKEN": token}


async def test_the_memory_works_through_the_gate_with_the_token(gate: Gate, local_embedder: LocalEmbedder,
                                                               tmp_path: Path) -> None:
    settings = load_memory_settings(_settings(gate, TOKEN, tmp_path))
    memory = open_user_memory(settings=settings, embedder=local_embedder, collection="with-token")
    try:
        await memory.add(ALICE, "I keep bees on the roof", scope=GUILD)
        assert [h.text for h in await memory.search(ALICE, "what animals do I keep?", scope=GUILD)] == [
            "I keep bees on the roof"]
        assert await memory.forget(ALICE) == 1
    finally:
        await memory.close()


@pytest.mark.parametrize("token", [None, "another-token"], ids=["no token", "a wrong token"])
def test_without_the_right_token_the_memory_is_refused_in_one_line_without_the_token(
        gate: Gate, local_embedder: LocalEmbedder, token: str | None, tmp_path: Path) -> None:
    settings = load_memory_settings(_settings(gate, token, tmp_path))
    with pytest.raises(StoreUnavailable) as caught:
        open_user_memory(settings=settings, embedder=local_embedder, collection="no-token")
    message = str(caught.value)
    assert f"{gate.host}:{gate.port}" in message and "\n" not in message
    assert TOKEN not in message and "another-token" not in message


@pytest.mark.parametrize("headers", [{}, {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": TOKEN},
                                     {"X-Chroma-Token": TOKEN}], ids=["none", "longer", "no bearer", "other header"])
def test_another_local_process_gets_chromadbs_403_and_nothing_else(gate: Gate, headers: dict[str, str]) -> None:
    listed = httpx.get(gate.url + COLLECTIONS, headers=headers)
    assert (listed.status_code, listed.json()) == (403, {"error": "AuthError", "message": "Forbidden"})


def test_the_gate_forwards_a_request_with_the_token_whole(gate: Gate) -> None:
    listed = httpx.get(gate.url + COLLECTIONS, headers={"Authorization": f"Bearer {TOKEN}"})
    assert listed.status_code == 200 and isinstance(listed.json(), list)


def test_the_gate_stops_at_once_without_a_token(tmp_path: Path) -> None:
    empty = tmp_path / "CHROMA_AUTH_TOKEN"
    empty.write_text("\n")
    done = subprocess.run([sys.executable, "-m", "chromagate", "--upstream", "http://127.0.0.1:9",
                           "--token-file", str(empty)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip()) == (2, f"config error: the token file {empty} is empty")


def test_a_token_chroma_cannot_send_stops_start_up_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="^CHROMA_AUTH_TOKEN contains spaces"):
        load_memory_settings({"CHROMA_HOST": "127.0.0.1", "CHROMA_AUTH_TOKEN": "two words"})


def test_the_token_is_never_in_the_settings_repr() -> None:
    assert TOKEN not in repr(load_memory_settings({"CHROMA_HOST": "h", "CHROMA_AUTH_TOKEN": TOKEN}))
