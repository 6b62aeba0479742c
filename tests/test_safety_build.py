"""The safety rules as a builder meets them: `imagenot build` over a corpus whose captions each name
one offensive or identity synset alone, then `imagenot why` for each.

The same captions with the rules and the classifier off (`imagenot select` on a copy) make every
one of those synsets a candidate: nothing but the rules stops them. The expected reasons are those
of tests/data/offensive_synsets.tsv and tests/data/identity_person_synsets.tsv, read from WordNet.
"""

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke
from shared_runs import copy_run

from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.commands.why import why

select_command = cli_command("select")

CAPTIONS = 6  # per synset, above selection.min_captions
# caption text -> (synset, the step and reason that must remove it)
TARGETS = {
    "kike": ("kike.n.01", "offensive_synsets", "wordnet_usage_ethnic_slur"),
    "wop": ("wop.n.01", "offensive_synsets", "wordnet_usage_ethnic_slur"),
    "TalkaMania WWE Mick Foley": ("paddy.n.01", "offensive_synsets", "wordnet_usage_ethnic_slur"),
    "tree hugger": ("tree_hugger.n.01", "offensive_synsets", "wordnet_usage_disparagement"),
    "turd": ("crap.n.01", "offensive_synsets", "wordnet_usage_obscenity"),
    "hillbilly": ("hillbilly.n.01", "offensive_synsets", "gloss_offensive_term"),
    "pommy": ("pommy.n.01", "offensive_synsets", "gloss_offensive_term"),
    "Black person": ("black.n.05", "offensive_synsets", "wordnet_usage_ethnic_slur"),  # its lemma blackamoor
    "Frenchman": ("frenchman.n.01", "person_synsets", "identity_nationality"),
    "Muslim": ("muslim.n.01", "person_synsets", "identity_religion"),
    "gay man": ("gay_man.n.01", "person_synsets", "identity_sexual_orientation"),
    "schoolgirl": ("schoolgirl.n.01", "person_synsets", "identity_sex_gender"),
    "deaf person": ("deaf_person.n.01", "person_synsets", "identity_disability"),
    "diabetic": ("diabetic.n.01", "person_synsets", "identity_disability"),
    "blowjob": ("cock_sucking.n.01", "nsfw_synsets", "nsfw_text"),  # no WordNet mark: the classifier's
}
# "a gavel": the label model reads a bare "gavel 1950" as a caption whose picture may not show one
CLASSES = {"a gavel": "gavel.n.01", "trowel": "trowel.n.01", "birdcage": "birdcage.n.01"}
CONFIG = {
    "corpus": {"columns": dict.fromkeys(("width", "height", "similarity", "punsafe", "nsfw", "sample_id", "license"))},
    "selection": {"min_captions": 3, "allowed_nsfw_tags": None},
    "scoring": {"first_pass_captions": 5},
    "ranking": {"classes": 50, "top_n": 2, "min_captions": 1, "thresholds": {"packaged:all-MiniLM-L6-v2": -1.0}},
    "sampling": {"images_per_class": 2, "test_per_class": 1, "reserve_factor": 0.5, "shard_rows": 50},
}
# Every synset-level safety signal off, and the caption rules too ("Paddy" reads as a given name).
PERMISSIVE = {
    "offensive_synsets": False,
    "person_synsets": "keep",
    "nsfw_synset_threshold": None,
    "caption_rules": {"rules": []},
}


def _read_wordnet_list(name: str, key: str) -> dict[str, str]:
    with open(Path(__file__).parent / "data" / name) as f:
        rows = csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t")
        return {row["name"]: row[key] for row in rows}


