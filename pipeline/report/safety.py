"""The card's safety section: which synsets the offensive, identity and classifier rules removed.

The select stage's `synset_fates.tsv` names each removal's rule; here they are counted per rule,
set beside what each rule covers over all of WordNet, and written out as `report/removed_synsets.tsv`
(the wnids themselves stay out of the card's prose). A run built with a rule off says so at the
top of its card.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from apache_beam.io.filesystems import FileSystems

from imagenot.filters import nsfw_synsets, offensive_synsets, person_synsets
from imagenot.filters.funnel import FATE_COLUMNS
from imagenot.filters.offensive_synsets import marked_synsets
from imagenot.filters.person_synsets import ANY_PERSON, IDENTITY_LABELS, PERSON_LEXNAME, identity_synsets
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.report.markdown import table
from imagenot.pipeline.run.files import write_tsv
from imagenot.pipeline.run.layout import REMOVED_SYNSETS_FILE, SELECT, SYNSET_FATES_FILE, stage_path
from imagenot.pipeline.select.funnel_files import read_synset_fates
from imagenot.wordnet.index import NounIndex

SAFETY_STEPS = (offensive_synsets.STEP, person_synsets.STEP, nsfw_synsets.STEP)
RULES = {  # reason -> the rule as the card names it, in the card's order
    **{reason: f"WordNet usage: {label}" for reason, label in offensive_synsets.USAGE_DOMAINS.values()},
    offensive_synsets.GLOSS_REASON: "WordNet gloss: an offensive term, or a slur",
    **{reason: f"person synset naming {label}" for reason, label in IDENTITY_LABELS.items()},
    ANY_PERSON: "any other person synset",
    "nsfw_text": "text classifier (alt-profanity-check)",
}
PERSON_WARNING = (
    "> **Person synsets were kept** (`selection.person_synsets: keep`): classes may name people by race, ethnicity, "
    "nationality, religion, sexual orientation, sex or gender, or disability, which no picture can show. Check the "
    "class list before using or publishing this dataset."
)
OFFENSIVE_WARNING = (
    "> **Synsets WordNet marks as offensive were kept** (`selection.offensive_synsets: false`): classes may be named "
    "by slurs. Check the class list before using or publishing this dataset."
)


@dataclass(frozen=True)
class Safety:
    removed: list[dict[str, str]]  # synset_fates.tsv rows of the safety steps, by wnid
    wordnet: dict[str, int]  # reason -> WordNet nouns the rule covers (the classifier's: not counted)

    def counts(self) -> Counter:
        return Counter(row["reason"] for row in self.removed)


def gather_safety(run_dir: str, index: NounIndex) -> Safety:
    fates = read_synset_fates(stage_path(run_dir, SELECT, SYNSET_FATES_FILE))
    removed = [row for _, row in sorted(fates.items()) if row["step"] in SAFETY_STEPS]
    wordnet = Counter(reason for reason, _ in marked_synsets(index).values())
    identity = identity_synsets(index)
    wordnet.update(reason for reason, _ in identity.values())
    wordnet[ANY_PERSON] = sum(1 for s in index if s.lexname == PERSON_LEXNAME and s.wnid not in identity)
    return Safety(removed, dict(wordnet))


def write_removed(safety: Safety, report_dir: str) -> str:
    """`removed_synsets.tsv`: each synset of the run the safety rules removed, with its rule and reason."""
    path = FileSystems.join(report_dir, REMOVED_SYNSETS_FILE)
    write_tsv(path, FATE_COLUMNS, safety.removed)
    return path


def notices(config: Config) -> list[str]:
    """The card's first lines when a safety rule was turned off."""
    s = config.selection
    lines = [OFFENSIVE_WARNING] if not s.offensive_synsets else []
    lines += [PERSON_WARNING] if s.person_synsets == "keep" else []
    return [*lines, ""] if lines else []


def _states(config: Config) -> dict[str, bool]:
    """reason -> whether its rule ran."""
    s = config.selection
    offensive = [*(reason for reason, _ in offensive_synsets.USAGE_DOMAINS.values()), offensive_synsets.GLOSS_REASON]
    return {
        **dict.fromkeys(offensive, s.offensive_synsets),
        **dict.fromkeys(IDENTITY_LABELS, s.person_synsets != "keep"),
        ANY_PERSON: s.person_synsets == "all",
        "nsfw_text": s.nsfw_synset_threshold is not None,
    }


def section(config: Config, safety: Safety) -> list[str]:
    """The card's safety section."""
    counts, s, states = safety.counts(), config.selection, _states(config)
    rows = [
        (rule, "on" if states[reason] else "off", counts.get(reason, 0), safety.wordnet.get(reason, ""))
        for reason, rule in RULES.items()
    ]
    classifier = "off" if s.nsfw_synset_threshold is None else f"a score of at least {s.nsfw_synset_threshold}"
    return [
        "## Safety: offensive and identity synsets",
        "",
        "Before any other synset filter, two rules over WordNet 3.0 remove synsets (see the README, Safety rules): "
        f"those WordNet itself marks as offensive (`selection.offensive_synsets: {str(s.offensive_synsets).lower()}`), "
        f"and person synsets by `selection.person_synsets: {s.person_synsets}` (identity: those naming people by "
        "race, ethnicity, nationality, religion, sexual orientation, sex or gender, or disability; all: every person "
        "synset). "
        f"After step 4, a text classifier removes synsets whose lemmas and gloss it scores offensive ({classifier}).",
        "",
        *table(("rule", "state", "synsets removed in this run", "WordNet nouns it covers"), rows, "llrr"),
        f"{sum(counts.values()):,} synsets in all; each, with its rule and reason, is in "
        f"`report/{REMOVED_SYNSETS_FILE}`.",
        "",
    ]
