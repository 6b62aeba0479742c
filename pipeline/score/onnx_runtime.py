"""The text encoders run by ONNX Runtime: the same weights, exported once from the torch model.

The export traces the torch encoder's own forward pass (tokens in, pooled sentence embedding
out, so pooling and dense layers are the same code) into `<IMAGENOT_CACHE>/onnx/<hash>/`, offline,
with `PROVENANCE.json` naming the source model, torch and the opset. The inference loop is the
torch path's (`_TokenBatchingEncoder`: each distinct token sequence once, same-length batches,
no padding). ONNX Runtime's matrix kernels round a pass of few token rows differently, so every
pass here has at least MIN_TOKEN_ROWS (64) token rows; with one thread a caption then gets the
same bits whatever its batch (tests/test_encoders.py). The bits differ from torch's in the last
places (cosine >= 0.999 against it, `bench_encoder.py`), so the model id, which keys the
embedding cache, names the runtime.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import warnings
from pathlib import Path

import numpy as np

from imagenot.labels.encoders.text import _TokenBatchingEncoder
from imagenot.pipeline.score.model_cache import announce, is_prepared, publish, staging_folder
from imagenot.wordnet.nltk_data import cache_dir

OPSET = 17
MIN_TOKEN_ROWS = 64
MODEL_FILE = "model.onnx"


def export_dir(model_id: str) -> Path:
    torch_version = importlib.metadata.version("torch")
    return (
        cache_dir() / "onnx" / hashlib.sha1(f"{model_id}|torch={torch_version}|opset={OPSET}".encode()).hexdigest()[:16]
    )


def export_onnx(encoder: _TokenBatchingEncoder) -> Path:
    """The ONNX file of `encoder` (a torch encoder), exported now unless cached."""
    import torch

    target = export_dir(encoder.model_id)
    if is_prepared(target):
        return target / MODEL_FILE
    announce(f"the ONNX export of {encoder.model_id} (about 10 s)", target)
    names = list(encoder.tokenizer(["an example"]).keys())

    class Forward(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder_module = encoder.model

        def forward(self, *tensors):
            return encoder._forward(dict(zip(names, tensors)))

    example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    staging = staging_folder(target)
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # the tracer's notes on Python control flow it froze
        torch.onnx.export(
            Forward().eval(),
            example,
            str(staging / MODEL_FILE),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )
    provenance = {
        "source_model": encoder.model_id,
        "torch": importlib.metadata.version("torch"),
        "opset": OPSET,
        "sha256": hashlib.sha256((staging / MODEL_FILE).read_bytes()).hexdigest(),
    }
    publish(staging, target, provenance)
    return target / MODEL_FILE


class OnnxEncoder(_TokenBatchingEncoder):
    """`torch_encoder`'s model run by ONNX Runtime on `threads` threads; `model_path`: another
    ONNX file of that model (a benchmark's quantized copy) instead of its export."""

    min_token_rows = MIN_TOKEN_ROWS

    def __init__(self, torch_encoder: _TokenBatchingEncoder, threads: int = 1, model_path: str | None = None):
        import onnxruntime

        path = model_path or export_onnx(torch_encoder)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer, self.max_length = torch_encoder.tokenizer, torch_encoder.max_length
        self.batch_size, self.dim = torch_encoder.batch_size, torch_encoder.dim
        self.model_id = self.identify(torch_encoder.model_id)
        if model_path:  # another file gives other embeddings: its digest keys the cache
            self.model_id += f",file={hashlib.sha256(Path(model_path).read_bytes()).hexdigest()[:16]}"

    @staticmethod
    def identify(torch_model_id: str) -> str:
        """The model id of this runtime over the torch encoder `torch_model_id` (its own export)."""
        return f"{torch_model_id}#runtime=onnx"

    def _forward(self, batch: dict):
        import torch

        feed = {name: np.ascontiguousarray(batch[name].numpy()) for name in self.inputs}
        return torch.from_numpy(self.session.run(None, feed)[0])
