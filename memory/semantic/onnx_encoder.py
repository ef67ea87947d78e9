"""The local embedding model run by ONNX Runtime, with no torch in this process.

`OnnxEncoder` has a child process (`memory.semantic.onnx_export`) load the model with
sentence-transformers and export its whole forward pass (transformer, pooling,
normalization) to an ONNX graph, then runs that graph with ONNX Runtime here, on token ids
from the model's own fast tokenizer (`tokenizer.json`, with the truncation length the model
folder states). Nothing is written outside a temporary folder: the export is repeated at
each process start, in the background load.

Why: one short query through torch's eager kernels costs several times what the same graph
costs in ONNX Runtime on this class of CPU, and a search cannot be faster than its query's
vector; and exporting in a child keeps the tracer's and torch's memory out of the bot
(bench/README.md, "Query embedding on ONNX Runtime"). The vectors agree with torch's to
float32 rounding, so stored vectors and new ones stay comparable.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

__all__ = ["EXPORT_TIMEOUT_S", "OnnxEncoder", "OnnxExportError"]

EXPORT_TIMEOUT_S = 300.0  # loading torch and tracing the model, on a busy 2-core box


class OnnxExportError(RuntimeError):
    """The child process could not export the model's graph (its last error line says why)."""


class OnnxEncoder:
    """`encode(texts)`: the model's sentence embeddings, one float32 row per text.

    `threads` is the session's intra-op thread count; idle threads sleep instead of spinning
    (on 2 shared cores a spinning pool takes the CPU the event loop waits for). Batches are
    formed from texts of similar length, as sentence-transformers does, to pad little.
    `encode` may be called from several threads at once: the tokenizer's settings are fixed
    here and never changed, and an InferenceSession's run is thread-safe.
    """

    def __init__(self, model_path: Path, *, threads: int) -> None:
        self._tokenizer = _tokenizer(model_path)
        with tempfile.TemporaryDirectory(prefix="onnx-export-") as folder:
            graph = Path(folder) / "model.onnx"
            _export(model_path, graph)
            self._session = onnxruntime.InferenceSession(
                str(graph), _session_options(threads), providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._session.get_inputs()]
        self._dimension = int(self._session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str], *, batch_size: int) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda n: -len(texts[n]))
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            encodings = self._tokenizer.encode_batch([texts[n] for n in rows])
            columns = {"input_ids": [e.ids for e in encodings], "attention_mask": [e.attention_mask for e in encodings],
                       "token_type_ids": [e.type_ids for e in encodings]}
            out[rows] = self._session.run(None, {name: np.asarray(columns[name], dtype=np.int64)
                                                 for name in self._inputs})[0]
        return out


def _tokenizer(model_path: Path) -> Tokenizer:
    """The model's fast tokenizer, truncating where sentence-transformers does (the folder's
    `max_seq_length`) and padding each batch to its longest text."""
    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    config = json.loads((model_path / "sentence_bert_config.json").read_text())
    tokenizer.enable_truncation(max_length=int(config["max_seq_length"]))
    pad_id = tokenizer.token_to_id("[PAD]")
    tokenizer.enable_padding(pad_id=pad_id if pad_id is not None else 0, pad_token="[PAD]")
    return tokenizer


def _session_options(threads: int) -> onnxruntime.SessionOptions:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _export(model_path: Path, graph: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    try:
        done = subprocess.run([sys.executable, "-m", "memory.semantic.onnx_export", str(model_path), str(graph)],
                              env=env, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise OnnxExportError(f"exporting the model's graph took more than {EXPORT_TIMEOUT_S:g} s") from None
    if done.returncode != 0 or not graph.is_file():
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise OnnxExportError(f"exporting the model's graph failed: {last}")
