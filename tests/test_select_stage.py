"""The select stage over a tagged synthetic corpus, on the real Beam runner."""

import json

import pyarrow.parquet as pq
import pytest
from cli_runner import invoke

from imagenot.pipeline.commands.why import why
from imagenot.pipeline.config.schema import Config, Corpus, Runner, Selection
from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.frame.registry import declared, run_in_folder
from imagenot.pipeline.run.layout import TAG_TALLY_FILE
from imagenot.pipeline.select.stage import USABLE_FILE, choose_synsets


@pytest.fixture(scope="module")
def tagged_run(tmp_path_factory):
    corpus = tmp_path_factory.mktemp("corpus")
    synth_corpus(corpus, 8_000, 11, "http://127.0.0.1:9/img", 4_000)
    run_dir = tmp_path_factory.mktemp("run")
    run_in_folder(declared("tag"), Config(corpus=Corpus(paths=[str(corpus / "part-*.parquet")])), str(run_dir))
    return run_dir


def _config(workers=1, **selection):
    return Config(selection=Selection(min_captions=5, **selection), runner=Runner(workers=workers))


@pytest.fixture(scope="module")
def selected(tagged_run):
    return run_in_folder(declared("select"), _config(), str(tagged_run))


def test_selected_rows_carry_one_candidate_class(tagged_run, selected):
    table = pq.read_table(tagged_run / "select" / "selected")
    assert "wnids" not in table.column_names
    assert table.num_rows == selected.steps[-1].captions_left > 0
    assert set(table.column("wnid").to_pylist()) == set(selected.classes)
    counts = {w: n for w, (_, n) in selected.classes.items()}
    assert sum(counts.values()) == table.num_rows
    assert set(table.column("nsfw").to_pylist()) == {"UNLIKELY"}


def test_funnel_accounts_for_every_synset_and_caption(tagged_run, selected):
    tagged = pq.read_table(tagged_run / "tag" / "tagged", columns=["row_id"]).num_rows
    first, last = selected.steps[0], selected.steps[-1]
    assert first.captions_left == tagged
    dropped_captions = sum(sum(step.captions_dropped.values()) for step in selected.steps)
    assert tagged - dropped_captions == last.captions_left
    dropped_synsets = sum(sum(step.synsets_dropped.values()) for step in selected.steps)
    assert first.synsets_left - dropped_synsets == len(selected.classes)
    fates = (tagged_run / "select" / "synset_fates.tsv").read_text().splitlines()
    assert len(fates) - 1 == first.synsets_left


def test_two_workers_and_a_rerun_give_the_same_files(tagged_run, selected, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(tagged_run / "tag", copy / "tag")
    run_in_folder(declared("select"), _config(workers=2), str(copy))
    for name in ("funnel.tsv", "synset_fates.tsv"):
        assert (copy / "select" / name).read_bytes() == (tagged_run / "select" / name).read_bytes()
    for path in (tagged_run / "select" / "selected").iterdir():
        assert (copy / "select" / "selected" / path.name).read_bytes() == path.read_bytes()


def test_why_answers_from_the_run(tagged_run, selected, index):
    some_class = next(iter(selected.classes))
    result = invoke(why, [some_class, "--run", str(tagged_run)])
    assert result.exit_code == 0, result.output
    assert "a candidate for step 'rank'" in result.output
    dropped = next(r for r in selected.removals.values() if r.step == "min_captions")
    result = invoke(why, [index[dropped.wnid].name, "--run", str(tagged_run)])
    assert "dropped at step 'min_captions'" in result.output


def test_the_summary_lists_the_funnel_in_step_order(selected, tagged_run):
    from imagenot.filters.funnel import STEPS

    figures = json.loads((tagged_run / "select" / "figures.json").read_text())
    assert [step["step"] for step in figures["funnel"]] == list(STEPS)


def test_why_names_the_instance_rule_for_a_named_individual_that_would_be_a_candidate(tagged_run, selected, index):
    tagged = json.loads((tagged_run / "tag" / TAG_TALLY_FILE).read_text())["synset_captions"]
    usable = json.loads((tagged_run / "select" / USABLE_FILE).read_text())["usable"]
    kept = choose_synsets(tagged, usable, _config(instance_synsets=True).selection)
    individuals = [w for w in kept.candidates if index[w].instance_of]  # selection.instance_synsets: true keeps them
    assert individuals and not set(individuals) & set(selected.classes)
    for wnid in individuals[:2]:
        result = invoke(why, [wnid, "--run", str(tagged_run)])
        assert result.exit_code == 0, result.output
        assert (
            f"{wnid} {index[wnid].name}: dropped at step 'instance_synsets' (instance_synset): a named "
            in result.output
        )
        assert f"an instance of {index[wnid].instance_of[0]} " in result.output
