from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from imagenot.errors import ImagenotError
from imagenot.labels.similarity import QueryEmbeddings, score_batch
from imagenot.pipeline.rank.ranking import BELOW_THRESHOLD, BEYOND_TOP_K, NO_CAPTIONS, rank_synsets, top_n_mean
from imagenot.pipeline.run.keyed_hash import sample_key, sample_keys
from imagenot.pipeline.score.cache import CachedEncoder, EmbeddingCache, text_keys
from imagenot.pipeline.score.runtimes import LazyEncoder
from imagenot.wordnet.queries import LAIONET_TEMPLATE, TemplateError, query_text

TEXTS = ["a red car", "a dog on the beach", "a red car", "hot dog with mustard", "a dog on the beach"]


# --- cache -----------------------------------------------------------------------------------


def test_second_run_embeds_nothing_and_returns_the_same_vectors(minilm, tmp_path):
    first = CachedEncoder(minilm, tmp_path)
    vectors = first.encode(TEXTS)
    assert (first.requested, first.embedded, first.cache_hits) == (5, 3, 0)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_allclose(vectors, minilm.encode(TEXTS), atol=1e-6)

    rerun = CachedEncoder(minilm, tmp_path)  # a new process would see the same folder
    again = rerun.encode(list(reversed(TEXTS)))
    assert (rerun.embedded, rerun.cache_hits) == (0, 3)
    np.testing.assert_array_equal(again, vectors[::-1])

    more = rerun.encode(["a red car", "a cat asleep"])
    assert (rerun.embedded, rerun.cache_hits) == (1, 4)
    np.testing.assert_allclose(more[1], minilm.encode(["a cat asleep"])[0], atol=1e-6)


def test_writers_sharing_a_folder_see_each_others_chunks(minilm, tmp_path):
    one, two = CachedEncoder(minilm, tmp_path), CachedEncoder(minilm, tmp_path)
    one.encode(["first writer"])
    two.encode(["second writer"])
    reader = CachedEncoder(minilm, tmp_path)
    reader.encode(["first writer", "second writer"])
    assert reader.embedded == 0
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]


def test_without_a_cache_folder_duplicates_are_still_embedded_once(minilm):
    encoder = CachedEncoder(minilm)
    encoder.encode(TEXTS)
    encoder.encode(TEXTS)
    assert encoder.embedded == 6  # 3 distinct texts, twice


def test_texts_all_in_the_cache_never_load_the_model(minilm, tmp_path):
    CachedEncoder(minilm, tmp_path).encode(TEXTS)
    loads = []

    def load():
        loads.append(1)
        return minilm

    rerun = CachedEncoder(LazyEncoder(minilm.model_id, load), tmp_path)
    np.testing.assert_array_equal(rerun.encode(TEXTS), CachedEncoder(minilm, tmp_path).encode(TEXTS))
    assert rerun.encode([]).shape == (0, minilm.dim) and loads == []  # the length from the cache
    rerun.encode(["a cat asleep"])
    assert loads == [1] and rerun.embedded == 1


def test_a_cold_cache_learns_the_vectors_length_from_the_model(minilm, tmp_path):
    encoder = CachedEncoder(LazyEncoder(minilm.model_id, lambda: minilm), tmp_path)
    assert encoder.encode([]).shape == (0, minilm.dim)
    assert encoder.encode(TEXTS).shape == (len(TEXTS), minilm.dim)
    cache = EmbeddingCache(tmp_path, minilm.model_id)
    assert cache.lookup(text_keys(TEXTS))[0].all()
    with pytest.raises(ImagenotError, match=f"length {minilm.dim}, given 4"):
        cache.add(text_keys(["another"]), np.ones((1, 4), np.float32))


def test_cache_folder_of_another_model_is_refused(tmp_path):
    cache = EmbeddingCache(tmp_path, "model-a", 4)
    (tmp_path / Path(cache.folder).name / "MODEL").write_text("model-b", encoding="utf-8")
    with pytest.raises(ImagenotError, match="model-b"):
        EmbeddingCache(tmp_path, "model-a", 4)


# --- query texts and similarity --------------------------------------------------------------


