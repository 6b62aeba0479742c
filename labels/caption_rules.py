"""Caption rules: does the caption's word, where it matched, name the synset it was kept for?

The tagger matches lower-cased, punctuation-free tokens, so "iPhone 8" tags eight.n.01, "HP
printers" horsepower, "Led Zeppelin" the light-emitting diode and "Harry Potter" potter.n.01.
Each rule here looks at one (caption, matched surface form, synset) pair in the caption as
written, with its case and neighbours, and names why the word does not name the thing:

- size_code: a size or Roman-numeral code written in capitals ("XL", "LX", "II").
- number: a number synset, or a match holding a digit ("iphone 8", "10/2006", "Seven Tips"):
  in captions numbers are model names, sizes, dates and counts, not the number itself.
- foreign_word: a function word of another language ("de" -> Delaware, "en" -> en.n.01).
- case: an abbreviation that matches only by case folding: WordNet spells the lemma in capitals
  and the caption does not ("Led" for LED, "de" for DE), or the caption spells in capitals a
  lemma WordNet does not ("HP" for hp, "BK" for Bk, "KISS") in a caption that is not all capitals.
- name: the word inside a personal name: next to a capitalised given name ("Harry Potter",
  "The Portable Arthur Miller"), or itself a given name before a capitalised word ("Matt Damon",
  "Louis Vuitton"), unless the synset is a place ("Virginia Beach").
- title: a capitalised word in a caption that names a work: a year in brackets ("Saving Grace
  (2000)"), "by" and a given name, or a word such as ebook, paperback, DVD, season.
- part_of_speech: the word used as a verb, adjective or adverb ("Gets", "Now on Etsy", "Organic
  Fruit"), by TextBlob's pattern tagger (its lexicon ships in the wheel) on the lower-cased
  caption, where WordNet also has the word in that part of speech.
- rare_sense: WordNet's tagged counts give every form the caption spells a commoner noun sense.
- none_of_these: a fitted model says the word names none of its noun senses there: a name, a
  sense WordNet lacks, a letter or abbreviation, a modifier (`labels.none_of_these`, with the
  corpus's statistics of how the form is written).

`pair_rule` returns the first rule that fires, in the order above, or None. The select stage
runs it (`pair_rules`, through `check_rows`, which also counts the drops per class and rule for
`imagenot why`) over each pair step 6 keeps, `imagenot senses` over its rows: one function,
one answer. `caption_decision` is the whole verdict on a caption for a synset, as the build reaches
it: a caption rule first (select), then the sense decision (`SenseDecision`: the word fits none of
its senses, `none_of_these_fit`; another sense wins, `other_sense`) and the caption threshold (sample).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from imagenot.filters.batches import Drops, require_column
from imagenot.filters.funnel import CAPTION_RULES_STEP
from imagenot.labels.none_of_these import NoneOfThese, none_of_these_scores

STEP = CAPTION_RULES_STEP
OTHER_SENSE = "other_sense"
WEB_SENSE = "web_sense"  # a sense WordNet lacks wins the caption's word (labels.web_senses)
NONE_OF_THESE_FIT = "none_of_these_fit"  # the sense model's "none of these": another knob than select's rule
LABEL_MODEL = "label_model"  # the label model says the caption's picture does not show its class
BELOW_THRESHOLD = "below_threshold"
KEPT = ""
NONE_OF_THESE = "none_of_these"
RULES = (
    "size_code",
    "number",
    "foreign_word",
    "case",
    "name",
    "title",
    "part_of_speech",
    "rare_sense",
    NONE_OF_THESE,
)

# English function words that are also WordNet noun lemmas or their plurals ("a": the letter,
# vitamin A, adenine; "in": inch, indium; "it": information technology; "as": plural of "a").
# Matched, they would tag nearly every caption with synsets it is not about (the tag stage's
# default `tagging.ignore_forms`); the caption rules never take one for a name.
FUNCTION_WORDS = (
    "a an i me he it us who in at as or so then while be am are do have one no none same more "
    "least few much here there why out over down may might must will"
).split()

_WORD = re.compile(r"[^\W_]+")
_SEPARATORS = r"[\W_]+"
_NOT_AFTER_WORD = r"(?<![^\W_])"
_WORD_ENDS = r"(?=(?:'s)?(?![^\W_]))"
_SIZES = frozenset({"XXS", "XS", "XL", "XXL", "XXXL", "2XL", "3XL", "4XL", "5XL", "6XL"})
_ROMAN = re.compile(r"(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})")
_YEAR_IN_BRACKETS = re.compile(r"\(\s*(?:1[89]|20)\d\d\s*\)")
_BY = re.compile(r"\bby:?\s+(?:Sir\s+|Dr\.?\s+)?([A-Z][a-z]+)")
_TITLE_WORDS = frozenset(
    "ebook e-book audiobook paperback hardcover hardback novel dvd dvdrip blu-ray bluray soundtrack lp "
    "album season episode memoir vol subtitle".split()
)
# Penn tags of words that are not nouns whatever WordNet says; VB*, JJ*, RB* need WordNet's agreement.
_FUNCTION_TAGS = frozenset({"IN", "UH", "DT", "PRP", "PRP$", "MD", "CC", "TO", "WDT", "WP", "WRB", "EX", "PDT", "RP"})
_WORDNET_POS = {"VB": "v", "JJ": "as", "RB": "r"}
_MIN_LOWER_SHARE = 0.25  # below it a caption is written in capitals and its case says nothing


@dataclass(frozen=True)
class Sense:
    """What the rules need to know of the synset a pair was kept for."""

    lemmas: tuple[str, ...]  # as WordNet spells them: "LED", "hp", "New_York_City"
    lexname: str  # "noun.location"
    is_number: bool  # under number.n.02
    lemma_forms: frozenset[str] = frozenset()  # the lemmas lower-cased, separators as spaces
    outranked_forms: frozenset[str] = frozenset()  # of those, the ones whose commoner sense is another synset


@dataclass(frozen=True)
class CaptionRules:
    """The rules turned on, and the word lists some of them read."""

    enabled: frozenset[str] = frozenset(RULES)
    foreign_words: frozenset[str] = frozenset()
    given_names: frozenset[str] = frozenset()  # lower-cased
    function_words: frozenset[str] = frozenset()  # English: never a name's neighbour
    tag_words: Callable[[tuple[str, ...]], list[str]] | None = None  # Penn tags of lower-cased words
    word_pos: Callable[[str], Set[str]] | None = None  # WordNet's parts of speech of a word: "n", "v", "a", ...
    none_of_these: NoneOfThese | None = None  # the none_of_these rule's model, with the corpus's form statistics


def pair_rule(caption: str, form: str, sense: Sense, rules: CaptionRules) -> str | None:
    """The first rule that says `form` (a normalised surface form that tagged `sense`) does not
    name the synset in `caption`, or None. A form not found in the caption as written (text
    the tagger normalised beyond case and punctuation) passes."""
    return _pair_verdict(caption, form, sense, rules)[0]


def _pair_verdict(
    caption: str, form: str, sense: Sense, rules: CaptionRules
) -> tuple[str | None, tuple[float, bool] | None]:
    """`pair_rule`, and the none-of-these score (`none_of_these_scores`) where that rule was
    reached: `check_rows` keeps it for the rows it keeps rather than computing it again."""
    span = find_span(caption, form)
    if span is None:
        return None, None
    start, end = span
    score = None
    for rule in RULES:
        if rule not in rules.enabled:
            continue
        if rule == NONE_OF_THESE:  # the one rule with a score (off without its model)
            if rules.none_of_these is not None:
                [score] = none_of_these_scores([(caption, start, end, sense.lemmas)], rules.none_of_these)
                if score[1]:
                    return rule, score
        elif _CHECKS[rule](caption, start, end, sense, rules):
            return rule, None
    return None, score


def find_span(caption: str, form: str) -> tuple[int, int] | None:
    """Where the form first occurs in the caption: its words apart by any separators, apostrophes
    anywhere inside a word, a possessive "'s" after it."""
    if caption.isascii() and "'" not in caption and _PLAIN_FORM.fullmatch(form):
        return _plain_span(caption, form)
    found = _span_pattern(form).search(caption)
    return found.span() if found else None


# A form of ASCII letters and digits, words apart by one space: in an ASCII caption without
# apostrophes, `_span_pattern` matches it exactly where the caption's runs of letters and digits,
# lower-cased, are its words in a row (a separator is any other character, and the pattern's ends
# need a run to start and end there), so no pattern need be compiled (about half the caption
# rules' CPU at LAION's candidate density, where most pairs have a form not met before).
_PLAIN_FORM = re.compile(r"[a-z0-9]+(?: [a-z0-9]+)*")
_ASCII_RUN = re.compile(r"[a-z0-9]+")


def _plain_span(caption: str, form: str) -> tuple[int, int] | None:
    """`find_span` of a plain form (`_PLAIN_FORM`) in an ASCII caption without apostrophes."""
    lowered = caption.lower()
    words = form.split(" ")
    if len(words) == 1:  # the common case: a run equal to the form, found by `str.find`
        at, size, end = lowered.find(form), len(form), len(lowered)
        while at >= 0:
            if (at == 0 or not lowered[at - 1].isalnum()) and (at + size == end or not lowered[at + size].isalnum()):
                return at, at + size
            at = lowered.find(form, at + 1)
        return None
    if words[0] not in lowered:
        return None
    runs = [(m.group(), m.start(), m.end()) for m in _ASCII_RUN.finditer(lowered)]
    for i in range(len(runs) - len(words) + 1):
        if all(runs[i + k][0] == word for k, word in enumerate(words)):
            return runs[i][1], runs[i + len(words) - 1][2]
    return None


@functools.lru_cache(maxsize=1 << 16)
def _span_pattern(form: str) -> re.Pattern:
    """`find_span`'s pattern for a form, compiled once: a corpus has more forms than `re`'s own
    cache holds (512), and compiling one costs more than the search."""
    words = ["'?".join(map(re.escape, word)) for word in form.split(" ")]
    return re.compile(_NOT_AFTER_WORD + _SEPARATORS.join(words) + _WORD_ENDS, re.IGNORECASE)


def _size_code(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    text = caption[start:end]
    return text.isupper() and (text in _SIZES or (len(text) >= 2 and _ROMAN.fullmatch(text) is not None))


def _number(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    return sense.is_number or any(c.isdigit() for c in caption[start:end])


def _foreign_word(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    return caption[start:end].lower() in rules.foreign_words


def _case(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    text = caption[start:end]
    lemmas = _matching_lemmas(text, sense)
    if not lemmas:
        return False
    if all(_capitals(lemma) >= 2 for lemma in lemmas) and not any(text.startswith(lemma) for lemma in lemmas):
        return True
    shouted = text.isupper() and 2 <= len(text) <= 5 and not any(lemma.isupper() for lemma in lemmas)
    return shouted and _lower_share(caption) >= _MIN_LOWER_SHARE


def _matching_lemmas(text: str, sense: Sense) -> list[str]:
    """The one-word lemmas the text spells, alone or with a plural ending."""
    return [lemma for lemma in sense.lemmas if _WORD.fullmatch(lemma) and _spells(text.lower(), lemma.lower())]


def _capitals(word: str) -> int:
    return sum(c.isupper() for c in word)


def _lower_share(caption: str) -> float:
    letters = [c for c in caption if c.isalpha()]
    return sum(c.islower() for c in letters) / len(letters) if letters else 0.0


def _name(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    text = caption[start:end]
    if not text[:1].isupper():
        return False
    before, after = _neighbours(caption, start, end)
    if any(_is_given_name(word, rules) for word in (before, after) if word):
        return True
    own_name = text.lower() in rules.given_names and sense.lexname != "noun.location"
    return own_name and after is not None and after[:1].isupper() and after.lower() not in rules.function_words


def _neighbours(caption: str, start: int, end: int) -> tuple[str | None, str | None]:
    """The words just before and after the span, when only spaces part them from it."""
    before = re.search(r"([^\W_]+) +$", caption[:start])
    after = re.match(r" +([^\W_]+)", caption[end:])
    return (before.group(1) if before else None), (after.group(1) if after else None)


def _is_given_name(word: str, rules: CaptionRules) -> bool:
    return word[:1].isupper() and word[1:].islower() and word.lower() in rules.given_names


def _title(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    if not caption[start : start + 1].isupper():
        return False
    if _YEAR_IN_BRACKETS.search(caption):
        return True
    if any(_is_given_name(name, rules) for name in _BY.findall(caption)):
        return True
    return any(word.lower() in _TITLE_WORDS for word in re.findall(r"[^\W_]+(?:-[^\W_]+)?", caption))


def _part_of_speech(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    text = caption[start:end]
    if any(lemma.isupper() and text.startswith(lemma) for lemma in _matching_lemmas(text, sense)):
        return False  # an abbreviation written as WordNet writes it ("LED"): the lower-cased tagger would misread it
    words = _WORD.findall(caption.lower())
    head = _WORD.findall(caption[start:end].lower())[-1]
    position = len(_WORD.findall(caption[:end].lower())) - 1  # the span's last word: its head
    if rules.tag_words is None or rules.word_pos is None or position >= len(words) or words[position] != head:
        return False
    tag = rules.tag_words(tuple(words))[position]
    if tag in _FUNCTION_TAGS:
        return True
    pos = _WORDNET_POS.get(tag[:2])
    return pos is not None and bool(set(pos) & rules.word_pos(head))


def _rare_sense(caption: str, start: int, end: int, sense: Sense, rules: CaptionRules) -> bool:
    spelled = [form for form in sense.lemma_forms if _spells(caption[start:end].lower(), form)]
    return bool(spelled) and all(form in sense.outranked_forms for form in spelled)


def none_of_these_pairs(
    captions: list[str], forms: list[str | None], senses: list[Sense], rules: CaptionRules
) -> list[tuple[float | None, bool]]:
    """Per (caption, the matched form, its synset's facts), the none-of-these probability and
    whether the rule drops the pair (None, False: the form is not in the caption as written, or the
    model is not loaded); the other rules are not consulted."""
    found = [find_span(caption, form) if caption and form else None for caption, form in zip(captions, forms)]
    where = [i for i, span in enumerate(found) if span is not None and rules.none_of_these is not None]
    scored = (
        none_of_these_scores([(captions[i], *found[i], senses[i].lemmas) for i in where], rules.none_of_these)
        if where
        else []
    )
    out: list[tuple[float | None, bool]] = [(None, False)] * len(captions)
    for i, (p, drops) in zip(where, scored):
        out[i] = (p, drops)
    return out


def _spells(folded: str, form: str) -> bool:
    """Whether the lower-cased text is the form, or the form with a plural ending."""
    return folded.startswith(form) and len(folded) - len(form) <= 2


_CHECKS = {
    "size_code": _size_code,
    "number": _number,
    "foreign_word": _foreign_word,
    "case": _case,
    "name": _name,
    "title": _title,
    "part_of_speech": _part_of_speech,
    "rare_sense": _rare_sense,
}  # none_of_these: `_pair_verdict` reads its score itself


def matched_form(matched: list[str], sense: Sense) -> str | None:
    """Of a caption's matched surface forms, the one that tagged `sense` (a lemma, or its plural)."""
    return next((form for form in matched if any(_spells(form, lemma) for lemma in sense.lemma_forms)), None)


def pair_rules(
    captions: list, matched: list, wnids: list[str], rules: CaptionRules, senses: Mapping[str, Sense]
) -> list[str | None]:
    """Per (caption, its matched surface forms, wnid) pair, the rule that drops it, or None."""
    return [rule for rule, _ in _pair_verdicts(captions, matched, wnids, rules, senses)]


def _pair_verdicts(
    captions: list, matched: list, wnids: list[str], rules: CaptionRules, senses: Mapping[str, Sense]
) -> list[tuple[str | None, tuple[float, bool] | None]]:
    """`_pair_verdict` of each (caption, its matched surface forms, wnid) pair."""
    verdicts = []
    for caption, forms, wnid in zip(captions, matched, wnids):
        form = matched_form(forms or [], senses[wnid])
        verdicts.append(_pair_verdict(caption, form, senses[wnid], rules) if caption and form else (None, None))
    return verdicts


ClassDrops = dict[tuple[str, str], int]  # (wnid, rule) -> captions of that class the rule dropped


def keep_passing_rows(
    batch: pa.RecordBatch, rules: CaptionRules, senses: Mapping[str, Sense]
) -> tuple[pa.RecordBatch, Drops]:
    """The rows of a step-6 batch (`caption`, `matched`, `wnid`) that no rule drops, and the
    dropped rows counted by rule; `senses` holds every candidate's facts."""
    kept, drops, _ = check_rows(batch, rules, senses)
    return kept, drops


def check_rows(
    batch: pa.RecordBatch, rules: CaptionRules, senses: Mapping[str, Sense]
) -> tuple[pa.RecordBatch, Drops, ClassDrops]:
    """`keep_passing_rows`, and the dropped rows counted by (wnid, rule) too, for `imagenot why`.
    The kept rows carry `NONE_SCORE_COLUMN`: the none-of-these model's probability for the pair (null
    where that rule is off), which the label model reads."""
    if batch.num_rows == 0 or not rules.enabled:
        return with_none_scores(batch, [None] * batch.num_rows), {}, {}
    captions = require_column(batch, "caption", "the caption rules read it").to_pylist()
    matched = require_column(batch, "matched", "the tag stage writes it").to_pylist()
    wnids = require_column(batch, "wnid", "added by step 6").to_pylist()
    verdicts = _pair_verdicts(captions, matched, wnids, rules, senses)
    fired = [rule for rule, _ in verdicts]
    drops = Counter((STEP, rule) for rule in fired if rule)
    by_class = Counter((wnid, rule) for wnid, rule in zip(wnids, fired) if rule)
    kept = [i for i, rule in enumerate(fired) if rule is None]
    scores = [None] * len(kept)
    if NONE_OF_THESE in rules.enabled and rules.none_of_these is not None:
        # every kept pair whose form the caption spells reached the rule: its score is the verdict's
        scores = [score[0] if (score := verdicts[i][1]) is not None else None for i in kept]
    elif rules.none_of_these is not None and kept:
        forms = [matched_form(matched[i] or [], senses[wnids[i]]) for i in kept]
        pairs = none_of_these_pairs([captions[i] for i in kept], forms, [senses[wnids[i]] for i in kept], rules)
        scores = [p for p, _ in pairs]
    passing = batch.take(pa.array(kept, pa.int64()))
    return with_none_scores(passing, scores), dict(drops), dict(sorted(by_class.items()))


NONE_SCORE_COLUMN = "none_score"


def with_none_scores(batch: pa.RecordBatch, scores: list[float | None]) -> pa.RecordBatch:
    return batch.append_column(NONE_SCORE_COLUMN, pa.array(scores, pa.float32()))


@dataclass(frozen=True)
class SenseDecision:
    """The sense decision's floors (the pipeline's `Scoring.sense_decision()`); None tests nothing.
    `margin`: the caption's score for its synset minus the best other noun sense's of its word must
    reach it, else `other_sense`. `web_margin`: the same over the word's senses WordNet lacks
    (`labels.web_senses`), else `web_sense`. `min_fit`: the best sense's fit where the word stands
    (the score stage's `sense_fit`: the trained head's logit, the sentence method's similarity) must
    reach it, else `none_of_these_fit`: the word names none of its senses there (a brand, a work, a
    sense WordNet lacks), read from the sense model beside select's corpus-statistics rule.
    `min_label`: the label model's probability that the caption's picture shows its class
    (`labels.label_model`) must reach it, else `label_model`."""

    margin: float | None = None
    min_fit: float | None = None
    web_margin: float | None = None
    min_label: float | None = None


SENSE_OFF = SenseDecision()  # no sense contrast: every scored caption stays


@dataclass(frozen=True)
class PairScores:
    """What the score stage recorded of each caption for its synset (None: not recorded)."""

    similarity: np.ndarray  # the caption's gloss similarity
    margin: np.ndarray | None = None  # over the best other WordNet sense (inf: none)
    fit: np.ndarray | None = None  # the best WordNet sense's fit
    web_margin: np.ndarray | None = None  # over the best web sense (inf: none)
    label: np.ndarray | None = None  # the label model's probability


def _column(scores: PairScores, name: str, floor: str) -> np.ndarray:
    values = getattr(scores, name)
    if values is None:
        raise ValueError(f"caption_decision: the floor {floor} needs each caption's {name}")
    return np.asarray(values, np.float32)


def caption_decision(
    scores: PairScores, threshold: float | None, sense: SenseDecision, rule: list[str | None] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(passes, reason) per caption for the synset it is scored for. `rule`: the caption rule that
    drops each pair (`pair_rules`; None: none did, or rules not run); it names the reason first, as
    select drops the pair before scoring. Then a fit under `sense.min_fit` is `none_of_these_fit`
    (no sense of the word fits, so no other sense wins either); a margin under `sense.margin` is
    `other_sense` and a web margin under `sense.web_margin` `web_sense` (both: the sense that
    outscores the synset more names it); a label probability under `sense.min_label` is
    `label_model`; and a similarity under `threshold` `below_threshold`."""
    similarity = np.asarray(scores.similarity, np.float32)
    reason = np.full(len(similarity), KEPT, object)
    if threshold is not None:
        reason[similarity < np.float32(threshold)] = BELOW_THRESHOLD
    if sense.min_label is not None:
        reason[_column(scores, "label", "min_label") < np.float32(sense.min_label)] = LABEL_MODEL
    other = np.zeros(len(similarity), bool)
    if sense.margin is not None:
        margin = _column(scores, "margin", "margin")
        other = margin < np.float32(sense.margin)
        reason[other] = OTHER_SENSE
    if sense.web_margin is not None:
        web_margin = _column(scores, "web_margin", "web_margin")
        web = web_margin < np.float32(sense.web_margin)
        if sense.margin is not None:
            web &= ~other | (web_margin < margin)
        reason[web] = WEB_SENSE
    if sense.min_fit is not None:
        reason[_column(scores, "fit", "min_fit") < np.float32(sense.min_fit)] = NONE_OF_THESE_FIT
    if rule is not None:
        fired = np.array([name is not None for name in rule], bool)
        reason[fired] = np.array([name for name in rule if name is not None], object)
    return reason == KEPT, reason
