"""Classes right by name: `imagenot audit classes` against the class dev set (issue 44 item 5).

`data/class_dev/packet.md` holds the 192 candidate classes that select found in the shared LAION
sample (`selection.min_captions: 3`, the rest the defaults of 29 Nov, before the instance rule: the
15 named individuals among them are left out while `selection.instance_synsets` is off), each with
up to 12 captions of the sample naming it; three or more readers judged apart whether at least half
of those captions use the word in the class's sense (`data/class_dev/guide.md`; `judged_<letter>.tsv`).
A class counts by the majority verdict. This script reports the readers' agreement (per pair of
readers and Cohen's kappa, Fleiss' kappa over all), then runs the audit on the packet's classes and
captions under a config (default: the defaults) and reports how many of the classes mostly used in
another sense it flags (target >= 2 in 3) and how many of the right ones (target <= 1 in 4).

The audit reads the packet's captions, not the whole sample: the captions the readers saw. The
corpus's form statistics (none of these) are counted over the whole sample, as select counts them.

    python benchmarks/quality_classes.py [--config FILE] [--out benchmarks/data/quality_classes.json]

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from itertools import combinations
from pathlib import Path

from quality_real import cohen_kappa, fleiss_kappa
from real_dev_judgments import CORPUS, sample_form_stats

from imagenot.pipeline.audit.classes import FLAG_BELOW, PASSES, class_row, is_flagged, pair_outcomes
from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.score.senses_command import matched_forms
from imagenot.wordnet.index import load_index

FOLDER = Path(__file__).parent / "data" / "class_dev"
TARGETS = {"other_flagged": 2 / 3, "right_flagged": 1 / 4}
CUTS = [round(0.05 * i, 2) for i in range(1, 20)]  # the pass-share cuts a fold chooses from
FOLDS, FOLD_SEED = 5, 0
RIGHT_TARGET = 1 / 4  # the most of the right classes a cut may flag (the target: at least 2 in 3 of the others)


def readings() -> dict[str, dict[str, str]]:
    """reader letter -> wnid -> verdict (`right` or `other`)."""
    out = {}
    for path in sorted(FOLDER.glob("judged_?.tsv")):
        with path.open(newline="") as file:
            out[path.stem[-1]] = {row["wnid"]: row["verdict"].strip() for row in csv.DictReader(file, delimiter="\t")}
    if len(out) < 3:
        raise SystemExit(f"fewer than three readers' files in {FOLDER}")
    return out


def agreement(read: dict[str, dict[str, str]], wnids: list[str]) -> dict:
    answers = {name: [verdicts[w] for w in wnids] for name, verdicts in read.items()}
    pairs = {
        f"{a}-{b}": {
            "agree": round(sum(x == y for x, y in zip(answers[a], answers[b])) / len(wnids), 3),
            "kappa": cohen_kappa(answers[a], answers[b]),
        }
        for a, b in combinations(sorted(answers), 2)
    }
    return {"readers": pairs, "fleiss_kappa": fleiss_kappa([list(item) for item in zip(*answers.values())])}


def majority(read: dict[str, dict[str, str]], wnid: str) -> str | None:
    votes = [verdicts[wnid] for verdicts in read.values()]
    best = max(set(votes), key=votes.count)
    return best if votes.count(best) * 2 > len(votes) else None


def flags_at(outcomes: dict[str, list[str]], cut: float) -> dict[str, bool]:
    """wnid -> whether the audit flags it at a pass-share cut."""
    return {w: is_flagged(found.count(PASSES), len(found), cut) for w, found in outcomes.items()}


def flag_figures(flags: dict[str, bool], verdict: dict[str, str | None]) -> dict:
    """Per majority verdict (other, right): classes, how many are flagged and their share."""
    figures = {}
    for kind in ("other", "right"):
        judged = [w for w in flags if verdict[w] == kind]
        flagged = sum(flags[w] for w in judged)
        figures[kind] = {"classes": len(judged), "flagged": flagged, "share": round(flagged / max(len(judged), 1), 3)}
    return figures


def chosen_cut(outcomes: dict[str, list[str]], verdict: dict[str, str | None]) -> float:
    """The cut of CUTS that flags the most other-sense classes while it flags at most RIGHT_TARGET of
    the right ones, the lowest on a tie: a flag puts a class before a reader, so the right ones it
    costs come first (where no cut keeps to that, the one that flags the most other-sense classes
    less right ones)."""

    shares = {cut: flag_figures(flags_at(outcomes, cut), verdict) for cut in CUTS}
    other, right = ({cut: f[kind]["share"] for cut, f in shares.items()} for kind in ("other", "right"))
    within = [cut for cut in CUTS if right[cut] <= RIGHT_TARGET]
    if within:
        return max(within, key=lambda cut: (other[cut], -cut))
    return max(CUTS, key=lambda cut: (other[cut] - right[cut], -cut))


def out_of_fold(outcomes: dict[str, list[str]], verdict: dict[str, str | None]) -> dict:
    """Each fold's classes flagged at the cut chosen on the other folds (5 folds by class, seeded)."""
    order = sorted(outcomes)
    random.Random(FOLD_SEED).shuffle(order)
    folds = [set(order[i::FOLDS]) for i in range(FOLDS)]
    flags, cuts = {}, []
    for held in folds:
        cut = chosen_cut({w: o for w, o in outcomes.items() if w not in held}, verdict)
        cuts.append(cut)
        flags |= flags_at({w: outcomes[w] for w in held}, cut)
    return {"cuts": cuts, "all_data_cut": chosen_cut(outcomes, verdict), **flag_figures(flags, verdict)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="the config whose decision the audit uses [default: the defaults]")
    parser.add_argument("--out", help="write the JSON here too")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the LAION sample (form statistics)")
    parser.add_argument("--limit", type=int, help="the packet's first N classes only (a quick look)")
    args = parser.parse_args()
    config, index = load_config(args.config), load_index()
    packet = json.loads((FOLDER / "packet.json").read_text(encoding="utf-8"))
    if not config.selection.instance_synsets:  # select no longer finds them: not candidates under the defaults
        packet = [c for c in packet if not index[c["wnid"]].instance_of]
    packet = packet[: args.limit]
    wnids = [c["wnid"] for c in packet]
    read = readings()
    verdict = {w: majority(read, w) for w in wnids}
    captions = [[cap["caption"] for cap in c["captions"]] for c in packet]
    flat = [text for texts in captions for text in texts]
    owners = [c["wnid"] for c, texts in zip(packet, captions) for _ in texts]
    decided = pair_outcomes(flat, matched_forms(flat, config), owners, config, sample_form_stats(args.corpus, config))
    outcomes: dict[str, list[str]] = {}
    for wnid, outcome in zip(owners, decided):
        outcomes.setdefault(wnid, []).append(outcome)
    flag_below = FLAG_BELOW  # the audit's default cut
    rows = {w: class_row(w, outcomes.get(w, []), index, flag_below) for w in wnids}
    report = {
        "classes": len(wnids),
        "captions": len(flat),
        "sense_method": config.scoring.sense_method,
        "agreement": agreement(read, wnids),
        "no_majority": sum(v is None for v in verdict.values()),
        "flag_below": flag_below,
        "flagged": flag_figures({w: bool(rows[w]["flagged"]) for w in wnids}, verdict),
        "out_of_fold": out_of_fold(outcomes, verdict),
        "by_cut": {str(cut): flag_figures(flags_at(outcomes, cut), verdict) for cut in CUTS},
        "targets": TARGETS,
        "missed": sorted(index[w].name for w in wnids if verdict[w] == "other" and not rows[w]["flagged"]),
        "wrongly_flagged": sorted(index[w].name for w in wnids if verdict[w] == "right" and rows[w]["flagged"]),
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
