"""Text encoders that turn captions and glosses into L2-normalised float32 embeddings.

Two real implementations behind one small interface: sentence-transformers models as they are
packaged, and any Hugging Face transformers encoder (RoBERTa in the paper) with mean or CLS
pooling. Models load from a local path or the local hub cache only: nothing is downloaded.
"""

from __future__ import annotations

import os

# Before transformers/sentence_transformers are imported anywhere in this process.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from typing import Literal

import numpy as np

from imagenot.errors import ImagenotError
from imagenot.labels.encoders.models import DEFAULT_MODEL, resolve_model

EncoderKind = Literal["sentence-transformers", "transformers"]
Pooling = Literal["mean", "cls"]
Runtime = Literal["torch", "onnx"]


class EncoderError(ImagenotError, ValueError):
    """A model cannot be found or loaded; the message names the model and what was expected."""


def _set_torch_threads(threads: int) -> None:
    """torch's intra-op threads for this process (a process-wide setting). One thread keeps an
    embedding's bits independent of its batch-mates and of the machine: with several, torch
    splits some matrix products by thread, and short sequences (3 tokens with MiniLM) then round
    differently alone than in a batch, and differently with 1 and 2 threads."""
    import torch

    torch.set_num_threads(threads)


def load_transformers_model(model_name_or_path: str, threads: int):
    """(tokenizer, model in eval mode, model id) of a local transformers model, on `threads` torch threads."""
    from transformers import AutoModel, AutoTokenizer

    path, model_id = resolve_model(model_name_or_path)
    _set_torch_threads(threads)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    except (OSError, ValueError) as err:
        raise EncoderError(
            f"transformers model {model_name_or_path!r}: not a local model directory nor in the local hub cache ({err})"
        ) from err
    return tokenizer, model, model_id


def distinct_sequences(input_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(inverse, firsts): the index of each row's distinct token sequence, and a row of each."""
    first_of: dict[tuple[int, ...], int] = {}
    inverse = np.fromiter(
        (first_of.setdefault(tuple(ids), len(first_of)) for ids in input_ids), dtype=np.int64, count=len(input_ids)
    )
    return inverse, np.unique(inverse, return_index=True)[1]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, np.float32(1e-12))


MIN_TOKEN_ROWS = 16  # token rows (sequences x length) of the smallest forward pass


