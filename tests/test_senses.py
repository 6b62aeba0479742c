"""Sense contrast: the caption rule, the sample's other_sense drop, the priority path's agreement
with it, and `imagenot senses` run as a user runs it (real MiniLM, real WordNet)."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import invoke

from imagenot.labels.caption_rules import SENSE_OFF, PairScores, SenseDecision, caption_decision
from imagenot.pipeline.commands.senses import senses_command
from imagenot.pipeline.config.schema import Sampling
from imagenot.pipeline.rank.priority import list_settled
from imagenot.pipeline.sample.classes import sample_class
from imagenot.wordnet.senses import word_senses

CRANE_MACHINE, CRANE_BIRD = "n03126707", "n02000954"  # crane.n.04, crane.n.05


def test_rule_names_the_reason_and_other_sense_wins_over_threshold():
    similarity, margin = np.array([0.6, 0.2, 0.6, 0.2]), np.array([0.1, 0.1, -0.1, -0.1])
    passes, reason = caption_decision(PairScores(similarity, margin), 0.5, SenseDecision(0.0))
    assert passes.tolist() == [True, False, False, False]
    assert reason.tolist() == ["", "below_threshold", "other_sense", "other_sense"]
    assert caption_decision(PairScores(np.array([0.1]), np.array([-1.0])), None, SENSE_OFF)[0].tolist() == [True]


def test_a_word_that_fits_none_of_its_senses_is_none_of_these_fit_before_other_sense():
    similarity, margin, fit = np.array([0.6, 0.6, 0.6, 0.6]), np.array([0.1, -0.1, 0.1, 0.1]), np.array([3, 3, 1, 1])
    passes, reason = caption_decision(
        PairScores(similarity, margin, fit), None, SenseDecision(0.0, 2.0), [None, None, None, "case"]
    )
    assert reason.tolist() == ["", "other_sense", "none_of_these_fit", "case"] and passes.tolist()[0]
    with pytest.raises(ValueError, match="needs each caption's fit"):
        caption_decision(PairScores(similarity, margin), None, SenseDecision(0.0, 2.0))


def _class_rows(n: int = 40) -> pa.Table:
    margin = np.where(np.arange(n) % 4 == 0, -0.05, 0.2).astype(np.float32)
    return pa.table(
        {
            "row_id": [f"r{i:03d}" for i in range(n)],
            "url": [f"http://127.0.0.1:9/{i}" for i in range(n)],
            "caption": [f"caption {i}" for i in range(n)],
            "wnid": [CRANE_BIRD] * n,
            "gloss_similarity": np.linspace(0.2, 0.8, n).astype(np.float32),
            "other_sense": [CRANE_MACHINE] * n,
            "sense_margin": margin,
            "sense_fit": np.full(n, 0.5, np.float32),
        }
    )


def test_sample_drops_captions_another_sense_wins_and_counts_them_by_winner():
    rows = _class_rows()
    sampling = Sampling(images_per_class=5, test_per_class=1, reserve_factor=0.2)
    table, counts = sample_class(rows, sampling, sense=SenseDecision(0.0))
    assert counts["other_sense"] == 10 and counts["other_sense_to"] == {CRANE_MACHINE: 10}
    assert counts["candidates"] == 40
    lost = {f"r{i:03d}" for i in range(0, 40, 4)}
    assert not lost & set(table.column("row_id").to_pylist())
    assert not {"sense_margin", "sense_fit"} & set(table.column_names)  # the dataset's schema stays as it was
    off, off_counts = sample_class(rows, sampling)
    assert off_counts["other_sense"] == 0 and lost & set(off.column("row_id").to_pylist())


def test_priority_settling_leaves_out_the_same_captions_as_the_sample():
    rows = _class_rows(12)  # 3 of them lost to the machine sense
    sampling = Sampling(images_per_class=10, test_per_class=1, reserve_factor=0.0, strategy="threshold", threshold=0.0)
    assert not list_settled(rows, sampling, None, SenseDecision(0.0))  # 9 left of the 10 needed: the list may grow
    assert list_settled(rows, sampling, None, SENSE_OFF)
    assert sample_class(rows, sampling, sense=SenseDecision(0.0))[1]["listed"] == 9


def test_sample_drops_captions_whose_word_fits_no_sense_and_counts_them_apart():
    rows = _class_rows()
    rows = rows.set_column(
        rows.column_names.index("sense_fit"), "sense_fit", pa.array(np.arange(40) / 40, pa.float32())
    )
    sampling = Sampling(images_per_class=5, test_per_class=1, reserve_factor=0.2)
    table, counts = sample_class(rows, sampling, sense=SenseDecision(0.0, 0.25))  # the first 10 fit no sense
    assert counts["none_of_these_fit"] == 10 and counts["other_sense"] == 7  # r000, r004, r008 fit none first
    assert counts["other_sense_to"] == {CRANE_MACHINE: 7} and not {f"r{i:03d}" for i in range(10)} & set(
        table.column("row_id").to_pylist()
    )
    kept = sum(counts[k] for k in ("below_threshold", "duplicate_url", "duplicate_caption", "listed", "not_listed"))
    assert counts["candidates"] == counts["none_of_these_fit"] + counts["other_sense"] + kept


@pytest.fixture(scope="module")
def scored_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("senses")
    captions = pa.table(
        {
            "caption": [
                "Liebherr mobile crane lifting steel beams at the port",
                "sandhill cranes in flight over the marsh",
                "hot dog with mustard and onions on a paper plate",
                "Apple iPhone 8 Plus case 64GB",
                "Harry Potter and the Goblet of Fire (2005) DVD",
                "Parker Sonnet fountain pen, fine nib, black lacquer",
                "Parker Sonnet fountain pen, fine nib, black lacquer",
                "",
                "a crane",
                "Mens leather shoes size 10",
                "Summer adventures with the kids",
                "a heron and a crane by the crane on the dock",
                "a heron and a crane by the crane on the dock",
                "a crane",
            ],
            "lemma": [
                *("crane", "crane", "hot_dog", "8", "potter", "fountain pen", "Fountain_Pen", "crane", "bed"),
                *("Mens", "adventures", "crane", "cranes", "quickly"),
            ],
            "start": [None] * 11 + [14, 27, None],
            "end": [None] * 11 + [19, 32, None],
            "id": list(range(1, 15)),
        }
    )
    pq.write_table(captions, folder / "in.parquet")
    result = invoke(senses_command, ["--input", str(folder / "in.parquet"), "--out", str(folder / "out.parquet")])
    assert result.exit_code == 0, result.output
    return folder, pq.read_table(folder / "out.parquet")


def test_senses_file_predicts_each_caption_s_sense(scored_file):
    _, table = scored_file
    assert table.column("id").to_pylist() == list(range(1, 15))  # other columns carried through
    assert table.column("predicted").to_pylist()[:2] == ["crane.n.04", "crane.n.05"]
    assert table.column("predicted")[2].as_py().startswith(("hotdog", "frank", "hot_dog"))
    for row in table.to_pylist()[:3]:
        scores = [s["score"] for s in row["senses"]]
        assert scores == sorted(scores, reverse=True) and row["senses"][0]["synset"] == row["predicted"]
        assert row["margin"] == pytest.approx(scores[0] - scores[1], abs=1e-5)
        assert row["passes"] == (row["margin"] >= 0)  # the default rule: margin 0, no caption threshold
        assert row["reason"] == (None if row["passes"] else "other_sense")
    assert len(table.column("senses")[0].as_py()) == 5  # every noun sense of crane


def test_senses_file_drops_what_the_build_s_caption_rules_drop(scored_file):
    """The select stage's caption rules decide here as in a build: "8" in a model name is no
    number, "Potter" beside "Harry" is a name; `reason` names the rule."""
    _, table = scored_file
    rows = table.to_pylist()[3:5]
    assert [(row["passes"], row["reason"]) for row in rows] == [(False, "number"), (False, "name")]
    assert rows[1]["sense_margin"] == float("inf")  # potter has one noun sense: nothing but the rule drops it


def test_senses_file_reads_a_lemma_with_spaces_or_underscores(scored_file):
    _, table = scored_file
    spaced, underscored = table.to_pylist()[5:7]
    assert spaced["predicted"] == underscored["predicted"] == "fountain_pen.n.01"
    assert spaced["senses"] == underscored["senses"] and len(spaced["senses"]) == 1


def test_a_caption_without_the_word_never_passes(scored_file):
    """Issue 35: an empty caption with lemma crane, and "a crane" with lemma bed, passed; a row that
    cannot be read is a reason of its own, not an error that stops the file."""
    _, table = scored_file
    rows = table.to_pylist()
    assert [(r["passes"], r["reason"], r["predicted"]) for r in (rows[7], rows[8], rows[13])] == [
        (False, "word_not_in_caption", None),
        (False, "word_not_in_caption", None),
        (False, "not_a_noun", None),
    ]


def test_senses_file_reads_any_form_the_tagger_matches_and_the_span_given(scored_file):
    _, table = scored_file
    rows = table.to_pylist()
    senses = word_senses()
    for row, lemma, span in ((rows[9], "men", (0, 4)), (rows[10], "adventure", (7, 17))):
        names = {senses.index[w].name for w in senses.senses(lemma)}
        wordnet = {s["synset"] for s in row["senses"] if not s["synset"].startswith("web:")}  # and its web senses
        assert wordnet == names and (row["start"], row["end"]) == span
    assert (rows[0]["start"], rows[0]["end"]) == (16, 21)  # where the word stands, found as the tagger matches
    assert [(r["start"], r["end"]) for r in rows[11:13]] == [(14, 19), (27, 32)]
    assert None not in [r["predicted"] for r in rows[11:13]]
    assert all(0 <= r["none_score"] <= 1 for r in rows[:7])
    assert all(-1 <= r["sense_fit"] <= 1 for r in rows[:7])


def test_senses_file_says_which_rows_it_could_not_read(scored_file, tmp_path):
    """Issue 35: an integer caption was called "null"."""
    pq.write_table(pa.table({"caption": [7, 8], "lemma": ["crane", "crane"]}), tmp_path / "ints.parquet")
    result = invoke(senses_command, ["--input", str(tmp_path / "ints.parquet"), "--out", str(tmp_path / "o.parquet")])
    assert result.exit_code == 0, result.output
    assert "0 pass; not read: 2 caption_not_text (first: row 0: caption 7 (int))" in result.output
    assert pq.read_table(tmp_path / "o.parquet").column("reason").to_pylist() == ["caption_not_text"] * 2


@pytest.mark.parametrize("content, message", [(None, "no rows"), (b"caption,lemma\na crane,crane\n", "not a parquet")])
def test_senses_input_that_is_no_table_is_one_line(tmp_path, content, message):
    """Issue 35: a 0-row parquet (ValueError) and a file that is not parquet (ArrowInvalid) were tracebacks."""
    path = tmp_path / "in.parquet"
    if content is None:
        pq.write_table(pa.table({"caption": pa.array([], pa.string()), "lemma": pa.array([], pa.string())}), path)
    else:
        path.write_bytes(content)
    result = invoke(senses_command, ["--input", str(path), "--out", str(tmp_path / "out.parquet")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1].endswith(f"{path}: {message}") or message in result.output


def test_senses_caption_says_what_a_build_would_do():
    result = invoke(senses_command, ["crane lifting steel beams at the port", "--lemma", "cranes"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()[1:] if line.strip()}
    assert lines["crane.n.04"].endswith("kept")
    assert "other_sense: goes to crane.n.04 (lifting device)" in lines["crane.n.05"]
    result = invoke(senses_command, ["Harry Potter and the Goblet of Fire (2005) DVD", "--lemma", "potter"])
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if "potter.n.01" in line][0].endswith("caption rule name")


def test_senses_caption_drops_a_word_that_fits_no_sense_above_the_fit_floor(tmp_path):
    config = tmp_path / "floor.yaml"
    config.write_text("scoring:\n  none_of_these_fit:\n    sentence: 0.99\n", encoding="utf-8")
    result = invoke(
        senses_command, ["crane lifting steel beams at the port", "--lemma", "cranes", "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    assert "fit floor 0.99" in result.output
    senses = [line for line in result.output.splitlines() if line.startswith("  crane.n.")]
    assert senses and all("none_of_these_fit: no sense fits the word here" in line for line in senses)


def test_decision_names_the_caption_rule_before_sense_and_threshold():
    similarity, margin = np.array([0.6, 0.2, 0.6]), np.array([0.1, -0.1, 0.1])
    passes, reason = caption_decision(PairScores(similarity, margin), 0.5, SenseDecision(0.0), [None, "case", None])
    assert passes.tolist() == [True, False, True] and reason.tolist() == ["", "case", ""]


def test_senses_caption_reads_the_occurrence_at_the_span_and_refuses_a_word_not_there():
    caption = "a heron and a crane by the crane on the dock"
    first = invoke(senses_command, [caption, "--span", "14:19"])
    second = invoke(senses_command, [caption, "--span", "27:32"])
    assert first.exit_code == second.exit_code == 0, first.output + second.output
    assert "crane at 14:19 ('crane')" in first.output and "crane at 27:32 ('crane')" in second.output
    absent = invoke(senses_command, ["a crane", "--lemma", "bed"])
    assert absent.exit_code == 0 and "bed: word not in caption: a build never keeps" in absent.output


def test_why_refuses_the_empty_word_plainly(tmp_path):
    """Issue 35: `why ""` said the empty word "is a verb and an adjective and an adverb"."""
    from imagenot.pipeline.commands.why import why

    result = invoke(why, ["", "--run", str(tmp_path)])
    assert result.exit_code == 2 and "the word is empty" in result.output and "verb" not in result.output
