"""The local embedding model's forward pass run by ONNX Runtime instead of torch.

`OnnxEncoder` takes a loaded sentence-transformers model, exports its whole forward pass
(transformer, pooling, normalization: the modules the model folder lists) to an ONNX graph
in memory, and runs that graph with ONNX Runtime; the model's own `preprocess` still turns
texts into token ids, so tokenization, truncation and padding are the model's. Nothing is
written to disk: the export is repeated at each process start, in the background load.

Why: one short query through torch's eager kernels costs several times what the same graph
costs in ONNX Runtime on this class of CPU (bench/README.md, "Query embedding"), and a
search cannot be faster than its query's vector. The vectors agree with torch's to float32
rounding, so stored vectors and new ones stay comparable.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import io
import threading
import warnings
from typing import Protocol

import numpy as np
import onnxruntime
import torch

__all__ = ["OnnxEncoder", "SentenceModel"]

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class SentenceModel(Protocol):
    """What is used of a sentence-transformers `SentenceTransformer`."""

    def preprocess(self, inputs: list[str]) -> dict[str, torch.Tensor]: ...

    def __call__(self, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]: ...


class OnnxEncoder:
    """`encode(texts)`: the sentence embeddings of `model`, computed by ONNX Runtime.

    `threads` is the session's intra-op thread count; idle threads sleep instead of spinning
    (on 2 shared cores a spinning pool takes the CPU the event loop waits for). Batches are
    formed from texts of similar length, as sentence-transformers does, to pad little.
    """

    def __init__(self, model: SentenceModel, *, threads: int) -> None:
        self._model = model
        self._session = onnxruntime.InferenceSession(
            _export(model), _session_options(threads), providers=["CPUExecutionProvider"])
        # a fast tokenizer shared by threads raises "Already borrowed" when two calls set its
        # padding and truncation at once (huggingface/tokenizers#537): tokenizing is serialized,
        # running the graph is not (an InferenceSession's run is thread-safe)
        self._tokenizing = threading.Lock()

    def encode(self, texts: list[str], *, batch_size: int) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda n: -len(texts[n]))
        out = np.empty((len(texts), self._session.get_outputs()[0].shape[-1]), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            with self._tokenizing:
                features = self._model.preprocess([texts[n] for n in rows])
            feed = {name: features[name].numpy() for name in INPUT_NAMES}
            out[rows] = self._session.run(None, feed)[0]
        return out


def _session_options(threads: int) -> onnxruntime.SessionOptions:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _export(model: SentenceModel) -> bytes:
    """The model's forward pass as a serialized ONNX graph, batch and sequence length dynamic."""

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            features = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
            return self.model(features)["sentence_embedding"]

    sample = model.preprocess(["a sentence to trace the graph with"])
    graph = io.BytesIO()
    # tracing warns about every data-dependent branch of the model code, all taken the same way
    # for any input of this model: noise in an operator's log
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            SentenceEmbedding().eval(), tuple(sample[name] for name in INPUT_NAMES), graph,
            input_names=list(INPUT_NAMES), output_names=["sentence_embedding"],
            dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES},
                          "sentence_embedding": {0: "batch"}},
            opset_version=17, dynamo=False)
    return graph.getvalue()
