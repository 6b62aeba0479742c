"""Step 5: drop candidates that a text NSFW classifier flags.

A second signal after WordNet's own marks (filters.offensive_synsets): the model reads a gloss
as calm prose, and scores most glosses that call their synset an "offensive term" below 0.5.

The paper used Song et al. (2021)'s classifier, which is not available offline here; we use
alt-profanity-check (a linear model over word n-grams, trained on offensive online comments).
Each synset is scored as ONE text, its lemmas then its gloss ("kitty, ..., pussy, pussycat:
informal terms referring to a domestic cat"): the gloss gives a lemma its sense. Scored alone,
lemmas such as "idiot box" (a television set) or "pussy willow" score near 1; the max over lemmas
flags about 1,300 noun synsets at 0.5, the joined text about 1,100. The model is crude either
way (it also flags "cock, rooster" and "homosexual"), which is why the threshold is
configuration and each flagged synset's record carries its score.
"""

from __future__ import annotations

from collections.abc import Iterable

from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex, Synset

STEP = "nsfw_synsets"


def synset_text(synset: Synset) -> str:
    """The text the classifier scores: "lemma, lemma, ...: gloss", underscores as spaces."""
    return ", ".join(lemma.replace("_", " ") for lemma in synset.lemmas) + ": " + synset.gloss


# (text, wnid) -> score, kept for the process: select scores the candidates twice (the bound of its first
# pass, then the candidates), tens of thousands of synsets at LAION's density. The model scores each
# text alone, so a score is the same whichever texts were scored with it.
_SCORED: dict[tuple[str, str], float] = {}  # the text in the key: another index's synset is another text


def nsfw_scores(wnids: Iterable[str], index: NounIndex) -> dict[str, float]:
    """wnid -> the classifier's probability that its text is offensive, in wnid order."""
    keys = [(synset_text(index[wnid]), wnid) for wnid in sorted(set(wnids))]
    new = [key for key in keys if key not in _SCORED]
    if new:
        # here: it loads scikit-learn (seconds), which a config check needs not
        from profanity_check import predict_prob

        _SCORED.update(zip(new, map(float, predict_prob([text for text, _ in new]))))
    return {wnid: _SCORED[text, wnid] for text, wnid in keys}


def nsfw_removals(candidates: Iterable[str], index: NounIndex, threshold: float) -> dict[str, Removal]:
    """The candidates whose score is at least `threshold` (in (0, 1])."""
    if not 0 < threshold <= 1:
        raise ValueError(f"NSFW threshold must be in (0, 1], got {threshold}")
    return {
        wnid: Removal(
            wnid,
            index[wnid].name,
            STEP,
            "nsfw_text",
            f"classifier score {score:.3f} (alt-profanity-check) >= threshold {threshold}",
        )
        for wnid, score in nsfw_scores(candidates, index).items()
        if score >= threshold
    }
