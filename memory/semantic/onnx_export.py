"""Export a sentence-transformers model folder's forward pass to an ONNX file (a child's job).

Run as `python -m memory.semantic.onnx_export MODEL_FOLDER OUT_FILE` by `memory.semantic.onnx_encoder`, in a
process of its own, so that torch, the tracer and their memory never enter the bot. The
graph takes `input_ids`, `attention_mask` and `token_type_ids` (batch and sequence length
dynamic) and gives `sentence_embedding`: what the folder's modules (transformer, pooling,
normalization) compute, as `SentenceTransformer.encode` would. Exit status 0 and the file
written, or a non-zero status and one line on stderr saying why.

Part of memory/: imports nothing from agent/ or bot/.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def export(model_folder: Path, out: Path) -> None:
    # torch.onnx.export needs the onnx package only once the model is loaded and traced (about
    # 10 CPU-s): without it, say so before loading anything, and the parent falls back sooner
    try:
        import onnx  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"onnx is not installed ({exc})") from None
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    model = SentenceTransformer(str(model_folder), device="cpu").eval()

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            features = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
            return self.model(features)["sentence_embedding"]

    sample = model.preprocess(["a sentence to trace the graph with"])
    # tracing warns about every data-dependent branch of the model code, all taken the same way
    # for any input of this model: noise in an operator's log
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            SentenceEmbedding(), tuple(sample[name] for name in INPUT_NAMES), str(out),
            input_names=list(INPUT_NAMES), output_names=["sentence_embedding"],
            dynamic_axes={**{name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES},
                          "sentence_embedding": {0: "batch"}},
            opset_version=17, dynamo=False)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m memory.semantic.onnx_export MODEL_FOLDER OUT_FILE", file=sys.stderr)
        return 2
    try:
        export(Path(argv[0]), Path(argv[1]))
    except Exception as exc:  # noqa: BLE001 - the parent reads this one line and falls back to torch
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
