"""Caption filters (row NSFW, step 6) and the funnel, on a small hand-built table of tagged rows."""

from __future__ import annotations

import functools
import math
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from cli_runner import invoke

from imagenot.filters.batches import FilterInputError
from imagenot.filters.funnel import STEPS, FunnelError, build_funnel
from imagenot.filters.min_captions import synset_caption_counts
from imagenot.filters.select import select_synsets
from imagenot.filters.single_synset import CandidateLookup, class_caption_counts, keep_single_synset_rows
from imagenot.filters.unsafe_rows import drop_unsafe_rows
from imagenot.labels.instances import instance_removals
from imagenot.pipeline.commands.why import why
from imagenot.pipeline.config.reference_lists import reference_wnids
from imagenot.pipeline.select.funnel_files import read_synset_fates, write_funnel

# (synset names, LAION NSFW tag, punsafe), one tagged row each; row_id "part-00000:<position>"
ROWS = [
    (["gavel.n.01"], "UNLIKELY", 0.1),  # 0 kept: gavel
    (["gavel.n.01"], "UNLIKELY", 0.2),  # 1 kept: gavel
    (["puppy.n.01", "dog.n.01"], "UNLIKELY", 0.1),  # 2 kept: puppy (dog is not a leaf)
    (["puppy.n.01"], "UNLIKELY", 0.0),  # 3 kept: puppy
    (["dog.n.01"], "UNLIKELY", 0.1),  # 4 its only synset falls at leaves
    (["airliner.n.01"], "UNLIKELY", 0.1),  # 5 ImageNet-1k class
    (["gavel.n.01", "puppy.n.01"], "UNLIKELY", 0.1),  # 6 two candidates
    (["cat.n.01"], "UNLIKELY", 0.1),  # 7 cat has one usable caption
    (["cunt.n.01"], "UNLIKELY", 0.1),  # 8 NSFW synset
    (["cunt.n.01"], "UNLIKELY", 0.1),  # 9 NSFW synset
    (["gavel.n.01"], "NSFW", 0.1),  # 10 row NSFW tag
    (["gavel.n.01"], None, 0.1),  # 11 row tag missing
    (["puppy.n.01"], "UNLIKELY", 0.9),  # 12 row punsafe high
    (["cat.n.01"], "UNLIKELY", None),  # 13 row punsafe missing
    (["seagrass.n.01", "gavel.n.01"], "UNLIKELY", 0.1),  # 14 two candidates
    (["seagrass.n.01", "puppy.n.01"], "UNLIKELY", 0.1),  # 15 two candidates
]
ROW_CHECKS = dict(allowed_tags={"UNLIKELY"}, max_punsafe=0.5)


def tagged_batch(index, rows, start: int = 0) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "row_id": [f"part-00000:{start + i}" for i in range(len(rows))],
            "wnids": [sorted(index.by_name(n).wnid for n in names) for names, _, _ in rows],
            "caption": [" and ".join(names) for names, _, _ in rows],
            "punsafe": pa.array([p for _, _, p in rows], pa.float64()),
            "nsfw": pa.array([t for _, t, _ in rows], pa.string()),
        }
    )


def names_of(index, wnids):
    return [index[w].name for w in wnids]


def test_row_nsfw_drops_each_row_once_under_its_first_failing_check(index):
    batch = tagged_batch(index, ROWS)
    kept, drops = drop_unsafe_rows(batch, **ROW_CHECKS)
    assert drops == {
        ("row_nsfw", "nsfw_tag"): 1,
        ("row_nsfw", "nsfw_tag_missing"): 1,
        ("row_nsfw", "punsafe_high"): 1,
        ("row_nsfw", "punsafe_missing"): 1,
    }
    assert kept.num_rows == len(ROWS) - 4
    assert not {"part-00000:10", "part-00000:11", "part-00000:12", "part-00000:13"} & set(
        kept.column("row_id").to_pylist()
    )


def test_row_nsfw_options(index):
    batch = tagged_batch(index, ROWS)
    kept, drops = drop_unsafe_rows(batch, **ROW_CHECKS, keep_unrated=True)
    assert drops == {("row_nsfw", "nsfw_tag"): 1, ("row_nsfw", "punsafe_high"): 1}
    every_tag = {"UNLIKELY", "UNSURE", "NSFW"}
    kept, drops = drop_unsafe_rows(batch, allowed_tags=every_tag, max_punsafe=None)
    assert drops == {("row_nsfw", "nsfw_tag_missing"): 1}
    kept, drops = drop_unsafe_rows(batch, allowed_tags=None, max_punsafe=None)
    assert (kept.num_rows, drops) == (len(ROWS), {})
    nan_score = batch.set_column(3, "punsafe", pa.array([math.nan] * len(ROWS)))
    _, drops = drop_unsafe_rows(nan_score, allowed_tags=None, max_punsafe=0.5)
    assert drops == {("row_nsfw", "punsafe_missing"): len(ROWS)}


