"""Why a synset is or is not a class of a finished run: the answers `imagenot why` prints
(`commands/why.py`, the command).

A bare word ("crane", "hot dog") lists each of its noun senses with its fate. A fate names the
step that decided it with the counts behind it (captions against what a class needs, a score
against the threshold, a place in the ranking; for a safety rule, WordNet's mark or the identity
root; for an instance synset, what it is an instance of; for a synset no caption mentions, the
safety or instance rule that would drop it); a synset whose captions the caption rules dropped
(all of them, or some) gets those drops by rule; a class gets its index, images and split (and,
after a download, its candidates not kept by reason); every synset gets its relation to the
reference set.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

import click
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.filters.funnel import KEPT, describe_fate
from imagenot.filters.offensive_synsets import offensive_removals
from imagenot.filters.person_synsets import person_removals
from imagenot.labels.instances import instance_removals
from imagenot.labels.web_senses import any_sense_label
from imagenot.pipeline.config.reference_lists import reference_wnids
from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.run.files import read_json, read_table, read_tsv
from imagenot.pipeline.run.layout import (
    DATASET_STAGES,
    RANK,
    RANKING_FILE,
    RUN_CONFIG,
    SAMPLE,
    SELECT,
    SELECT_TALLY_FILE,
    SYNSET_FATES_FILE,
    classes_path,
    dataset_shards,
    read_classes,
    stage_path,
)
from imagenot.pipeline.run.paths import folder_exists
from imagenot.pipeline.run.stage_dir import FIGURES_FILE, is_done
from imagenot.pipeline.select.funnel_files import read_rule_drops, read_synset_fates
from imagenot.wordnet.hierarchy import ancestors_in, descendants_in
from imagenot.wordnet.index import WNID_PATTERN, NounIndex
from imagenot.wordnet.nltk_data import other_parts_of_speech

RELATIVES_SHOWN = 3  # reference synsets named per relation
SYNSET_NAME = re.compile(r"^.+\.[nvasr]\.\d+$")


POS_NAMES = {"v": "a verb", "a": "an adjective", "s": "an adjective", "r": "an adverb"}  # wnid prefixes
SUGGESTED = 5  # synsets named when what was asked for does not exist


def senses(word: str, index: NounIndex) -> list[str]:
    """The noun synsets of a wnid, a synset name (gavel.n.01) or a bare word (any case, spaces or
    underscores), in WordNet's sense order."""
    if not word.strip(" _"):
        raise click.BadParameter(
            "the word is empty; give a wnid, a synset name such as gavel.n.01, or a word", param_hint="WORD"
        )
    if WNID_PATTERN.match(word):
        if word not in index:
            raise click.BadParameter(
                f"{word} is not a WordNet 3.0 noun synset; {_nearest_wnids(word, index)}", param_hint="WORD"
            )
        return [word]
    try:
        return [index.by_name(word).wnid]
    except KeyError:
        pass
    if SYNSET_NAME.match(word):
        lemma = word.rsplit(".", 2)[0]
        found = _word_senses(lemma, index)
        shown = [index[w].name for w in found] if found else _close(word, (s.name for s in index))
        hint = f"; did you mean {', '.join(shown[:SUGGESTED])}?" if shown else ""
        raise click.BadParameter(f"{word} is not a WordNet 3.0 noun synset{hint}", param_hint="WORD")
    found = _word_senses(word, index)
    if not found:
        raise click.BadParameter(_not_a_noun(word, index), param_hint="WORD")
    return found


def _word_senses(word: str, index: NounIndex) -> list[str]:
    wanted = word.strip().lower().replace(" ", "_")
    found = {w for lemma, wnids in index.lemma_synsets.items() if lemma.lower() == wanted for w in wnids}
    return sorted(
        found, key=lambda w: (index[w].name.rsplit(".", 2)[0] != wanted, int(index[w].name.rsplit(".", 1)[1]), w)
    )


def _nearest_wnids(wnid: str, index: NounIndex) -> str:
    """The noun synsets whose offsets lie nearest `wnid`'s (a mistyped digit lands near)."""
    if not wnid.startswith("n"):
        return f"its prefix {wnid[0]!r} marks {POS_NAMES[wnid[0]]} (imagenot classes are noun synsets, n + 8 digits)"
    offset = int(wnid[1:])
    nearest = sorted(index.synsets, key=lambda w: (abs(int(w[1:]) - offset), w))[:3]
    return "the nearest that exist: " + ", ".join(f"{w} {index[w].name}" for w in nearest)


def _close(word: str, candidates) -> list[str]:
    """The candidates closest to `word`, among those of its first letter and about its length
    (difflib over all 117k noun lemmas takes seconds; a typo rarely changes either)."""
    near = [c for c in candidates if c[:1] == word[:1] and abs(len(c) - len(word)) <= 2]
    return difflib.get_close_matches(word, near, SUGGESTED)