def _write_config(path, run_tmp, selection=None):
    config = {**CONFIG, "corpus": {**CONFIG["corpus"], "paths": [str(run_tmp / "corpus" / "*.parquet")]}}
    config["selection"] = {**CONFIG["selection"], **(selection or {})}
    config["scoring"] = {**CONFIG["scoring"], "cache_dir": str(run_tmp / "embeddings")}
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A corpus of CAPTIONS captions per target and per class word (years told them apart), built
    with the default safety settings through the command line."""
    tmp = tmp_path_factory.mktemp("safety")
    (tmp / "corpus").mkdir()
    texts = [f"{text} {1950 + i}" for text in [*TARGETS, *CLASSES] for i in range(CAPTIONS)]
    pq.write_table(
        pa.table({"URL": [f"http://127.0.0.1:9/img/{i}.jpg" for i in range(len(texts))], "TEXT": texts}),
        tmp / "corpus" / "part-00000.parquet",
    )
    config = _write_config(tmp / "safety.yaml", tmp)
    result = invoke(build_command, ["--config", str(config), "--out", str(tmp / "run")])
    assert result.exit_code == 0, result.output
    return tmp


def _fates(run_dir) -> dict[str, dict[str, str]]:
    with open(run_dir / "select" / "synset_fates.tsv") as f:
        return {row["name"]: row for row in csv.DictReader(f, delimiter="\t")}


def test_the_expected_reasons_are_those_read_from_wordnet():
    offensive = _read_wordnet_list("offensive_synsets.tsv", "mark")
    identity = _read_wordnet_list("identity_person_synsets.tsv", "expected")
    for name, step, reason in TARGETS.values():
        if step == "offensive_synsets":
            usage = f"usage: {reason.removeprefix('wordnet_usage_').replace('_', ' ')}"
            assert offensive[name] in (usage, f"lemma {usage}") or (
                reason == "gloss_offensive_term" and offensive[name].startswith("gloss: ")
            ), name
        elif step == "person_synsets":
            assert identity[name] == reason, name


def test_no_such_synset_is_a_class_and_the_others_are(built):
    classes = {c["name"] for c in json.loads((built / "run" / "rank" / "classes.json").read_text())}
    assert classes == set(CLASSES.values())
    fates = _fates(built / "run")
    for name, step, reason in TARGETS.values():
        assert (fates[name]["step"], fates[name]["reason"]) == (step, reason), name


def test_why_names_the_rule_for_each(built):
    for name, step, reason in TARGETS.values():
        result = invoke(why, [name, "--run", str(built / "run")])
        assert result.exit_code == 0, result.output
        assert f"dropped at step '{step}' ({reason})" in result.output, result.output
    black = invoke(why, ["black.n.05", "--run", str(built / "run")]).output
    assert "WordNet usage of its lemma 'blackamoor': ethnic slur" in black
    muslim = invoke(why, ["muslim.n.01", "--run", str(built / "run")]).output
    assert "names people by religion: descends from " in muslim
    assert "WordNet usage: ethnic slur" in invoke(why, ["kike", "--run", str(built / "run")]).output
    assert "classifier score 0.9" in invoke(why, ["blowjob", "--run", str(built / "run")]).output
    unseen = invoke(why, ["nigger.n.01", "--run", str(built / "run")]).output  # no caption names it
    assert "not found" in unseen and "step 'offensive_synsets' would drop it (wordnet_usage_ethnic_slur)" in unseen
    armstrong = invoke(why, ["armstrong.n.02", "--run", str(built / "run")]).output  # Louis Armstrong, unnamed here
    assert "not found" in armstrong and "step 'instance_synsets' would drop it (instance_synset): a named" in armstrong


def test_the_card_counts_each_rule_and_the_report_lists_the_wnids(built):
    report = built / "run" / "report"
    card = (report / "card.md").read_text()
    section = card.split("## Safety: offensive and identity synsets")[1].split("\n## ")[0]
    lines = [line.split(" | ") for line in section.splitlines() if line.startswith("| ")]
    rows = {cells[0].strip("| "): cells for cells in lines}
    # kike, wop, paddy and black (its lemma blackamoor); in WordNet 12 synsets and black.n.05
    assert rows["WordNet usage: ethnic slur"][2] == "4" and rows["WordNet usage: ethnic slur"][3].strip(" |") == "13"
    assert rows["person synset naming disability or illness"][2] == "2"
    assert rows["text classifier (alt-profanity-check)"][2] == "1"
    assert rows["any other person synset"][1] == "off"
    assert "15 synsets in all" in section and "Person synsets were kept" not in card
    for name, *_ in TARGETS.values():
        assert name not in section  # wnids and names go to the file, not the card's prose
    with open(report / "removed_synsets.tsv") as f:
        removed = {row["name"]: row["reason"] for row in csv.DictReader(f, delimiter="\t")}
    assert removed == {name: reason for name, _, reason in TARGETS.values()}


def test_with_the_rules_off_every_one_would_be_a_candidate(built, tmp_path):
    run_dir = copy_run(built / "run", tmp_path / "run")
    config = _write_config(tmp_path / "permissive.yaml", built, PERMISSIVE)
    result = invoke(select_command, ["--run", str(run_dir), "--config", str(config)])
    assert result.exit_code == 0, result.output
    fates = _fates(run_dir)
    names = [name for name, *_ in TARGETS.values()]
    assert {name: fates[name]["step"] for name in names} == dict.fromkeys(names, "kept")
