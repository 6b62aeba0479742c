"""LAION's text as it is: the tagger matches what a reader of the caption sees."""

import pyarrow as pa
import pytest

from imagenot.pipeline.tag.markup import strip_markup, strip_markup_batch
from imagenot.wordnet.lemmas import normalize


def matched(matcher, captions):
    return matcher.tag(pa.array(captions, pa.string())).matched.to_pylist()


@pytest.mark.parametrize(
    ("caption", "seen"),
    [
        ("c\u200bat", ["cat"]),  # zero-width space
        ("ca\u200dt\u200c", ["cat"]),  # zero-width joiner and non-joiner
        ("cof\u00adfee and tea", ["coffee", "tea"]),  # soft hyphen
        ("\ufeffcat", ["cat"]),  # BOM
        ("d\u2060o\u2060g", ["dog"]),  # word joiner
        ("\u200fcat\u200e", ["cat"]),  # direction marks
    ],
)
def test_invisible_characters_inside_words_make_no_false_tags(matcher, caption, seen):
    assert matched(matcher, [caption]) == [seen]


@pytest.mark.parametrize(
    ("caption", "seen"),
    [
        ("Tom &amp; Jerry", "Tom & Jerry"),
        ("&quot;Cat&quot; mug", '"Cat" mug'),
        ("Dad&#39;s dog", "Dad's dog"),
        ("&bull; dog bed &trade;", "\u2022 dog bed \u2122"),
        ("Caf&eacute; &#x2014; cat", "Caf\u00e9 \u2014 cat"),
        ("&amp;quot;dog&amp;quot;", '"dog"'),  # escaped twice
        ("AT&T phone", "AT&T phone"),
        ("cat beds https://shop.example/cat-beds-sale", "cat beds  "),
        ("see www.example.com/recipes/chicken-soup now", "see   now"),
        ("at example.com/dog-food", "at  "),
        ("ftp://files.example.org/a.jpg tree", "  tree"),
        ("dog. Bone", "dog. Bone"),
    ],
)
def test_entities_decode_and_web_addresses_go(caption, seen):
    assert strip_markup(caption) == seen


def test_the_batch_form_changes_only_rows_with_markup():
    captions = pa.array(["plain dog", "Tom &amp; Jerry", "www.a.com/cat x", ""], pa.large_string())
    assert strip_markup_batch(captions).to_pylist() == ["plain dog", "Tom & Jerry", "  x", ""]


@pytest.mark.parametrize(
    ("caption", "seen"),
    [
        ("Tom &amp; Jerry", ["tom", "jerry"]),  # not "amp" (ampere)
        ("&quot;dog&quot;", ["dog"]),  # not "quot"
        ("Dad&#39;s dog", ["dad", "dog"]),  # not "39"
        ("cat bed https://shop.example/cat-beds-sale", ["cat", "bed"]),
        ("www.example.com/recipes/soup", [[]][0]),
        ("\uff43\uff41\uff54", ["cat"]),  # full-width letters
        ("\ufb01sh", ["fish"]),  # a ligature
        ("CAF\u00c9", ["cafe"]),
    ],
)
def test_the_tagger_reads_what_a_reader_sees(matcher, reference_matcher, caption, seen):
    assert matched(matcher, [caption]) == [seen]
    assert reference_matcher.tag(caption)[1] == seen


def test_lemma_normalisation_deletes_format_characters():
    assert normalize("ice\u200bcream") == "icecream"
    assert normalize("ice\u00ad-cream") == "ice cream"