def test_query_text_templates(index):
    dog = index.by_name("dog.n.01")
    assert query_text(dog, "{lemma}: {gloss}") == f"dog: {dog.gloss}"
    assert query_text(dog, LAIONET_TEMPLATE) == f"dog which is {dog.gloss}"
    hotdog = index.by_name("hotdog.n.02")
    assert "hot dog" in query_text(hotdog, "{lemmas}").split(", ")
    with pytest.raises(TemplateError, match=r"\{definition\}"):
        query_text(dog, "{name} is {definition}")
    with pytest.raises(TemplateError, match="no field"):
        query_text(dog, "a photo")


def test_captions_score_higher_against_their_own_sense(index, minilm):
    dog, frank = index.by_name("dog.n.01").wnid, index.by_name("frank.n.02").wnid
    queries = QueryEmbeddings.build(index, [frank, dog], "{lemma}: {gloss}", minilm)
    assert queries.wnids == tuple(sorted([dog, frank]))
    captions = ["my dog fetching a stick in the park", "grilled hot dog in a bun with mustard"]
    vectors = minilm.encode(captions)
    own = score_batch(vectors, [dog, frank], queries)
    other = score_batch(vectors, [frank, dog], queries)
    assert own.dtype == np.float32 and (own > other).all()
    np.testing.assert_allclose(own[0], vectors[0] @ queries.vectors[queries.rows([dog])[0]], rtol=1e-6)
    with pytest.raises(KeyError, match="n99999999"):
        score_batch(vectors, [dog, "n99999999"], queries)


# --- ranking ---------------------------------------------------------------------------------


def test_top_n_mean_uses_what_there_is():
    assert top_n_mean(np.array([0.1, 0.9, 0.5, 0.7]), 2) == pytest.approx(0.8)
    assert top_n_mean(np.array([0.6]), 5) == pytest.approx(0.6)


def test_ranking_is_deterministic_with_reasons():
    sims = {
        "n00000005": np.array([0.875, 0.625, 0.125]),  # top-2 mean 0.75 (exact in binary)
        "n00000003": np.array([0.75, 0.75]),  # 0.75: a tie, the smaller wnid goes first
        "n00000004": np.array([0.9375, 0.5]),  # 0.71875
        "n00000002": np.array([0.50, 0.40]),  # below threshold
        "n00000001": np.array([], dtype=np.float32),
    }
    ranking = rank_synsets(sims, top_n=2, threshold=0.7, k=2)
    assert ranking.classes == ("n00000003", "n00000005")
    assert ranking.dropped == {
        "n00000001": NO_CAPTIONS,
        "n00000002": BELOW_THRESHOLD,
        "n00000004": BEYOND_TOP_K,
    }
    assert ranking.reasons() == {BELOW_THRESHOLD: 1, BEYOND_TOP_K: 1, NO_CAPTIONS: 1}
    shuffled = dict(reversed(list(sims.items())))
    assert rank_synsets(shuffled, top_n=2, threshold=0.7, k=2) == ranking


def test_a_synset_without_enough_captions_for_its_images_is_not_ranked():
    sims = {"n00000001": np.array([0.9, 0.9]), "n00000002": np.array([0.8, 0.8, 0.8])}
    ranking = rank_synsets(sims, top_n=2, threshold=0.5, k=2, captions={"n00000001": 2, "n00000002": 3}, min_captions=3)
    assert ranking.classes == ("n00000002",)
    assert ranking.dropped == {"n00000001": "too_few_captions"}


def test_sample_keys_are_pinned():
    """Every run's choice of rows rests on these values: a change here changes every dataset."""
    row_ids = ["part-00000:15", "part-00003:49999", "", "\u00fcn\u00efcode-row"]
    assert sample_keys(row_ids, -5).tolist() == [
        7717350728943987063,
        4598304172514976036,
        852777599765764206,
        13240794597925041179,
    ]
    assert sample_keys(row_ids, -5).dtype == np.uint64
    assert [sample_key(r, seed) for r, seed in zip(row_ids, [0, 7, -1, 2**63 - 1])] == [
        13408648776263002433,
        10559126466148765023,
        6313143538256171873,
        5633101818240343975,
    ]
    assert sample_keys([], 0).shape == (0,)