def _not_a_noun(word: str, index: NounIndex) -> str:
    """Why a bare word has no noun sense: WordNet has it as another part of speech, or not at all."""
    lemma = word.strip().lower().replace(" ", "_")
    if parts := other_parts_of_speech(lemma):
        return f"{word!r} is {' and '.join(parts)} in WordNet; imagenot classes are noun synsets"
    close = _close(lemma, {w.lower() for w in index.lemma_synsets})
    hint = f" (close nouns: {', '.join(c.replace('_', ' ') for c in close)})" if close else ""
    return f"{word!r} is neither a wnid, a noun synset name such as gavel.n.01, nor a WordNet word{hint}"


class Run:
    """What a finished run says about its synsets; each file read once, those not there yet skipped."""

    def __init__(self, run_dir: str, index: NounIndex):
        self.index = index
        if not folder_exists(run_dir):
            raise ImagenotError(f"run directory {run_dir} does not exist")
        fates = stage_path(run_dir, SELECT, SYNSET_FATES_FILE)
        if not FileSystems.exists(fates):
            raise ImagenotError(f"{fates} does not exist: has the run reached the select stage?")
        self.fates = read_synset_fates(fates)
        config = FileSystems.join(run_dir, RUN_CONFIG)
        self.config = load_config(config) if FileSystems.exists(config) else None
        tally_path = stage_path(run_dir, SELECT, SELECT_TALLY_FILE)
        tally = read_json(tally_path) if FileSystems.exists(tally_path) else {}
        self.captions = tally.get("kept", {})
        self.single_synset = tally.get("single_synset", {})
        self.rule_drops = read_rule_drops(tally)
        ranking = stage_path(run_dir, RANK, RANKING_FILE)
        self.ranking = {row["wnid"]: row for row in read_tsv(ranking)} if FileSystems.exists(ranking) else None
        has_classes = FileSystems.exists(classes_path(run_dir))
        self.classes = {c["wnid"]: c for c in read_classes(run_dir)} if has_classes else {}
        self.splits = self._splits(run_dir)
        self.reference = reference_wnids(self.config.selection.reference, index) if self.config else None
        sampled = stage_path(run_dir, SAMPLE, FIGURES_FILE)
        figures = read_json(sampled) if is_done(run_dir, SAMPLE) else {}
        self.other_sense = figures.get("other_sense_by_class", {})
        self.fit_none = figures.get("none_of_these_fit_by_class", {})
        self.label_model = figures.get("label_model_by_class", {})

    def senses_lost(self, wnid: str) -> str | None:
        """For a class: the captions the sense decision dropped at sampling: those whose word fits
        none of its senses (`scoring.none_of_these_fit`), those other senses of its word won (WordNet's
        and the web senses it lacks: web_sense), and those the label model said do not show it."""
        lost, unfit, unlikely = self.other_sense.get(wnid), self.fit_none.get(wnid), self.label_model.get(wnid)
        parts = [f"{unfit:,} captions name none of its senses (none_of_these_fit)"] if unfit else []
        if lost:
            won = sorted(lost.items(), key=lambda item: (-item[1], item[0]))
            parts.append(", ".join(f"{n:,} captions went to {any_sense_label(self.index, w)}" for w, n in won))
        if unlikely:
            uses = ", ".join(
                f"{use} {n:,}" for use, n in sorted(unlikely.items(), key=lambda item: (-item[1], item[0]))
            )
            parts.append(
                f"{sum(unlikely.values()):,} captions the label model says do not show it (label_model: {uses})"
            )
        return "other senses: " + "; ".join(parts) if parts else None

    def rules_dropped(self, wnid: str) -> str | None:
        """The captions of `wnid` the caption rules dropped after step 6, by rule (most first), kept
        or not as a candidate."""
        drops = self.rule_drops.get(wnid)
        if not drops:
            return None
        shown = ", ".join(f"{rule} {n:,}" for rule, n in sorted(drops.items(), key=lambda item: (-item[1], item[0])))
        return (
            f"caption rules dropped {sum(drops.values()):,} of its {self.single_synset.get(wnid, 0):,} "
            f"single-synset captions (selection.caption_rules): {shown}"
        )

    @staticmethod
    def _splits(run_dir: str) -> Counter | None:
        """(class index, split) -> images, from the final dataset (download's, else sample's)."""
        for stage in DATASET_STAGES:
            if is_done(run_dir, stage):
                tables = [read_table(p, ["class_index", "split"]) for p in dataset_shards(run_dir, stage)]
                return Counter((t["class_index"], t["split"]) for table in tables for t in table.to_pylist())
        return None

    def fate(self, wnid: str) -> str:
        fate = self.fates.get(wnid)
        if fate is None:
            return describe_fate(wnid, fate) + self._safety(wnid)
        if fate["step"] != KEPT or self.ranking is None:
            return describe_fate(wnid, fate)
        name = fate["name"]
        row = self.ranking.get(wnid)
        if row is None:
            return f"{wnid} {name}: passed the filters but had no scored caption at step 'rank'"
        if row["fate"] == "class":
            return f"{wnid} {name}: {self._class(wnid, row)}"
        return (
            f"{wnid} {name}: passed the filters, dropped at step 'rank' ({row['fate']}): {self._rank_drop(wnid, row)}"
        )

    def _safety(self, wnid: str) -> str:
        """For a synset no caption mentions: the safety or instance rule that would drop it under the
        run's config (the first of them in the funnel's order)."""
        if self.config is None:
            return ""
        s = self.config.selection
        offensive = offensive_removals([wnid], self.index) if s.offensive_synsets else {}
        instance = {} if s.instance_synsets else instance_removals([wnid], self.index)
        removal = {**instance, **person_removals([wnid], self.index, s.person_synsets), **offensive}.get(wnid)
        if removal is None:
            return ""
        return f"; were it found, step '{removal.step}' would drop it ({removal.reason}): {removal.detail}"

    def _class(self, wnid: str, row: dict) -> str:
        c = self.classes[wnid]
        text = (
            f"a class, index {c['index']} of {len(self.classes):,} (gloss similarity score {row['score']}, "
            f"rank {c['rank'] + 1} of the classes)"
        )
        if self.splits is not None:
            train, test = self.splits[(c["index"], "train")], self.splits[(c["index"], "test")]
            target = f" of {self.config.sampling.images_per_class:,}" if self.config else ""
            text += f"; {train + test:,}{target} images ({train:,} train, {test:,} test)"
        return text

    def _rank_drop(self, wnid: str, row: dict) -> str:
        captions = self.captions.get(wnid, 0)
        if self.config is None:
            return f"score {row['score']}, {captions:,} captions"
        c = self.config
        if row["fate"] == "too_few_captions":
            return f"{captions:,} captions of the {c.min_class_captions:,} a class needs (ranking.min_captions)"
        if row["fate"] == "below_threshold":
            return f"score {row['score']} below the threshold {c.threshold} for {c.scoring.model} (ranking.thresholds)"
        if row["fate"] == "low_pass_share":
            return (
                f"{_share(row)} of its captions pass the caption rules and the sense decision, under the "
                f"{c.ranking.min_pass_share:.0%} a class needs (ranking.min_pass_share)"
            )
        if row["fate"] == "beyond_top_k":
            passing = [w for w, r in self.ranking.items() if r["fate"] in ("class", "beyond_top_k")]
            return (
                f"score {row['score']}, place {passing.index(wnid) + 1:,} of {len(passing):,} synsets that passed; "
                f"only the best {c.ranking.classes:,} become classes (ranking.classes)"
            )
        return f"score {row['score']}" if row["score"] else "not scored (it could not become a class)"

    def pass_share(self, wnid: str) -> str | None:
        """A scored candidate's estimated share of captions that use its word in its sense."""
        row = (self.ranking or {}).get(wnid)
        if not row or not row.get("pass_share") or row["fate"] == "low_pass_share":
            return None
        floor = (
            f" (a class needs {self.config.ranking.min_pass_share:.0%}, ranking.min_pass_share)" if self.config else ""
        )
        return f"{_share(row)} of its captions pass the caption rules and the sense decision{floor}"

    def _sharing_lemmas(self, wnid: str, reference: set[str]) -> list[str]:
        """Reference synsets with a lemma of `wnid`, compared case-insensitively as step 2 does."""
        lemmas = {lemma.lower() for lemma in self.index[wnid].lemmas}
        return sorted(w for w in reference if w != wnid and lemmas & {lemma.lower() for lemma in self.index[w].lemmas})

    def relation(self, wnid: str) -> str:
        """How the synset stands to the run's reference set."""
        if self.reference is None:
            return "reference set unknown (no config.yaml in the run)"
        name, reference = self.config.selection.reference, set(self.reference)
        if wnid in reference:
            return f"is in the reference set {name}"
        parts = []
        for label, found in (
            ("descends from", ancestors_in(self.index, [wnid], reference).get(wnid, [])),
            ("is an ancestor of", descendants_in(self.index, [wnid], reference).get(wnid, [])),
            ("shares a lemma with", self._sharing_lemmas(wnid, reference)),
        ):
            if found:
                shown = ", ".join(f"{w} {self.index[w].name}" for w in found[:RELATIVES_SHOWN])
                more = f" and {len(found) - RELATIVES_SHOWN:,} more" if len(found) > RELATIVES_SHOWN else ""
                parts.append(f"{label} {name}'s {shown}{more}")
        return "; ".join(parts) if parts else f"no ancestor, descendant or shared lemma in {name}"


def _share(row: dict) -> str:
    return f"{float(row['pass_share']):.0%}"
