"""The select stage's vectorised work gives what the caption-at-a-time code gave, on realistic
captions: the none-of-these form statistics over Arrow batches (labels/form_counts.py) against
`none_of_these.form_statistics`, the forms counted only for synsets that can still become
candidates, and the part-of-speech rule's tagging step against TextBlob's whole tagger."""

import re

import pyarrow as pa
import pytest

from imagenot.labels.form_counts import batch_form_statistics, of_lemmas
from imagenot.labels.none_of_these import form_statistics
from imagenot.labels.pair_checker import tag_words
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.corpus.synth import synth_shards
from imagenot.pipeline.select.stage import choose_synsets, lemma_forms, possible_candidates
from imagenot.pipeline.tag.stage import tag_batch

# What the ASCII fast path must hand to the caption-at-a-time code, or read as it does: apostrophes,
# non-ASCII letters, digits beside a form, capitals, forms of several words, repeats, no words at all.
HOSTILE = [
    ("Kids' Dog Bed by Jacques, XL", ["dog", "bed"]),
    ("Café DOG bowl – dogs", ["dog", "dogs", "bowl", "café", "cafés"]),
    ("golf club 2019 GOLF CLUB set", ["golf club", "club", "set"]),
    ("a doghouse for the dog", ["dog"]),
    ("rock'n'roll dog", ["dog"]),
    ("Women's DOG'S bed, a'b'c'dog 4'dog x'", ["dog", "dogs", "bed", "cdog"]),
    ("dog's' O'Neil bed", ["dog", "bed", "oneil"]),
    ("B-52 bomber in 3 D", ["b 52", "3 d", "bomber"]),
    ("!!!", ["dog"]),
    ("", ["dog"]),
    (None, ["dog"]),
    ("Dog", None),
    ("DOG BED", ["dog", "bed"]),
    ("New York City at night, new york city", ["new york city", "city"]),
]


@pytest.fixture(scope="module")
def realistic(stage_matcher) -> pa.RecordBatch:
    """4,000 rows of the default (realistic) synthetic captions, tagged as the tag stage tags them,
    with the hostile rows after them."""
    _, table, _ = next(synth_shards(4_000, seed=11))
    batch = table.rename_columns(["caption" if name == "TEXT" else name for name in table.column_names])
    batch = batch.append_column("row_id", pa.array(range(batch.num_rows), pa.int64())).to_batches()[0]
    tagged = tag_batch(batch, stage_matcher)
    captions, matched = zip(*HOSTILE)
    return pa.RecordBatch.from_pydict(
        {
            "caption": pa.concat_arrays([tagged.column("caption").cast(pa.string()), pa.array(captions, pa.string())]),
            "matched": pa.concat_arrays([tagged.column("matched"), pa.array(matched, tagged.column("matched").type)]),
        }
    )


def test_batch_statistics_are_the_caption_at_a_time_statistics(realistic):
    captions, matched = realistic.column("caption").to_pylist(), realistic.column("matched").to_pylist()
    assert batch_form_statistics(realistic.column("caption"), realistic.column("matched")) == form_statistics(
        captions, matched
    )


def test_kept_forms_alone_are_counted(realistic):
    lemmas = frozenset({"dog", "golf club", "city", "house", "café"})
    kept = [
        [form for form in forms or [] if of_lemmas(form, lemmas)] for forms in realistic.column("matched").to_pylist()
    ]
    expected = form_statistics(realistic.column("caption").to_pylist(), kept)
    assert batch_form_statistics(realistic.column("caption"), realistic.column("matched"), lemmas) == expected
    assert set(expected["rows"]) >= {"dog", "dogs", "golf club", "city"}


def test_possible_candidates_hold_every_candidate(index):
    # dog.n.01 is no leaf while every tagged caption of puppy.n.01, below it, counts; it is a candidate
    # once too few of them are usable
    dog, puppy, gavel = (index.by_name(name).wnid for name in ("dog.n.01", "puppy.n.01", "gavel.n.01"))
    tagged = {dog: 50, puppy: 50, gavel: 3}
    selection = Config.model_validate({"selection": {"min_captions": 10}}).selection
    usable = {dog: 40, puppy: 5, gavel: 3}
    candidates = set(choose_synsets(tagged, usable, selection).candidates)
    bound = possible_candidates(tagged, selection)
    assert dog in candidates and candidates <= bound and gavel not in bound
    assert lemma_forms(bound, index) >= lemma_forms(candidates, index)


def test_the_tagging_step_alone_gives_the_whole_taggers_tags(realistic):
    from textblob.en.taggers import PatternTagger

    tagger = PatternTagger()
    for caption in realistic.column("caption").to_pylist()[:1500]:
        words = tuple(re.findall(r"[^\W_]+", (caption or "").lower()))
        assert tag_words(words) == [tag for _, tag in tagger.tag(" ".join(words))][: len(words)]
