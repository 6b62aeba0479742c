"""Drop candidates that WordNet itself marks as offensive, before any classifier sees them.

Two of WordNet's own marks, read from the synset and its lemmas:
- its usage domain (`usage_domains()` in NLTK): ethnic slur, disparagement, or obscenity (whose
  synset, obscenity.n.02, is also WordNet's "vulgarism"); 12, 39 and 8 noun synsets in WordNet 3.0.
  A lemma's own usage domain marks its synset too, as the class would carry the lemma: "blackamoor"
  (ethnic slur) in black.n.05, "Red_Indian" (disparagement) in indian.n.01.
- its gloss calls it an offensive, derogatory, disparaging, contemptuous, pejorative, insulting,
  obscene, vulgar or abusive term, name, word, expression or reference ("offensive term for a
  Jew", "a Latin American (disparaging) term for foreigners", "obscene terms for feces"), a term
  of abuse or contempt, a term now regarded as offensive, or a slur; or labels it so in
  parentheses ("(ethnic slur)", "(offensive British slang)"). The phrase must name the synset
  itself: "a person who edits a text by removing obscene or offensive words" (expurgator) and
  "(music) a slur over two notes" (tie) are not marks.

Each mark is a reason of its own, so the funnel counts them apart; a synset with several keeps
the first of USAGE_DOMAINS' order, then the gloss. Over all 82,115 nouns the rule marks the 77
synsets in tests/data/offensive_synsets.tsv.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex, Synset

STEP = "offensive_synsets"
# usage-domain synset -> (reason, what the record says); checked in this order
USAGE_DOMAINS = {
    "n06718862": ("wordnet_usage_ethnic_slur", "ethnic slur"),  # ethnic_slur.n.01
    "n06717170": ("wordnet_usage_disparagement", "disparagement"),  # disparagement.n.01
    "n07124340": ("wordnet_usage_obscenity", "obscenity, vulgarism"),  # obscenity.n.02, vulgarism
}
GLOSS_REASON = "gloss_offensive_term"

_ADJECTIVE = (
    r"(?:offensive|derogatory|disparaging|contemptuous|pejorative|insulting|obscene|vulgar|abusive"
    r"|negative|coarse|dismissive|uncomplimentary)"
)
_NOUN = r"(?:terms?|names?|words?|expressions?|references?|slang|epithets?)"
_GLOSS_MARKS = re.compile(
    "|".join(
        (
            # "offensive term for", "offensive and derogatory name for", "(disparaging) term for",
            # "contemptuous term of address to", "vulgar slang for"
            rf"\b{_ADJECTIVE}\)?(?: (?:and|or) {_ADJECTIVE})? {_NOUN}(?: of address)? (?:for|to|used)\b",
            # a usage label opening the gloss: "(ethnic slur)", "(offensive British slang)", "(sometimes offensive)"
            rf"^\((?:\w+ )?(?:ethnic slur|{_ADJECTIVE})(?: \w+){{0,2}}\)",
            r"\bterms? of (?:abuse|contempt)\b",
            rf"\bterm\b[^;]{{0,40}} (?:regarded|considered) (?:as )?{_ADJECTIVE}",
            r"^(?:an? )?(?:\w+ )?slur (?:for|on|against)\b",  # the gloss opens by calling it a slur
        )
    ),
    re.IGNORECASE,
)  # RE2 reads it too (marked_synsets): plain syntax only, no lookaround or backreference


def offensive_mark(synset: Synset) -> tuple[str, str] | None:
    """(reason, detail) when WordNet marks the synset as offensive, else None."""
    for domain, (reason, label) in USAGE_DOMAINS.items():
        if domain in synset.usage_domains:
            return reason, f"WordNet usage: {label}"
        marked = [lemma for lemma, domains in zip(synset.lemmas, synset.lemma_usage_domains) if domain in domains]
        if marked:
            return reason, f"WordNet usage of its lemma {marked[0]!r}: {label}"
    found = _GLOSS_MARKS.search(synset.gloss)
    if found:
        return GLOSS_REASON, f"gloss: {found.group(0).strip('( )')!r}"
    return None


@functools.lru_cache(maxsize=2)
def marked_synsets(index: NounIndex) -> dict[str, tuple[str, str]]:
    """wnid -> (reason, detail) for every noun WordNet marks as offensive, computed once per index.

    Arrow's RE2 scans all 82,115 glosses at once (Python's `re` takes ten times as long); only the
    glosses it matches, and the synsets with a usage domain, are read again in Python.
    """
    synsets = list(index)
    glosses = pa.array([synset.gloss for synset in synsets], pa.string())
    matched = pc.match_substring_regex(glosses, _GLOSS_MARKS.pattern, ignore_case=True).to_numpy(zero_copy_only=False)
    read_again = (
        synset
        for synset, hit in zip(synsets, matched)
        if hit or synset.usage_domains or any(synset.lemma_usage_domains)
    )
    return {synset.wnid: mark for synset in read_again if (mark := offensive_mark(synset)) is not None}


def offensive_removals(candidates: Iterable[str], index: NounIndex) -> dict[str, Removal]:
    """The candidates WordNet marks as offensive, each with its mark."""
    marked = marked_synsets(index)
    return {
        wnid: Removal(wnid, index[wnid].name, STEP, *marked[wnid]) for wnid in sorted(set(candidates)) if wnid in marked
    }
