"""The caption rules ready to run: the word lists given, the tagger and WordNet attached, and each
synset's facts (`caption_rules.py` holds the rules themselves). The select stage builds them from
its config (`pipeline/select/caption_rules.py` reads the given names), and so do `imagenot senses`,
`imagenot plan` and `imagenot audit classes`."""

from __future__ import annotations

import functools
from collections.abc import Iterable

import pyarrow as pa

from imagenot.errors import ImagenotError
from imagenot.filters.batches import Drops
from imagenot.labels.caption_rules import (
    FUNCTION_WORDS,
    NONE_OF_THESE,
    RULES,
    CaptionRules,
    ClassDrops,
    Sense,
    check_rows,
    keep_passing_rows,
    pair_rules,
)
from imagenot.labels.none_of_these import NoneOfThese, Words
from imagenot.labels.none_of_these_model import BIAS, WEIGHTS
from imagenot.wordnet.index import NounIndex, Synset, load_index, tag_counts, wnid_of_offset
from imagenot.wordnet.lemmas import normalize_text
from imagenot.wordnet.nltk_data import load_nltk_wordnet

NAME_RULES = frozenset({"name", "title", NONE_OF_THESE})  # the rules that read the given names
# English words that never count as a given name or as a name's surname, though the list may hold
# them (Debian's propernames has "The").
_NOT_NAMES = frozenset({*FUNCTION_WORDS, *"the of and with by for to on from".split()})
_NUMBER_ROOT = "number.n.02"
_COLOUR_ROOT = "color.n.01"  # a word before one of its lemmas names the colour ("Poppy Orange")


def caption_rules(
    enabled: Iterable[str],
    foreign_words: Iterable[str] = (),
    given_names: Iterable[str] = (),
    none_of_these_threshold: float = 0.8,
) -> CaptionRules:
    """The rules `enabled` names, with their word lists (`given_names`: as the list spells them;
    only the name, title and none_of_these rules read them)."""
    enabled = list(enabled)
    unknown = set(enabled) - set(RULES)
    if unknown:
        raise ImagenotError(f"selection.caption_rules.rules: unknown {sorted(unknown)}; known: {', '.join(RULES)}")
    names = frozenset(n.lower() for n in given_names) - _NOT_NAMES
    return CaptionRules(
        enabled=frozenset(enabled),
        foreign_words=frozenset(w.lower() for w in foreign_words),
        given_names=names,
        function_words=_NOT_NAMES,
        tag_words=tag_words,
        word_pos=word_pos,
        none_of_these=none_of_these_model(none_of_these_threshold, names) if NONE_OF_THESE in enabled else None,
    )


def none_of_these_model(threshold: float, given_names: frozenset[str]) -> NoneOfThese:
    """The shipped model at `threshold`, with its word lists; no corpus statistics yet
    (`NoneOfThese.with_stats` adds a run's)."""
    words = Words(given_names, colour_words(), is_english, tagged_counts, is_noun)
    return NoneOfThese(WEIGHTS, BIAS, threshold, words)


@functools.cache
def colour_words() -> frozenset[str]:
    """The one-word lemmas of WordNet's colours, lower-cased."""
    index = load_index()
    root = index.by_name(_COLOUR_ROOT).wnid
    return frozenset(
        lemma.lower() for wnid in index.descendants(root) for lemma in index[wnid].lemmas if lemma.isalpha()
    )


@functools.cache
def tagged_counts(word: str) -> tuple[int, int]:
    """How often WordNet's tagged corpus (SemCor) has the word (a form, inflected or not) as a
    noun, and in every part of speech."""
    wordnet, index = _wordnet(), load_index()
    counts = {pos: 0 for pos in "nvar"}
    for pos in counts:
        base = wordnet.morphy(word, pos)
        if not base:
            continue
        if pos == "n":  # most forms the rules meet are nouns: the index counts them without NLTK's synsets
            counts[pos] = sum(_noun_count(index[wnid], base) for wnid in _noun_wnids(base))
        else:
            counts[pos] = sum(_count(synset, base) for synset in wordnet.synsets(base, pos))
    return counts["n"], sum(counts.values())


@functools.cache
def is_noun(word: str) -> bool:
    """Whether WordNet has the word, inflected or not, as a noun (and it is no function word)."""
    return word not in _NOT_NAMES and "n" in word_pos(word)


@functools.cache
def is_english(word: str) -> bool:
    """Whether WordNet (in any part of speech, inflected or not) or the function words know the word."""
    return word in _NOT_NAMES or bool(word_pos(word))


