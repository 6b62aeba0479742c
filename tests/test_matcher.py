import pickle
import random

import numpy as np
import pyarrow as pa
import pytest

from imagenot.pipeline.tag import count_synsets
from imagenot.pipeline.tag.matcher import leftmost_longest
from imagenot.pipeline.tag.tokens import tokenize
from imagenot.wordnet.lemmas import normalize_text


@pytest.fixture(scope="module")
def wnid(index):
    return lambda name: index.by_name(name).wnid


def tag(matcher, captions):
    tags = matcher.tag(pa.array(captions, pa.string()))
    return list(zip(tags.wnids.to_pylist(), tags.matched.to_pylist()))


def matched(matcher, caption):
    return tag(matcher, [caption])[0][1]


def wnids(matcher, caption):
    return set(tag(matcher, [caption])[0][0])


def test_case_insensitive(matcher, wnid):
    results = tag(matcher, ["dog", "DOG", "Dog", "dOg"])
    assert all(r == results[0] for r in results)
    assert wnid("dog.n.01") in results[0][0]


def test_word_boundaries(matcher, wnid):
    assert wnid("dog.n.01") not in wnids(matcher, "dogma dogmatic underdog")
    assert matched(matcher, "dogma") == ["dogma"]
    assert matched(matcher, "hotdog") == ["hotdog"]
    assert matched(matcher, "hot dog") == ["hot dog"]


@pytest.mark.parametrize("caption", ["dogs,", "(dog)", "#dog!", '"Dog"', "dog's bowl", "...dog..."])
def test_glued_punctuation(matcher, wnid, caption):
    assert wnid("dog.n.01") in wnids(matcher, caption)


@pytest.mark.parametrize("caption", ["go-kart", "Go Kart", "go_kart", "GO--KART!", "my go-kart's wheel"])
def test_hyphen_underscore_normalised_on_both_sides(matcher, wnid, caption):
    assert wnid("go-kart.n.01") in wnids(matcher, caption)


@pytest.mark.parametrize("caption", ["jack-o'-lantern", "Jack-O-Lantern", "jack o lantern", "JACK-O\u2019-LANTERNS"])
def test_apostrophes_normalised_on_both_sides(matcher, wnid, caption):
    assert wnid("jack-o'-lantern.n.02") in wnids(matcher, caption)


@pytest.mark.parametrize(
    "caption",
    [
        "Golden   Retriever",
        "golden-retriever",
        "golden_retriever",
        "Golden / Retriever",
        "golden\tretrievers",
    ],
)
def test_multi_word_lemmas_across_separators(matcher, wnid, caption):
    assert wnid("golden_retriever.n.01") in wnids(matcher, caption)
    assert matched(matcher, caption)[0].startswith("golden retriever")


def test_multi_word_lemmas_do_not_cross_captions(matcher, wnid):
    assert [wnid("golden_retriever.n.01") in set(w) for w, _ in tag(matcher, ["golden", "retriever"])] == [False, False]


@pytest.mark.parametrize(
    ("caption", "name"),
    [
        ("boxes", "box.n.01"),
        ("ponies", "pony.n.01"),
        ("dogs", "dog.n.01"),
        ("knives", "knife.n.01"),
        ("mice", "mouse.n.01"),
        ("geese", "goose.n.01"),
        ("children", "child.n.01"),
        ("women", "woman.n.01"),
        ("meadow mice", "meadow_vole.n.01"),
    ],
)
def test_regular_and_irregular_plurals(matcher, wnid, caption, name):
    assert wnid(name) in wnids(matcher, f"Two {caption.upper()} playing")


@pytest.mark.parametrize(("caption", "name"), [("Women's shoes", "woman.n.01"), ("the dog's bowl", "dog.n.01")])
def test_possessives_match_their_noun(matcher, wnid, caption, name):
    assert wnid(name) in wnids(matcher, caption)


def test_shared_lemma_tags_every_synset(matcher, wnid):
    found = wnids(matcher, "a portrait of the painter")
    assert {wnid("painter.n.01"), wnid("painter.n.02"), wnid("cougar.n.01")} <= found


def test_overlap_policy_is_leftmost_longest(matcher, wnid):
    # "hot dog" wins over "hot" and "dog" at the same start; "bun" is taken after it.
    assert matched(matcher, "hot dog bun") == ["hot dog", "bun"]
    assert wnid("dog.n.01") not in wnids(matcher, "hot dog bun")
    assert matched(matcher, "Saint Bernard puppy") == ["saint bernard", "puppy"]
    # The leftmost match wins over a later overlapping one: "dog days" is a lemma too.
    assert matched(matcher, "hot dog days") == ["hot dog", "days"]
    assert matched(matcher, "dog days") == ["dog days"]


