"""imagenot audit classes: one row per listed class, the share of the corpus's captions naming it
that the build's per-pair decision keeps in its sense, with its interval, and a flag when the share
is under `--flag-below`."""

import csv

import pyarrow as pa
import pyarrow.parquet as pq
from cli_runner import invoke

from imagenot.pipeline.audit.classes import COLUMNS, classes_command

CAPTIONS = [
    "Led Zeppelin live at Earls Court",
    "Led Zeppelin IV vinyl",
    "a red LED on a circuit board",
    "a tower crane lifting steel beams at the port",
    "construction crane on a building site",
    "a tall crane loads containers onto the ship",
    "Louis Armstrong plays the trumpet, 1958",
    "no listed word here",
]


LISTED = ["light-emitting_diode.n.01", "gavel.n.01", "crane.n.04", "armstrong.n.02"]


def _audit(tmp_path, index, *options: str) -> tuple[list[dict], str]:
    """The audit's rows for LISTED over CAPTIONS, and what it printed."""
    pq.write_table(pa.table({"URL": ["https://x/"] * len(CAPTIONS), "TEXT": CAPTIONS}), tmp_path / "c.parquet")
    (tmp_path / "list.txt").write_text("".join(f"{index.by_name(n).wnid}\n" for n in LISTED))
    out = tmp_path / "audit.tsv"
    args = ["--list", str(tmp_path / "list.txt"), "--corpus", str(tmp_path / "*.parquet"), "--out", str(out)]
    result = invoke(classes_command, [*args, *options])
    assert result.exit_code == 0, result.output
    with out.open() as file:
        return list(csv.DictReader(file, delimiter="\t")), result.output


def test_every_listed_class_gets_a_row(tmp_path, index):
    rows, output = _audit(tmp_path, index)
    assert tuple(rows[0]) == COLUMNS and [r["name"] for r in rows] == LISTED
    led, gavel, crane, armstrong = rows
    # "Led" matches LED only by case folding: the case rule drops both; the circuit board's keeps its.
    # One in three pass, over the default cut (0.15): not flagged, though under the build's class floor
    assert (led["captions"], led["pass_share"], led["flagged"]) == ("3", "0.3333", "0")
    assert (led["top_drop"], led["top_drop_share"]) == ("case", "0.6667")
    assert float(led["low"]) < 1 / 3 < float(led["high"])
    assert (gavel["captions"], gavel["pass_share"], gavel["low"], gavel["flagged"]) == ("0", "", "", "0")
    # the crane that lifts: every caption uses it in its sense, so the class stays unflagged
    assert (crane["captions"], crane["pass_share"], crane["flagged"], crane["top_drop"]) == ("3", "1.0", "0", "")
    assert [r["instance"] for r in rows] == ["0", "0", "0", "1"]  # Louis Armstrong: a named individual
    assert armstrong["captions"] == "1"
    assert armstrong["flagged"] == "1"  # its one caption does not pass
    assert "4 classes, 3 named by 7 captions" in output and "1 flagged (pass share under 0.15: --flag-below)" in output


def test_the_flag_cut_is_an_option(tmp_path, index):
    rows, output = _audit(tmp_path, index, "--flag-below", "0.5")
    assert [r["flagged"] for r in rows[:3]] == ["1", "0", "0"]  # LED's one in three is under the higher cut
    assert "flagged (pass share under 0.5: --flag-below)" in output
    assert "1 WordNet instance synset, named individuals (select drops them: selection.instance_synsets)" in output


def test_a_word_that_fits_none_of_its_senses_lowers_the_pass_share(tmp_path, index):
    """The fit floor of the sense method in use (`scoring.none_of_these_fit`) drops the pairs the
    build's sense decision drops: here every one (a floor no caption's fit reaches)."""
    (tmp_path / "floor.yaml").write_text("scoring:\n  none_of_these_fit:\n    sentence: 0.99\n")
    rows, _ = _audit(tmp_path, index, "--config", str(tmp_path / "floor.yaml"))
    led, _, crane, _ = rows
    assert (led["captions"], led["pass_share"]) == ("3", "0.0")
    assert (crane["captions"], crane["pass_share"], crane["flagged"]) == ("3", "0.0", "1")
    assert (crane["top_drop"], crane["top_drop_share"]) == ("none_of_these_fit", "1.0")
