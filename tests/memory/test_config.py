"""MemorySettings from an environment mapping: defaults, parsing, and errors naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.config import MemorySettings, load_memory_settings
from memory.errors import ConfigError, MemoryStoreError


def test_defaults_with_an_empty_environment() -> None:
    s = load_memory_settings({})
    assert s.data_dir == Path("data")
    assert s.sqlite_path == Path("data") / "bot.sqlite3"
    assert s.chroma_path == Path("data") / "chroma"
    assert s.chroma_host is None
    assert s.chroma_port == 8000
    assert s.chroma_process is True  # the embedded Chroma in its worker process
    assert s.memory_cache_bytes == 512 * 2**20
    assert s.memory_scope == "place"
    assert s.embedding_backend == "local"
    assert s.embedding_model == "all-MiniLM-L6-v2"
    assert s.buffer_retention_days == 90


def test_the_dataclass_defaults_match_the_loader_defaults() -> None:
    assert MemorySettings() == load_memory_settings({})


def test_every_variable_is_read(tmp_path: Path) -> None:
    s = load_memory_settings(
        {
            "DATA_DIR": str(tmp_path / "state"),
            "CHROMA_HOST": "chroma.internal",
            "CHROMA_PORT": "8001",
            "MEMORY_SCOPE": "GLOBAL",
            "EMBEDDING_BACKEND": "openai",
            "EMBEDDING_MODEL": "nomic-embed-text",
            "EMBEDDING_BASE_URL": "http://127.0.0.1:11434/v1/",
            "EMBEDDING_API_KEY": "sk-local",
            "BUFFER_RETENTION_DAYS": "30",
            "CHROMA_PROCESS": "off",
            "MEMORY_CACHE_MB": "64",
        }
    )
    assert s.sqlite_path == tmp_path / "state" / "bot.sqlite3"
    assert s.chroma_path == tmp_path / "state" / "chroma"
    assert (s.chroma_host, s.chroma_port) == ("chroma.internal", 8001)
    assert s.memory_scope == "global"
    assert s.embedding_backend == "openai"
    assert s.embedding_model == "nomic-embed-text"
    assert s.embedding_base_url == "http://127.0.0.1:11434/v1"
    assert s.embedding_api_key == "sk-local"
    assert s.buffer_retention_days == 30
    assert s.chroma_process is False
    assert s.memory_cache_bytes == 64 * 2**20


def test_a_chroma_process_value_that_is_not_a_boolean_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="CHROMA_PROCESS"):
        load_memory_settings({"CHROMA_PROCESS": "sometimes"})


@pytest.mark.parametrize("raw", ["0", "-5", "lots", "1.5"])
def test_a_memory_cache_that_is_not_a_positive_whole_number_names_the_variable(raw: str) -> None:
    with pytest.raises(ConfigError, match="MEMORY_CACHE_MB"):
        load_memory_settings({"MEMORY_CACHE_MB": raw})


def test_empty_values_count_as_unset() -> None:
    assert load_memory_settings({"DATA_DIR": "", "CHROMA_PORT": "  ", "CHROMA_HOST": ""}) == MemorySettings()


def test_openai_backend_defaults_to_the_agent_endpoint_and_key() -> None:
    s = load_memory_settings(
        {"EMBEDDING_BACKEND": "openai", "OPENAI_BASE_URL": "http://localhost:8080/v1", "OPENAI_API_KEY": "k"}
    )
    assert s.embedding_base_url == "http://localhost:8080/v1"
    assert s.embedding_api_key == "k"
    assert s.embedding_model == "text-embedding-3-small"


@pytest.mark.parametrize(
    ("env", "variable", "shown"),
    [
        ({"CHROMA_PORT": "eighty"}, "CHROMA_PORT", "'eighty'"),
        ({"CHROMA_PORT": "70000"}, "CHROMA_PORT", "'70000'"),
        ({"CHROMA_PORT": "0"}, "CHROMA_PORT", "'0'"),
        ({"CHROMA_HOST": "http://chroma:8000"}, "CHROMA_HOST", "'http://chroma:8000'"),
        ({"MEMORY_SCOPE": "guild"}, "MEMORY_SCOPE", "'guild'"),
        ({"EMBEDDING_BACKEND": "torch"}, "EMBEDDING_BACKEND", "'torch'"),
        ({"EMBEDDING_BASE_URL": "localhost:11434"}, "EMBEDDING_BASE_URL", "'localhost:11434'"),
        ({"EMBEDDING_BASE_URL": "http://[::1/v1"}, "EMBEDDING_BASE_URL", "'http://[::1/v1'"),
        ({"EMBEDDING_BASE_URL": "http://:11434/v1"}, "EMBEDDING_BASE_URL", "'http://:11434/v1'"),
        ({"BUFFER_RETENTION_DAYS": "-1"}, "BUFFER_RETENTION_DAYS", "'-1'"),
        ({"BUFFER_RETENTION_DAYS": "1.5"}, "BUFFER_RETENTION_DAYS", "'1.5'"),
    ],
)
def test_a_bad_value_names_the_variable_and_the_value(env: dict[str, str], variable: str, shown: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_memory_settings(env)
    assert variable in str(info.value)
    assert shown in str(info.value)


def test_data_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    a_file = tmp_path / "data"
    a_file.write_text("not a folder")
    with pytest.raises(ConfigError, match="DATA_DIR"):
        load_memory_settings({"DATA_DIR": str(a_file)})


def test_openai_backend_without_a_key_for_openai_is_refused() -> None:
    with pytest.raises(ConfigError, match="EMBEDDING_API_KEY"):
        load_memory_settings({"EMBEDDING_BACKEND": "openai"})


def test_the_api_key_is_never_shown_in_repr_or_errors() -> None:
    secret = "sk-very-secret-value"
    s = load_memory_settings({"EMBEDDING_API_KEY": secret})
    assert secret not in repr(s)
    with pytest.raises(ConfigError) as info:
        load_memory_settings({"EMBEDDING_API_KEY": secret, "EMBEDDING_BASE_URL": "nope"})
    assert secret not in str(info.value)


@pytest.mark.parametrize("variable", ["EMBEDDING_API_KEY", "OPENAI_API_KEY"])
def test_a_key_with_spaces_is_refused_without_showing_it(variable: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable} ") as info:
        load_memory_settings({variable: "sk-secret pasted twice"})
    assert "sk-secret" not in str(info.value)


def test_config_error_is_a_memory_store_error() -> None:
    assert issubclass(ConfigError, MemoryStoreError)
