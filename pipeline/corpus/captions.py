"""Caption text for the synthetic corpus, written the ways web alt text is.

Four styles (product titles, alt text, sentences, SEO keyword junk) with shares STYLE_SHARES.
The subject is spelt as web pages spell it: WordNet's underscores become spaces (sometimes
hyphens), lower/as-in-WordNet/Title/UPPER case by style, plurals regular ("boxes", "ponies")
and irregular from WordNet's noun.exc ("mice"), punctuation glued on ("dogs," "(Golden
Retriever)" "painter's"). Template words ("photo", "kitchen floor", "Set") are WordNet nouns
too, as in real captions; they are filler, not what the caption is about.

Two caption kinds (CAPTION_KINDS, `corpus.synth.captions`): "realistic" captions cost what a real
LAION caption costs to tag (about 59 characters, about 21 candidate noun synsets per tagged caption:
gloss context on more captions, and a tail of common many-sensed tag words); "compact" captions are
the shorter ones this module wrote before (about 44 characters, 13 synsets), kept byte for byte for
small test and demo builds that need many captions about one synset from few rows.
"""

from __future__ import annotations

import string
from bisect import bisect
from itertools import accumulate
from typing import NamedTuple

from imagenot.pipeline.corpus.lexicon import Lexicon
from imagenot.pipeline.corpus.synth_defaults import CAPTION_KINDS

STYLES = ("product", "alt", "sentence", "seo")
STYLE_SHARES = (0.3, 0.3, 0.3, 0.1)
PLURAL_SHARE = 0.35
HYPHEN_SHARE = 0.15  # multi-word lemmas written "hot-dog" rather than "hot dog"
GLUE_SHARE = 0.2
CONTEXT_SHARE = {"single": 0.25, "other_sense": 0.7}  # gloss words appended as context (compact)
CASES = ("lower", "wordnet", "title", "upper")
CASE_SHARES = {  # by style
    "product": (0.15, 0.1, 0.55, 0.2),
    "alt": (0.6, 0.3, 0.08, 0.02),
    "sentence": (0.6, 0.3, 0.08, 0.02),
    "seo": (0.8, 0.1, 0.1, 0.0),
}
_STYLE_CDF = tuple(accumulate(STYLE_SHARES))
_CASE_CDF = {style: tuple(accumulate(shares)) for style, shares in CASE_SHARES.items()}
GLUES = ("{},", "{}.", "({})", '"{}"', "{}!", "{}:", "{}'s")