def test_overlap_rounds_follow_the_greedy_scan():
    rng = np.random.default_rng(0)
    for _ in range(200):
        start = np.sort(rng.choice(40, size=rng.integers(1, 20), replace=False))
        length = rng.integers(1, 5, size=len(start))
        expected, reach = [], 0
        for s, n in zip(start, length):
            expected.append(bool(s >= reach))
            reach = s + n if s >= reach else reach
        assert leftmost_longest(start, length).tolist() == expected


def test_empty_and_null_captions_keep_alignment(matcher, wnid):
    results = tag(matcher, ["dog", None, "", "   ", "!!!", "cat"])
    assert [bool(w) for w, _ in results] == [True, False, False, False, False, True]
    assert results[1:5] == [([], [])] * 4
    assert wnid("cat.n.01") in results[5][0]


def test_matched_forms_are_unique_in_caption_order(matcher):
    assert matched(matcher, "cat, dog, cats and another cat") == ["cat", "dog", "cats"]


def test_sliced_and_chunked_batches_tag_like_single_captions(matcher):
    captions = ["a cat on a mat", None, "Golden-Retriever puppies", "Café in Zürich", "mice"]
    one_by_one = [tag(matcher, [c])[0] for c in captions]
    assert tag(matcher, captions) == one_by_one
    sliced = pa.array(["x"] + captions, pa.string())[1:]
    chunked = pa.chunked_array([captions[:2], captions[2:]], pa.string())
    for batch in (sliced, chunked):
        tags = matcher.tag(batch)
        assert list(zip(tags.wnids.to_pylist(), tags.matched.to_pylist())) == one_by_one


def test_ascii_fast_path_tokenises_like_normalize_text():
    rng = random.Random(0)
    alphabet = [chr(c) for c in range(128)] + ["é", "’", "—", "日", "Ø", "\u0301"] + ["'s", "'S", "s"] * 20
    captions = ["".join(rng.choices(alphabet, k=rng.randint(0, 30))) for _ in range(2000)]
    tokens = tokenize(pa.array(captions))
    expected = [t.split() for t in normalize_text(pa.array(captions)).to_pylist()]
    assert tokens.values.to_pylist() == [t for row in expected for t in row]
    assert tokens.row.tolist() == [i for i, row in enumerate(expected) for _ in row]


def varied_captions(index, count, seed):
    """Captions mixing real lemmas (spelt many ways, inflected) with fillers and punctuation."""
    rng = random.Random(seed)
    lemmas = list(index.lemma_synsets)
    irregular = list(index.irregular)
    fillers = [
        "the",
        "a",
        "of",
        "photo",
        "hot",
        "dog",
        "bun",
        "golden",
        "new",
        "2020",
        "4k",
        "St.",
        "Café",
        "naïve",
        "—",
        "’s",
        "日本",
        "U.S.",
        "o'clock",
        "'",
        "...",
        "&",
        "x",
        "i",
        "is",
        "men's",
        "'s'",
    ]
    decorations = ["{}", "{},", "({})", "{}.", '"{}"', "#{}", "{}'s", "{}s", "{}es", "{}-", "{}/{}"]
    captions = []
    for _ in range(count):
        words = []
        for _ in range(rng.randint(0, 14)):
            pick = rng.random()
            if pick < 0.35:
                word = rng.choice(lemmas).replace("_", rng.choice([" ", "  ", "-", "_", " - ", "/"]))
            elif pick < 0.4:
                word = rng.choice(irregular)
            else:
                word = rng.choice(fillers)
            word = rng.choice([word, word, word.lower(), word.upper(), word.title()])
            words.append(rng.choice(decorations).format(word, rng.choice(fillers)))
        captions.append(rng.choice([" ", "  ", ", "]).join(words) if rng.random() > 0.01 else None)
    return captions


def test_agrees_with_the_pyahocorasick_reference(index, matcher, reference_matcher):
    captions = varied_captions(index, 3000, seed=1)
    expected = [reference_matcher.tag(c) for c in captions]
    assert tag(matcher, captions) == [(w, m) for w, m in expected]
    assert sum(bool(w) for w, _ in expected) > 2500


def test_count_synsets_counts_captions(matcher, wnid):
    tags = matcher.tag(pa.array(["dog", "dogs and dog", "cat", None]))
    counts = count_synsets(tags.wnids)
    assert counts[wnid("dog.n.01")] == 2 and counts[wnid("cat.n.01")] == 1


def test_matcher_pickles(matcher):
    captions = pa.array(["Golden Retriever with a hot dog bun", "mice"])
    restored = pickle.loads(pickle.dumps(matcher))
    assert restored.tag(captions) == matcher.tag(captions)