def test_row_nsfw_check_without_its_column_is_an_error(index):
    batch = tagged_batch(index, ROWS).drop_columns(["punsafe"])
    with pytest.raises(FilterInputError, match="no column 'punsafe'.*disable it with null"):
        drop_unsafe_rows(batch, **ROW_CHECKS)
    wrong = tagged_batch(index, ROWS).set_column(4, "nsfw", pa.array([1] * len(ROWS)))
    with pytest.raises(FilterInputError, match="'nsfw' has type int64, expected string"):
        drop_unsafe_rows(wrong, **ROW_CHECKS)


def test_synset_caption_counts_count_each_row_once_per_synset(index):
    counts = synset_caption_counts(tagged_batch(index, ROWS[:3]))
    gavel, puppy, dog = (index.by_name(n).wnid for n in ("gavel.n.01", "puppy.n.01", "dog.n.01"))
    assert counts == dict(sorted({gavel: 2, puppy: 1, dog: 1}.items()))


def test_bad_wnids_name_the_row(index):
    batch = tagged_batch(index, ROWS[:2]).set_column(1, "wnids", pa.array([["n03430313"], []], pa.list_(pa.string())))
    with pytest.raises(FilterInputError, match="row 'part-00000:1': 'wnids' is null or empty"):
        synset_caption_counts(batch)


@pytest.fixture(scope="module")
def run(index):
    """The filters wired as the pipeline will: two passes over two batches, counts summed."""
    batches = [tagged_batch(index, ROWS[:7]), tagged_batch(index, ROWS[7:], start=7)]
    tagged, usable = Counter(), Counter()
    for batch in batches:  # pass 1: count tags, and usable tags after the row filter
        tagged.update(synset_caption_counts(batch))
        usable.update(synset_caption_counts(drop_unsafe_rows(batch, **ROW_CHECKS)[0]))
    reference = reference_wnids("imagenet1k", index)
    instances = functools.partial(instance_removals, index=index)  # the select stage's default
    selection = select_synsets(tagged, usable, index, reference=reference, min_count=2, instances=instances)
    lookup = CandidateLookup(selection)
    drops, kept_counts, kept_batches = Counter(), Counter(), []
    for batch in batches:  # pass 2: row filter, then step 6
        safe, row_drops = drop_unsafe_rows(batch, **ROW_CHECKS)
        kept, single_drops = keep_single_synset_rows(safe, lookup)
        drops.update(row_drops)
        drops.update(single_drops)
        kept_counts.update(class_caption_counts(kept))
        kept_batches.append(kept)
    funnel = build_funnel(selection, sum(b.num_rows for b in batches), drops, kept_counts, index)
    return selection, lookup, kept_batches, drops, kept_counts, funnel


def test_single_synset_rows_get_their_one_candidate(index, run):
    _, _, kept_batches, drops, _, _ = run
    kept = pa.Table.from_batches(kept_batches)
    assert kept.column("row_id").to_pylist() == [f"part-00000:{i}" for i in range(4)]
    classes = names_of(index, kept.column("wnid").to_pylist())
    assert classes == ["gavel.n.01", "gavel.n.01", "puppy.n.01", "puppy.n.01"]
    assert drops[("single_synset", "several_candidates")] == 3
    assert drops[("leaves", "no_candidate_left")] == 1


def test_single_synset_on_a_sliced_batch_and_unknown_wnids(index, run):
    _, lookup, _, _, _, _ = run
    batch = tagged_batch(index, ROWS).slice(2, 3)  # rows 2, 3, 4
    kept, drops = keep_single_synset_rows(batch, lookup)
    assert kept.column("row_id").to_pylist() == ["part-00000:2", "part-00000:3"]
    assert drops == {("leaves", "no_candidate_left"): 1}
    stranger = tagged_batch(index, [(["hammer.n.02"], "UNLIKELY", 0.1)], start=99)
    with pytest.raises(FilterInputError, match="row 'part-00000:99': wnid 'n03481172' is not in"):
        keep_single_synset_rows(stranger, lookup)