SINGULAR = {
    "product": (
        "Vintage {Color} {x} - {Brand}",
        "{Brand} {x} {size} | Free Shipping",
        "{x} for {Audience} {Color} {year} New",
        "{Brand} {code}-{num} {x}, {Color}",
        "{Adj} {Color} {x} by {Brand}",
    ),
    "alt": (
        "image of {ax}",
        "{x}",
        "{x} stock photo",
        "{x} clipart",
        "{x} png",
        "{ax} on white background",
        "{x} icon vector illustration",
    ),
    "sentence": (
        "Portrait of {ax} in the {place}.",
        "My {x} at the {place} last weekend!",
        "Beautiful {x} in the morning light",
        "Close-up of {ax} on the {place}",
        "This {x} is for sale, message me",
    ),
    "seo": (
        "{x} best {x} {year} cheap {x} for sale buy online {Brand}",
        "Best {x} Ideas on Pinterest | {x}, {Brand} and More",
        "{x} wallpaper hd {x} wallpaper free download {num}",
    ),
}
PLURAL = {
    "product": (
        "{Adj} {x} - Set of {k} | {Brand}",
        "{k} Pcs {x} {Adj} {Brand} ({Color})",
        "{Brand} {x} {size}, Pack of {k}",
    ),
    "alt": ("photo of {x}", "{x} - stock image", "{x} clipart set", "{k} {x}"),
    "sentence": (
        "A close-up photo of {k} {x} on the {place}.",
        "There are {k} {x} next to the {place}.",
        "{k} {x} in the {place}",
        "Look at all these {x}!",
    ),
    "seo": (
        "{x} {x} {x} best {x} {year} cheap {x} buy online",
        "{Brand} {x} {year} | {x} for {Audience}",
    ),
}
MULTI = (
    "{x1} and {x2}",
    "{x1}, {x2} and {x3} | {Brand}",
    "{x1} with {x2} on the {place}.",
    "{x1} & {x2} Set - {Brand}",
    "{x1} vs {x2}",
    "{x1} {x2} {x3} {year}",
)
NO_NOUN = (  # file names, brands and model numbers: no WordNet noun on purpose
    "IMG_{num}.JPG",
    "DSC{num}",
    "{Brand} {code}-{num}",
    "{Brand} {Brand2} {num}",
    "{Brand} {code}{num} | {Brand2}",
    "{Brand}{num}",
)
COLORS = ("Red", "Black", "White", "Blue", "Green", "Pink", "Grey", "Brown", "Gold")
ADJECTIVES = ("Vintage", "Modern", "Handmade", "Rustic", "Luxury", "Cute", "Large", "Antique")
PLACES = ("kitchen floor", "beach", "garden", "table", "street", "park", "sofa", "window sill")
AUDIENCES = ("Men", "Women", "Kids", "Girls", "Boys")
SIZES = ("10 x 12 cm", "XL", "Size M", "2.5 inch", "500ml", "A4")
COUNTS = ("two", "three", "four", "2", "3", "5", "several", "many", "10")
# Realistic captions: gloss context on more of them, and web captions' tail of tags made of common,
# many-sensed words ("Home Decor Wall Art Print"): each names several noun synsets, which is what makes
# a real caption name about 20 of them (benchmarks/README.md, "Synthetic captions against real ones").
REALISTIC_CONTEXT_SHARE = {"single": 0.6, "other_sense": 0.8}
TAIL_SHARE = 0.28
TAIL_WORDS = (
    "home", "design", "set", "black", "white", "light", "art", "print", "wall", "style", "case", "cover", "room",
    "card", "gift", "view", "house", "water", "paper", "star", "life", "day", "party", "decor", "kit", "pattern",
    "background", "line", "top", "frame", "logo", "shirt", "box", "garden", "kitchen", "board", "sign", "time",
)  # fmt: skip
TAIL_LENGTHS = (1, 2, 3, 4)
U_PER_ROW = {"compact": 9, "realistic": 10}  # uniform draws each caption consumes


class Caption(NamedTuple):
    text: str
    wnid: str | None
    kind: str  # "single", "other_sense", "multi", "none"
    lemma: str | None
    surface: str | None
    form: str | None  # "base", "plural", "irregular_plural"
    mentioned: list[str]
    decoy: str | None
    style: str


def _pick(options, u: float):
    return options[int(u * len(options))]


def _pick_weighted(options, cumulative_shares, u: float):
    return options[min(bisect(cumulative_shares, u), len(options) - 1)]


def _distinct(ranks: list[int], n: int) -> list[int]:
    """`ranks` with repeats moved to the next free rank, so each subject is another synset."""
    out: list[int] = []
    for rank in ranks:
        while rank in out:
            rank = (rank + 1) % n
        out.append(rank)
    return out