def senses_of(index: NounIndex, wnids: Iterable[str]) -> dict[str, Sense]:
    """Each synset's facts the rules read, WordNet's tagged-sense counts among them."""
    wnids = sorted(set(wnids))
    lemmas = sorted({lemma for wnid in wnids for lemma in index[wnid].lemmas})
    normal = dict(zip(lemmas, normalize_text(pa.array(lemmas, pa.string())).to_pylist()))  # one batch: fast
    number = index.by_name(_NUMBER_ROOT).wnid
    senses = {}
    for wnid in wnids:
        synset = index[wnid]
        outranked = set()
        for lemma in synset.lemmas:
            counts = {other: _noun_count(index[other], lemma) for other in _noun_wnids(lemma)}
            if counts and max(counts.values()) > counts.get(wnid, 0):
                outranked.add(normal[lemma])
        forms = frozenset(normal[lemma] for lemma in synset.lemmas)
        senses[wnid] = Sense(
            synset.lemmas, synset.lexname, number in index.ancestors(wnid), forms, frozenset(outranked)
        )
    return senses


def _count(synset, lemma: str) -> int:
    """How often SemCor tagged `lemma` with this synset of NLTK's, of any part of speech
    (WordNet's sense order follows it): NLTK's `Lemma.count()`, from `sense_key_counts`."""
    counts = sense_key_counts()
    return sum(counts.get(entry.key(), 0) for entry in synset.lemmas() if entry.name().lower() == lemma.lower())


@functools.cache
def sense_key_counts() -> dict[str, int]:
    """SemCor's tag count of each sense key WordNet counts (`wordnet.index.tag_counts`), read once a
    process. NLTK's `Lemma.count()` binary-searches the file on disk for each lemma; the none-of-these
    rule asks for every sense of every form it meets, which at LAION's candidate density cost a fifth
    of the caption rules' CPU."""
    return tag_counts(_wordnet())


def _noun_wnids(lemma: str) -> list[str]:
    """The wnids of NLTK's `wordnet.synsets(lemma, "n")`, one per synset it lists (the synsets of each
    form morphy gives), read from NLTK's lemma index without building its Synset objects, which the
    caption rules would ask for every lemma of every candidate (at LAION's candidate density most of
    select's work on the driver): the same list for every noun lemma of WordNet, in a sixth of the
    time. The two names are NLTK's own, private to it: its version is pinned."""
    wordnet = _wordnet()
    lemmas = wordnet._lemma_pos_offset_map
    return [
        wnid_of_offset(offset) for form in wordnet._morphy(lemma.lower(), "n") for offset in lemmas[form].get("n", [])
    ]


def _noun_count(synset: Synset, lemma: str) -> int:
    """`_count` of a noun synset, from the index's counts: NLTK's `Lemma.count()` searches a file
    each time, and the caption rules ask for every sense of every candidate's lemmas."""
    return sum(n for name, n in zip(synset.lemmas, synset.lemma_counts) if name.lower() == lemma.lower())


def tag_words(words: tuple[str, ...]) -> list[str]:
    """Penn part-of-speech tags of lower-cased words, by TextBlob's pattern tagger (its lexicon ships
    in the wheel; no NLTK data is needed), one per word. Its tagging step alone: the words are split
    already, with no punctuation left for its tokenizer to cut, which would cost twice the tagging
    (the same tags: tests/test_caption_rules.py)."""
    return list(_tags(words))


@functools.lru_cache(maxsize=1 << 16)
def _tags(words: tuple[str, ...]) -> tuple[str, ...]:
    """`tag_words`, kept for the captions met again: about a fifth of the captions repeat an
    earlier one (synthetic and LAION's alike)."""
    return tuple(tag for _, tag in _tagger().find_tags(list(words)))


@functools.cache
def word_pos(word: str) -> frozenset[str]:
    """WordNet's parts of speech of a word, inflected or not ("gets" -> {"n", "v"}); kept, as the
    part-of-speech rule asks for each pair's word."""
    wordnet = _wordnet()
    return frozenset(pos for pos in "nvasr" if wordnet.morphy(word, pos))


@functools.cache
def _tagger():
    from textblob.en import parser

    return parser


@functools.cache
def _wordnet():
    return load_nltk_wordnet()


class PairChecker:
    """The caption rules with every candidate's facts, built on the driver; pickles to workers."""

    def __init__(self, rules: CaptionRules, candidates: Iterable[str], index: NounIndex):
        self.rules = rules
        self.senses = senses_of(index, candidates) if rules.enabled else {}

    def keep_passing_rows(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, Drops]:
        return keep_passing_rows(batch, self.rules, self.senses)

    def check_rows(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, Drops, ClassDrops]:
        """The passing rows, the drops by rule and the drops by (wnid, rule)."""
        return check_rows(batch, self.rules, self.senses)

    def rules_fired(self, captions: list, matched: list, wnids: list[str]) -> list[str | None]:
        """Per (caption, matched forms, candidate) pair, the rule that drops it, or None."""
        return pair_rules(captions, matched, wnids, self.rules, self.senses)