def test_funnel_accounting(index, run):
    selection, _, _, _, kept_counts, funnel = run
    table = {s.step: (s.synsets_left, s.captions_left) for s in funnel.steps}
    assert list(table) == list(STEPS)
    assert table == {
        "found": (7, 16),
        "row_nsfw": (7, 12),
        "offensive_synsets": (7, 12),
        "person_synsets": (7, 12),
        "instance_synsets": (7, 12),
        "imagenet_overlap": (6, 11),
        "min_captions": (5, 10),
        "leaves": (4, 9),
        "nsfw_synsets": (3, 7),
        "picturable": (3, 7),
        "single_synset": (2, 4),
        "caption_rules": (2, 4),
    }
    dropped_synsets = sum(sum(s.synsets_dropped.values()) for s in funnel.steps)
    dropped_captions = sum(sum(s.captions_dropped.values()) for s in funnel.steps)
    assert dropped_synsets == len(funnel.removals)
    assert len(selection.found) == len(funnel.classes) + dropped_synsets
    assert 16 == sum(kept_counts.values()) + dropped_captions
    assert funnel.steps[1].captions_dropped == {
        "nsfw_tag": 1,
        "nsfw_tag_missing": 1,
        "punsafe_high": 1,
        "punsafe_missing": 1,
    }
    classes = {name: n for name, n in funnel.classes.values()}
    assert classes == {"gavel.n.01": 2, "puppy.n.01": 2}


def test_explain_answers_why_a_synset_is_not_a_class(index, run):
    funnel = run[-1]
    names = ("cat.n.01", "dog.n.01", "seagrass.n.01", "gavel.n.01")
    why = {n: funnel.explain(index.by_name(n).wnid) for n in names}
    assert why["cat.n.01"] == (
        "n02121620 cat.n.01: dropped at step 'min_captions' (too_few_captions): "
        "1 usable captions (2 tagged) < minimum 2"
    )
    assert "ancestor of candidate n01322604 puppy.n.01" in why["dog.n.01"]
    assert "'single_synset' (no_single_synset_caption)" in why["seagrass.n.01"]
    assert (
        why["gavel.n.01"]
        == "n03430313 gavel.n.01: passed every filter, a candidate for step 'rank' (2 single-synset captions)"
    )
    assert funnel.explain("n03481172") == "n03481172: not found, no tagged caption mentions it"


def test_funnel_files_are_deterministic_and_readable(index, run, tmp_path):
    funnel = run[-1]
    first = {Path(p).name: Path(p).read_bytes() for p in write_funnel(funnel, str(tmp_path / "a"))}
    second = {Path(p).name: Path(p).read_bytes() for p in write_funnel(funnel, str(tmp_path / "b"))}
    assert first == second and set(first) == {"funnel.tsv", "funnel.json", "synset_fates.tsv"}
    assert first["funnel.tsv"].decode().splitlines()[1:3] == [
        "found\t7\t16\t\t",
        "row_nsfw\t7\t12\t\tnsfw_tag=1,nsfw_tag_missing=1,punsafe_high=1,punsafe_missing=1",
    ]
    fates = read_synset_fates(str(tmp_path / "a" / "synset_fates.tsv"))
    assert len(fates) == 7
    assert fates[index.by_name("airliner.n.01").wnid]["reason"] == "reference_synset"
    assert fates[index.by_name("gavel.n.01").wnid]["step"] == "kept"
    assert not list((tmp_path / "a").glob(".*"))  # no staging files left


def test_funnel_rejects_counts_that_do_not_add_up(index, run):
    selection, _, _, drops, kept_counts, _ = run
    with pytest.raises(FunnelError, match="17 tagged rows minus 12 dropped leaves 5, but 4 rows"):
        build_funnel(selection, 17, drops, kept_counts, index)
    with pytest.raises(FunnelError, match="unknown steps"):
        build_funnel(selection, 16, {**drops, ("typo", "x"): 1}, kept_counts, index)


def test_why_command_reads_the_run_folder(index, run, tmp_path):
    write_funnel(run[-1], str(tmp_path / "select"))
    result = invoke(why, ["cat.n.01", "--run", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("n02121620 cat.n.01: dropped at step 'min_captions'")
    result = invoke(why, ["n03430313", "--run", str(tmp_path)])
    assert (
        result.output.splitlines()[0]
        == "n03430313 gavel.n.01: passed every filter, a candidate for step 'rank' (2 single-synset captions)"
    )
    result = invoke(why, ["hammer.n.02", "--run", str(tmp_path)])
    assert result.output.splitlines()[0] == "n03481172: not found, no tagged caption mentions it"
    result = invoke(why, ["hammer.n.99", "--run", str(tmp_path)])
    assert (
        result.exit_code == 2
        and "hammer.n.99 is not a WordNet 3.0 noun synset; did you mean hammer.n.01" in result.output
    )
    result = invoke(why, ["cat.n.01", "--run", str(tmp_path / "missing")])
    assert result.exit_code == 1 and f"run directory {tmp_path / 'missing'} does not exist" in result.output