class CaptionWriter:
    """Writes one caption from a few uniform draws; all randomness comes from the caller."""

    def __init__(self, lexicon: Lexicon, captions: str = "realistic"):
        if captions not in CAPTION_KINDS:
            raise ValueError(f"captions must be one of {', '.join(CAPTION_KINDS)}, not {captions!r}")
        self.lexicon = lexicon
        self.realistic = captions == "realistic"
        self.context_share = REALISTIC_CONTEXT_SHARE if self.realistic else CONTEXT_SHARE
        filler_options = {  # slot -> (divisor picking from the draw, options)
            "Brand": (1, lexicon.brands),
            "Brand2": (3, lexicon.brands),
            "code": (5, lexicon.codes),
            "num": (7, range(2000, 10_000)),  # no WordNet lemma is a number in this range
            "year": (11, range(2005, 2024)),
            "Color": (13, COLORS),
            "Adj": (17, ADJECTIVES),
            "place": (19, PLACES),
            "Audience": (23, AUDIENCES),
            "size": (29, SIZES),
            "k": (31, COUNTS),
        }
        templates = [
            *MULTI,
            *NO_NOUN,
            *(t for group in (SINGULAR, PLURAL) for ts in group.values() for t in ts),
        ]
        self._slots = {  # template -> the filler slots it uses, with how to pick each
            template: tuple(
                (slot, *filler_options[slot])
                for _, slot, _, _ in string.Formatter().parse(template)
                if slot in filler_options
            )
            for template in templates
        }

    def single(self, rank: int, u: list[float]) -> Caption:
        """A caption about one synset, written with one of its own lemmas."""
        lemma = self.lexicon.lemma(rank, u[0])
        return self._about(rank, lemma, "single", None, u)

    def other_sense(self, decoy_rank: int, u: list[float]) -> Caption:
        """A caption using a lemma of `decoy_rank` that is about another synset with that lemma."""
        lexicon = self.lexicon
        lemma = _pick(lexicon.ambiguous_lemmas[decoy_rank], u[0])
        decoy = lexicon.wnids[decoy_rank]
        others = [wnid for wnid in lexicon.lemma_synsets[lemma] if wnid != decoy]
        rank = lexicon.rank_of[_pick(others, u[8])]
        return self._about(rank, lemma, "other_sense", decoy, u)

    def multi(self, ranks: list[int], u: list[float]) -> Caption:
        """A caption about two or three distinct synsets at once."""
        template = _pick(MULTI, u[1])
        case = _pick_weighted(CASES, _CASE_CDF["alt"], u[3])
        slots = [slot for slot in ("x1", "x2", "x3") if f"{{{slot}}}" in template]
        ranks = _distinct(ranks[: len(slots)], len(self.lexicon.wnids))
        subjects = {
            slot: self._spell(self.lexicon.lemma(rank, draw), False, case, u[4] < HYPHEN_SHARE)[0]
            for slot, rank, draw in zip(slots, ranks, u[5:8])
        }
        text = self._tail(self._fill(template, u[2], subjects), u)
        mentioned = sorted(self.lexicon.wnids[rank] for rank in ranks)
        return Caption(text, None, "multi", None, None, None, mentioned, None, "multi")

    def no_noun(self, u: list[float]) -> Caption:
        text = self._fill(_pick(NO_NOUN, u[1]), u[2], {})
        return Caption(text, None, "none", None, None, None, [], None, "none")

    def _about(self, rank: int, lemma: str, kind: str, decoy: str | None, u: list[float]) -> Caption:
        style = _pick_weighted(STYLES, _STYLE_CDF, u[1])
        plural = u[2] < PLURAL_SHARE and lemma[0].islower()  # no plural proper nouns
        templates = (PLURAL if plural else SINGULAR)[style]
        template = templates[int(u[2] * 1000) % len(templates)]
        case = _pick_weighted(CASES, _CASE_CDF[style], u[3])
        surface, form = self._spell(lemma, plural, case, u[4] < HYPHEN_SHARE)
        written = surface
        if u[5] < GLUE_SHARE:
            glue = _pick(GLUES, u[5] / GLUE_SHARE)
            written = (glue if not surface.endswith("s") else glue.replace("'s", "'")).format(surface)
        article = "an" if surface[:1].lower() in "aeiou" else "a"
        text = self._fill(template, u[6], {"x": written, "ax": f"{article} {written}"})
        if u[7] < self.context_share[kind]:
            text = f"{text.rstrip('.!')} - {self.lexicon.gloss_context(rank)}"
        text = self._tail(text, u)
        wnid = self.lexicon.wnids[rank]
        return Caption(text, wnid, kind, lemma, surface, form, [wnid], decoy, style)

    def _tail(self, text: str, u: list[float]) -> str:
        """`text`, for realistic captions and a share TAIL_SHARE of draws u[9], with a few TAIL_WORDS after it."""
        if not self.realistic or u[9] >= TAIL_SHARE:
            return text
        draw = int(u[9] / TAIL_SHARE * 2**40)
        count = TAIL_LENGTHS[draw % len(TAIL_LENGTHS)]
        words = [TAIL_WORDS[(draw // 7**i) % len(TAIL_WORDS)] for i in range(1, count + 1)]
        return f"{text} | {' '.join(words)}"

    def _spell(self, lemma: str, plural: bool, case: str, hyphen: bool) -> tuple[str, str]:
        form = "base"
        if plural:
            lemma, form = self.lexicon.plural(lemma)
        text = lemma.replace("_", "-" if hyphen else " ")
        if case == "lower":
            text = text.lower()
        elif case == "title":
            text = " ".join(word[:1].upper() + word[1:] for word in text.split(" "))
        elif case == "upper":
            text = text.upper()
        return text, form

    def _fill(self, template: str, u: float, subjects: dict[str, str]) -> str:
        """The template with its subjects, and filler words all derived from one draw."""
        draw = int(u * 2**40)
        for slot, divisor, options in self._slots[template]:
            subjects[slot] = options[(draw // divisor) % len(options)]
        return template.format_map(subjects)
