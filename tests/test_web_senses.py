"""The senses web captions use that WordNet 3.0 lacks (labels/web_senses.tsv), scored beside WordNet's."""

import numpy as np
import pytest

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import PairScores, SenseDecision, caption_decision
from imagenot.labels.senses.sentence import SenseContrast, SenseQueries
from imagenot.labels.senses.settings import SenseSettings
from imagenot.labels.web_senses import COLUMNS, KINDS, is_web_sense, query_text, read_lexicon, web_lexicon
from imagenot.wordnet.index import load_index
from imagenot.wordnet.senses import word_senses

HEADER = "\t".join(COLUMNS)


def test_the_packaged_lexicon_names_real_synsets_of_its_own_words_and_sample_rows():
    lexicon, senses = web_lexicon(), word_senses()
    assert len(lexicon) >= 300 and {s.kind for s in lexicon} == set(KINDS)
    for sense in lexicon:
        assert is_web_sense(sense.id) and sense.id.startswith(f"web:{sense.word}.")
        own = {senses.index[w].name for w in senses.senses(sense.word)}
        assert set(sense.confused_with) <= own and sense.confused_with, sense
        assert sense.examples and all(e.startswith("laion_sample_9614:") for e in sense.examples)
    for word in ("wallpaper", "thumbnail", "stock", "vector", "blush", "template"):
        assert lexicon.of_word(word), word


def test_a_lexicon_line_that_is_not_one_is_refused_naming_its_line():
    good = "wallpaper\tsense\ta picture that fills a screen's background\timage\twallpaper.n.01\tlaion_sample_9614:1"
    assert read_lexicon(f"{HEADER}\n{good}\n")["web:wallpaper.1"].kind_of == "image"
    with pytest.raises(ImagenotError, match="line 3: kind 'brand'"):
        read_lexicon(f"{HEADER}\n{good}\n{good.replace('sense', 'brand', 1)}\n")
    with pytest.raises(ImagenotError, match="line 2: empty gloss"):
        read_lexicon(f"{HEADER}\nwallpaper\tsense\t\timage\twallpaper.n.01\tx\n")
    with pytest.raises(ImagenotError, match="no column examples"):
        read_lexicon("word\tkind\tgloss\tkind_of\tconfused_with\n")


def test_a_web_sense_fills_every_query_field():
    sense = web_lexicon()[web_lexicon().of_word("wallpaper")[0]]
    text = query_text(sense, "{lemma}, a kind of {hypernym} ({category}): {hyponyms}")
    assert text.startswith("wallpaper, a kind of ") and sense.gloss in text


def test_a_web_sense_wins_the_captions_that_use_it_and_not_the_others(minilm):
    index = load_index()
    contrast = SenseContrast(SenseQueries(SenseSettings(), minilm, web=web_lexicon()))
    captions = ["Cream Blush in Rose Petal by Physicians Formula", "her cheeks flushed with a deep blush of shame"]
    wnids = [index.by_name("blush.n.02").wnid] * 2
    found = contrast.margins(captions, minilm.encode(captions), wnids, [["blush"], ["blush"]])
    assert is_web_sense(found.web[0]) and found.web_margin[0] < 0 < found.web_margin[1]
    assert found.forms == ["blush", "blush"]
    passes, reason = caption_decision(
        PairScores(np.zeros(2), found.margin, found.fit, found.web_margin), None, SenseDecision(-1.0, None, 0.0)
    )
    assert reason.tolist() == ["web_sense", ""] and passes.tolist() == [False, True]


def test_the_sense_that_outscores_the_class_more_names_the_drop():
    scores = PairScores(np.zeros(4), np.array([-0.1, -0.3, 0.2, -0.1]), web_margin=np.array([-0.2, -0.1, -0.1, 0.3]))
    _, reason = caption_decision(scores, None, SenseDecision(0.0, web_margin=0.0))
    assert reason.tolist() == ["web_sense", "other_sense", "web_sense", "other_sense"]
    with pytest.raises(ValueError, match="needs each caption's web_margin"):
        caption_decision(PairScores(np.zeros(1), np.zeros(1)), None, SenseDecision(0.0, web_margin=0.0))


def test_the_contrast_reads_every_lemma_the_matched_form_is_a_form_of(minilm):
    """ "pants" is a lemma of its own (bloomers.n.01, British underpants) and the plural of "pant"
    (trouser.n.01): a caption the tagger gives bloomers meets the trousers too."""
    index = load_index()
    bloomers, trousers = index.by_name("bloomers.n.01").wnid, index.by_name("trouser.n.01").wnid
    caption = ["black cargo pants with side pockets for hiking"]
    found = SenseContrast(SenseQueries(SenseSettings(), minilm)).margins(
        caption, minilm.encode(caption), [bloomers], [["pants"]]
    )
    assert found.other[0] == trousers and np.isfinite(found.margin[0])  # before: no other sense, margin inf
