"""The caption rules' fast paths give what their slow paths give (issue 53): `find_span`'s plain
path (no pattern compiled) against the pattern itself, on tricky captions and on realistic ones
with the forms the tag stage matched in them; a lemma's noun synsets read from NLTK's lemma index
against NLTK's `synsets`."""

import pyarrow as pa
import pytest

from imagenot.labels.caption_rules import _span_pattern, find_span
from imagenot.labels.pair_checker import _count, _noun_wnids, _wordnet, tagged_counts
from imagenot.pipeline.corpus.synth import synth_shards
from imagenot.pipeline.tag.stage import tag_batch
from imagenot.wordnet.index import wnid_of_offset

# Punctuation, case, underscores, digits, repeats, forms inside longer words, several words, and
# captions the plain path must leave to the pattern (apostrophes, non-ASCII text, forms that are
# not plain).
TRICKY = [
    ("Dog bed", "dog"),
    ("hotdog, DOG-bed, dogs", "dog"),
    ("dogs dog", "dog"),
    ("doghouse_dog", "dog"),
    ("dog_house", "dog"),
    ("the DOG.", "dog"),
    ("xdog dogx dog1 1dog", "dog"),
    ("dog1 dog", "dog1"),
    ("New   York--City!!", "new york city"),
    ("new york, new  york_city", "new york city"),
    ("newyork city new york city", "new york city"),
    ("York City new york", "new york city"),
    ("B-52 bomber", "b 52"),
    ("3 D printing, 3D", "3 d"),
    ("golf club golf clubs", "golf club"),
    ("golfclub golf", "golf club"),
    ("", "dog"),
    ("!!!", "dog"),
    ("dog", "dog"),
    ("DoG", "dog"),
    ("a dog's bed", "dog"),
    ("d'og bed", "dog"),
    ("Café dog", "dog"),
    ("KELVIN \u212a", "k"),
    ("Straße strasse", "strasse"),
    ("cafés", "café"),
    ("dog", "dog-bed"),
]


@pytest.mark.parametrize("caption, form", TRICKY)
def test_find_span_is_the_patterns_span_on_tricky_captions(caption, form):
    found = _span_pattern(form).search(caption)
    assert find_span(caption, form) == (found.span() if found else None)


def test_find_span_is_the_patterns_span_on_realistic_captions(stage_matcher):
    _, table, _ = next(synth_shards(3_000, seed=5))
    batch = table.rename_columns(["caption" if name == "TEXT" else name for name in table.column_names])
    batch = batch.append_column("row_id", pa.array(range(batch.num_rows), pa.int64())).to_batches()[0]
    tagged = tag_batch(batch, stage_matcher)
    pairs = [
        (caption, form)
        for caption, forms in zip(tagged.column("caption").to_pylist(), tagged.column("matched").to_pylist())
        if caption
        for form in forms or []
    ]
    assert len(pairs) > 10_000
    for caption, form in pairs:
        found = _span_pattern(form).search(caption)
        assert find_span(caption, form) == (found.span() if found else None), (caption, form)


def test_sense_key_counts_are_nltks_lemma_counts():
    """Every sense key of `cntlist.rev` counted as NLTK's binary search of the file counts it."""
    from nltk.util import binary_search_file

    from imagenot.labels.pair_checker import _wordnet, sense_key_counts

    counts = sense_key_counts()
    assert len(counts) > 30_000
    file = _wordnet().open("cntlist.rev")
    try:
        for key, n in counts.items():
            assert int(binary_search_file(file, key).rsplit(" ", 1)[-1]) == n, key
    finally:
        file.close()
    dog = _wordnet().synset("dog.n.01").lemmas()[0]
    assert counts[dog.key()] == dog.count() > 0


# Lemmas whose forms morphy reads through an exception list or a plural rule, lemmas in capitals
# or of several words, one synset holding two forms of a word, and words that are not nouns.
NOUN_LEMMAS = ["glasses", "data", "men", "geese", "axes", "LED", "Hg", "New_York", "crane", "arms", "quickly", "xyzzy"]


@pytest.mark.parametrize("lemma", NOUN_LEMMAS)
def test_a_lemma_s_noun_synsets_from_nltk_s_index_are_its_synsets_in_its_order(lemma):
    # the same list for all 119,034 noun lemmas when it was written (NLTK 3.10.4)
    assert _noun_wnids(lemma) == [wnid_of_offset(s.offset()) for s in _wordnet().synsets(lemma, "n")]


@pytest.mark.parametrize("word", [*NOUN_LEMMAS, "led", "abandoned", "accents", "running", "better"])
def test_tagged_counts_are_what_nltk_s_synsets_count(word):
    wordnet, counts = _wordnet(), {}
    for pos in "nvar":
        base = wordnet.morphy(word, pos)
        counts[pos] = sum(_count(synset, base) for synset in wordnet.synsets(base, pos)) if base else 0
    assert tagged_counts(word) == (counts["n"], sum(counts.values()))