class _SameLengthBatches:
    """Token sequences batched for a model so that a sequence's output does not depend on its
    batch-mates (`_TokenBatchingEncoder` says why); `spans.SpanEncoder` shares it."""

    batch_size: int
    min_token_rows = MIN_TOKEN_ROWS

    def batches(self, tokens, firsts: np.ndarray):
        """(rows of `firsts`, token tensors) per forward pass, under torch.inference_mode: the
        distinct sequences (`firsts`: a row of `tokens` each) in batches of one length, unpadded,
        each repeated up to `min_token_rows` token rows (the caller keeps the first copy)."""
        import torch

        lengths = np.array([len(tokens["input_ids"][row]) for row in firsts])
        with torch.inference_mode():
            for length in np.unique(lengths):
                same_length = np.flatnonzero(lengths == length)
                for start in range(0, len(same_length), self.batch_size):
                    batch_rows = same_length[start : start + self.batch_size]
                    # A forward pass of few token rows takes another matrix kernel, which rounds
                    # differently: repeat the batch until it has min_token_rows.
                    copies = -(-self.min_token_rows // (len(batch_rows) * int(length)))
                    yield (
                        batch_rows,
                        {
                            key: torch.tensor([tokens[key][firsts[i]] for i in batch_rows] * copies)
                            for key in ("input_ids", "attention_mask", "token_type_ids")
                            if key in tokens
                        },
                    )


class _TokenBatchingEncoder(_SameLengthBatches):
    """Shared inference loop: tokenise once, run each distinct token sequence through the model
    once, in batches of sequences of the same length, under torch.inference_mode.

    Same-length batches need no padding, and without padding (and on one torch thread, see
    `_set_torch_threads`) a sequence's embedding does not depend on which other sequences share
    its batch (with padding it moves in the last float bits): a caption gets the same vector bit
    for bit in any run, worker or cache state.

    Captions that differ only in ways the tokenizer erases (case for uncased models,
    whitespace) give identical model inputs, hence are embedded once.
    """

    tokenizer: object
    max_length: int
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        tokens = self.tokenizer(list(texts), truncation=True, max_length=self.max_length)
        inverse, firsts = distinct_sequences(tokens["input_ids"])
        unique = np.zeros((len(firsts), self.dim), dtype=np.float32)
        for rows, batch in self.batches(tokens, firsts):
            unique[rows] = self._forward(batch)[: len(rows)].float().numpy()
        return _normalise(unique)[inverse]

    def _forward(self, batch: dict):
        """Sentence embeddings (rows, dim) for one batch of token tensors: sequences of one length,
        unpadded, repeated up to `min_token_rows` token rows (the caller keeps the first copy)."""
        raise NotImplementedError


class SentenceTransformerEncoder(_TokenBatchingEncoder):
    """A sentence-transformers model, run through its own modules (pooling, dense, normalise)."""

    def __init__(self, model_name_or_path: str = DEFAULT_MODEL, batch_size: int = 64, threads: int = 1):
        from sentence_transformers import SentenceTransformer

        path = resolve_model(model_name_or_path)[0]
        self.model_id = self.identify(model_name_or_path)
        _set_torch_threads(threads)
        try:
            self.model = SentenceTransformer(path, device="cpu", local_files_only=True).eval()
        except (OSError, ValueError) as err:
            raise EncoderError(
                f"sentence-transformers model {model_name_or_path!r}: not a local model "
                f"directory nor in the local hub cache ({err})"
            ) from err
        self.tokenizer = getattr(self.model[0], "tokenizer", None)
        if self.tokenizer is None:
            raise EncoderError(
                f"sentence-transformers model {model_name_or_path!r}: expected a text "
                f"Transformer as its first module, found {type(self.model[0]).__name__}"
            )
        self.max_length = int(self.model.max_seq_length)
        self.batch_size = batch_size
        self.dim = int(self.model.get_embedding_dimension())

    @staticmethod
    def identify(model_name_or_path: str = DEFAULT_MODEL, **_options) -> str:
        """The model id of this encoder over `model_name_or_path`, known without loading it."""
        return resolve_model(model_name_or_path)[1]

    def _forward(self, batch: dict):
        return self.model(batch)["sentence_embedding"]

    def pool(self, hidden, batch: dict):
        """The sentence embeddings `_forward` makes from the model's last hidden states `hidden`: the
        modules after the transformer (pooling, dense, normalise), for a caller that ran it."""
        features = {"token_embeddings": hidden, "attention_mask": batch["attention_mask"]}
        for module in list(self.model)[1:]:
            features = module(features)
        return features["sentence_embedding"]


class TransformersEncoder(_TokenBatchingEncoder):
    """A Hugging Face encoder (AutoModel) with mean or CLS pooling of its last hidden state."""

    def __init__(
        self,
        model_name_or_path: str = DEFAULT_MODEL,
        pooling: Pooling = "mean",
        max_length: int = 256,
        batch_size: int = 64,
        threads: int = 1,
    ):
        self.model_id = self.identify(model_name_or_path, pooling, max_length)
        self.tokenizer, self.model, _ = load_transformers_model(model_name_or_path, threads)
        self.pooling = pooling
        self.max_length = max_length
        self.batch_size = batch_size
        self.dim = int(self.model.config.hidden_size)

    @staticmethod
    def identify(
        model_name_or_path: str = DEFAULT_MODEL, pooling: Pooling = "mean", max_length: int = 256, **_options
    ) -> str:
        """The model id of this encoder over `model_name_or_path`, known without loading it."""
        if pooling not in ("mean", "cls"):
            raise EncoderError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        # Pooling and truncation change the embedding, so they are part of its identity.
        return f"{resolve_model(model_name_or_path)[1]}#pooling={pooling},max_length={max_length}"

    def _forward(self, batch: dict):
        return self.pool(self.model(**batch).last_hidden_state, batch)

    def pool(self, hidden, batch: dict):
        """The sentence embeddings of the model's last hidden states `hidden` (mean or CLS)."""
        if self.pooling == "cls":
            return hidden[:, 0]
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
