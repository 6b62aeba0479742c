"""What the label model reads of a (caption, synset) pair: what the build already computed of it,
where the word stands, and what kind of thing the synset is.

- the score stage's columns (`PairScores`): the caption's gloss similarity, its sense margin over the
  best other WordNet sense and over the best web sense (`labels.web_senses`; a word with none: the
  clip, and an indicator), the best sense's fit;
- select's none-of-these probability (`none_score`: a name, a missing sense, a letter...);
- where the word stands: its place among the caption's words, first or last, the caption's length,
  whether the word is capitalised or in capitals, and whether the caption reads like a title (it
  opens with "The", most of its words are capitalised, it has four words or fewer); whether the
  next word (after spaces or a hyphen only) is a noun the tagger matched, so that the word may only
  modify it ("Dining Chair"), and whether that noun names a picture ("Dog Photo": the picture is
  of the word's thing);
- the synset: its lexicographer file (artifact, person, food...), whether it is a leaf, how many
  lemmas it has, whether the matched lemma is of several words.

`pair_features` returns them as float64 columns in `FEATURES`' order; the caption's embedding, which
the model projects itself, is passed apart (`model.LabelModel`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from imagenot.labels.caption_rules import PairScores
from imagenot.wordnet.index import NounIndex

LEXNAMES = (
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.communication",
    "noun.food",
    "noun.group",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.shape",
    "noun.state",
    "noun.substance",
)
FEATURES = (
    "similarity",
    "margin",
    "has_other_sense",
    "fit",
    "web_margin",
    "has_web_sense",
    "none_score",
    "place",
    "first_word",
    "last_word",
    "log_words",
    "capitalised",
    "in_capitals",
    "opens_with_the",
    "capitalised_share",
    "few_words",
    "before_noun",
    "before_picture_word",
    "leaf",
    "lemmas",
    "several_words",
    *LEXNAMES,
)
_WORD = re.compile(r"[^\W_]+")
_NEXT = re.compile(r"[ \-]+([^\W_]+)")
# Nouns whose phrase is a picture of its modifier's thing ("dog photo", "rose illustration", "cat
# wallpaper"): the word before them names what the picture shows.
PICTURE_WORDS = frozenset(
    "photo photos photograph picture pictures image images illustration illustrations drawing drawings "
    "painting paintings print prints poster posters vector vectors icon icons clipart clip art artwork "
    "wallpaper wallpapers portrait portraits silhouette silhouettes sketch sketches tattoo tattoos sticker "
    "stickers decal decals pattern patterns stock royalty cartoon cartoons figurine figurines".split()
)


def pair_features(
    captions: Sequence[str],
    spans: Sequence[tuple[int, int]],
    wnids: Sequence[str],
    scores: PairScores,
    none_scores: Sequence[float | None],
    matched: Sequence[Sequence[str]],
    index: NounIndex,
    margin_clip: float,
) -> np.ndarray:
    """float64 (pairs, len(FEATURES)). `spans`: where each caption's word stands; `matched`: the
    tagger's matched forms of each caption; `margin_clip`: the bound margins are clipped to (a word
    with no other sense gets it), in the sense method's units."""
    n = len(captions)
    margin = _clipped(scores.margin, n, margin_clip)
    web_margin = _clipped(scores.web_margin, n, margin_clip)
    fit = np.zeros(n) if scores.fit is None else np.asarray(scores.fit, np.float64)
    out = np.empty((n, len(FEATURES)), np.float64)
    for i, (caption, (start, end), wnid) in enumerate(zip(captions, spans, wnids)):
        synset = index[wnid]
        after = _NEXT.match(caption, end) if end > start else None
        following = after.group(1).lower() if after else ""
        nouns = {form.split(" ")[0] for form in matched[i] or ()}
        words = _WORD.findall(caption)
        before = len(_WORD.findall(caption[:start]))
        word = caption[start:end]
        capitalised = [w[:1].isupper() for w in words]
        out[i] = (
            float(scores.similarity[i]),
            margin[i][0],
            margin[i][1],
            fit[i],
            web_margin[i][0],
            web_margin[i][1],
            0.0 if none_scores[i] is None else float(none_scores[i]),
            before / max(len(words), 1),
            float(before == 0),
            float(not _WORD.search(caption[end:])),
            np.log1p(len(words)),
            float(word[:1].isupper()),
            float(word.isupper()),
            float(caption.lstrip().lower().startswith("the ")),
            float(np.mean(capitalised)) if words else 0.0,
            float(len(words) <= 4),
            float(following in nouns),
            float(following in PICTURE_WORDS),
            float(not synset.hyponyms),
            float(len(synset.lemmas)),
            float(len(_WORD.findall(word)) > 1),
            *(float(synset.lexname == lexname) for lexname in LEXNAMES),
        )
    return out


def _clipped(values: np.ndarray | None, n: int, bound: float) -> list[tuple[float, float]]:
    """(the value clipped to [-bound, bound], 1.0) per pair; (bound, 0.0) where it is infinite (no
    such sense) or not recorded."""
    if values is None:
        return [(bound, 0.0)] * n
    values = np.asarray(values, np.float64)
    return [(bound, 0.0) if not np.isfinite(v) else (float(np.clip(v, -bound, bound)), 1.0) for v in values]
