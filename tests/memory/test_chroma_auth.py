"""CHROMA_AUTH_TOKEN against a REAL Chroma server started with token authentication: the client
is let in with the token, and without it (or with another) the memory is refused with one line
that names the server and never the token. Another local process, an MCP server say, gets
nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from memory.semantic.chroma_backend import ChromaStore
from memory.config import load_memory_settings
from memory.semantic.embeddings import LocalEmbedder
from memory.errors import ConfigError, StoreUnavailable
from memory.semantic import open_user_memory, scope_for
from tests.fakes.chroma_server import ChromaServer

TOKEN = "chroma-Tq8!Vn3#Lx0"
ALICE = "111111111111111111"
GUILD = scope_for("900000000000000000")


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with ChromaServer(tmp_path_factory.mktemp("chroma-auth") / "data", auth_token=TOKEN) as server:
        yield server


def _settings(server: ChromaServer, token: str | None) -> dict[str, str]:
    env = {"CHROMA_HOST": server.host, "CHROMA_PORT": str(server.port)}
    return env if token is None else {**env, "CHROMA_AUTH_TOKEN": token}


def test_the_client_opens_a_collection_on_a_server_that_demands_a_token_when_given_it(
        guarded_server: ChromaServer) -> None:
    """The store as open_user_memory opens it from CHROMA_AUTH_TOKEN. (The whole memory is not
    run here: chromadb 1.5.9's Python server, the one with authentication, fails reading items
    with their vectors, a 500 from its `get`; bench/README.md and deploy/README.md say more.)"""
    settings = load_memory_settings(_settings(guarded_server, TOKEN))
    store = ChromaStore.open(path=None, host=settings.chroma_host, port=settings.chroma_port,
                             collection="with-token", embedder_name="e", dimension=3,
                             auth_token=settings.chroma_auth_token)
    assert store.name == "with-token"


@pytest.mark.parametrize("token", [None, "another-token"], ids=["no token", "a wrong token"])
def test_without_the_right_token_the_server_refuses_in_one_line_without_the_token(
        guarded_server: ChromaServer, local_embedder: LocalEmbedder, token: str | None) -> None:
    settings = load_memory_settings(_settings(guarded_server, token))
    with pytest.raises(StoreUnavailable) as caught:
        open_user_memory(settings=settings, embedder=local_embedder, collection="no-token")
    message = str(caught.value)
    assert f"{guarded_server.host}:{guarded_server.port}" in message and "\n" not in message
    assert TOKEN not in message and "another-token" not in message


def test_another_local_process_without_the_token_reads_nothing(guarded_server: ChromaServer) -> None:
    listed = httpx.get(f"{guarded_server.url}/api/v2/tenants/default_tenant/databases/default_database/collections")
    assert listed.status_code in (401, 403)


def test_a_token_chroma_cannot_send_stops_start_up_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="^CHROMA_AUTH_TOKEN contains spaces"):
        load_memory_settings({"CHROMA_HOST": "127.0.0.1", "CHROMA_AUTH_TOKEN": "two words"})


def test_the_token_is_never_in_the_settings_repr() -> None:
    assert TOKEN not in repr(load_memory_settings({"CHROMA_HOST": "h", "CHROMA_AUTH_TOKEN": TOKEN}))
