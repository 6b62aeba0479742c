"""The caption rules on real LAION captions (tests/data/real_captions.tsv, from the sample in
shared/data, each with the synset step 6 kept it for on the whole sample): through `imagenot tag`
and `imagenot select`, and the rule function itself."""

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke

from imagenot.filters.picturable import unpicturable_removals
from imagenot.labels.caption_rules import pair_rule
from imagenot.labels.pair_checker import senses_of
from imagenot.pipeline.commands.why import why
from imagenot.pipeline.config.schema import PICTURABLE_ROOTS, Selection
from imagenot.pipeline.report.glossary import CAPTION_REASONS
from imagenot.pipeline.select.caption_rules import caption_rules

select_command = cli_command("select")
tag_command = cli_command("tag")

CAPTIONS = Path(__file__).parent / "data" / "real_captions.tsv"
# A caption no rule drops, for a synset whose real caption a rule drops ("Led Zeppelin": case), so
# that one candidate survives the rules with some of its captions dropped.
EXTRA = [{"URL": "https://example.com/flood.jpg", "TEXT": "20W LED Floodlights", "synset": "light-emitting_diode.n.01"}]


@pytest.fixture(scope="module")
def run(tmp_path_factory, index):
    folder = tmp_path_factory.mktemp("real")
    with CAPTIONS.open() as file:
        rows = list(csv.DictReader(file, delimiter="\t")) + EXTRA
    pq.write_table(
        pa.Table.from_pylist([{"URL": r["URL"], "TEXT": r["TEXT"]} for r in rows]), folder / "captions.parquet"
    )
    # Only the synsets the whole sample kept these captions for are candidates (the "within" reading of a
    # class list), so each caption reaches the rules with its synset, as it did on the whole sample.
    (folder / "synsets.txt").write_text(
        "".join(f"{index.by_name(s).wnid}\n" for s in dict.fromkeys(r["synset"] for r in rows))
    )
    config = {
        "corpus": {"paths": [str(folder / "captions.parquet")]},
        # the picturable step off: it would take the number and verb synsets out before the rules see them
        "selection": {
            "allowed_nsfw_tags": None,
            "min_captions": 1,
            "picturable_roots": None,
            "reference": str(folder / "synsets.txt"),
            "overlap": "within",
        },
        "runner": {"workers": 1},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    run_dir = folder / "run"
    for command, args in ((tag_command, ["--out", str(run_dir)]), (select_command, ["--run", str(run_dir)])):
        result = invoke(command, ["--config", str(folder / "config.yaml"), *args])
        assert result.exit_code == 0, result.output
    return run_dir


def _funnel(run_dir: Path) -> dict[str, dict]:
    with (run_dir / "select" / "funnel.tsv").open() as file:
        return {row["step"]: row for row in csv.DictReader(file, delimiter="\t")}


def test_the_rules_drop_pairs_whose_word_is_not_the_synset_each_counted_by_name(run):
    funnel = _funnel(run)
    dropped = dict(item.split("=") for item in funnel["caption_rules"]["captions_dropped"].split(","))
    assert {"number", "part_of_speech"} <= set(dropped), dropped
    assert set(dropped) <= set(CAPTION_REASONS)
    kept = pq.read_table(run / "select" / "selected").to_pylist()
    assert int(funnel["caption_rules"]["captions_left"]) == len(kept)
    captions = {row["caption"] for row in kept}
    assert "minimalist necklace 7" not in captions  # seven.n.01 from a model number
    assert "Learning to handle goats" not in captions  # a verb
    assert any("Earring" in caption or "Sofa" in caption for caption in captions)


def test_the_picturable_step_keeps_things_logos_and_cards_not_places_or_numbers(index):
    names = ["sofa.n.01", "logo.n.01", "business_card.n.01", "texas.n.01", "eight.n.01", "recipe.n.01"]
    removals = unpicturable_removals([index.by_name(n).wnid for n in names], index, PICTURABLE_ROOTS, ["noun.location"])
    assert {r.name: r.reason for r in removals.values()} == {
        "texas.n.01": "a_place",
        "eight.n.01": "not_picturable",
        "recipe.n.01": "not_picturable",
    }


def test_why_names_the_caption_rules_step(run):
    with (run / "select" / "synset_fates.tsv").open() as file:
        fates = {row["name"]: row for row in csv.DictReader(file, delimiter="\t")}
    name = next(n for n, row in fates.items() if row["step"] == "caption_rules")
    result = invoke(why, [name, "--run", str(run)])
    assert result.exit_code == 0, result.output
    assert "dropped at step 'caption_rules' (no_caption_passes_rules)" in result.output


def test_why_counts_the_caption_rules_drops_by_rule_for_dropped_and_surviving_synsets(run):
    tally = json.loads((run / "select" / "select_tally.json").read_text())
    single, kept = tally["single_synset"], tally["kept"]
    with (run / "select" / "synset_fates.tsv").open() as file:
        fates = {row["wnid"]: row for row in csv.DictReader(file, delimiter="\t")}
    # from the step-6 and final counts alone, which the tally held before it counted rules per class
    all_dropped = next(w for w, n in single.items() if n and not kept.get(w) and fates[w]["step"] == "caption_rules")
    some_dropped = next(w for w, n in single.items() if 0 < kept.get(w, 0) < n)
    for wnid in (all_dropped, some_dropped):
        result = invoke(why, [fates[wnid]["name"], "--run", str(run)])
        assert result.exit_code == 0, result.output
        lost = single[wnid] - kept.get(wnid, 0)
        line = next((x for x in result.output.splitlines() if "caption rules dropped" in x), None)
        assert line is not None, result.output
        assert f"caption rules dropped {lost:,} of its {single[wnid]:,} single-synset captions" in line
        counts = dict(item.rsplit(" ", 1) for item in line.split(": ", 1)[1].split(", "))
        assert set(counts) <= set(CAPTION_REASONS) and sum(int(n) for n in counts.values()) == lost, line
    assert "passed every filter" in invoke(why, [fates[some_dropped]["name"], "--run", str(run)]).output


@pytest.mark.parametrize(
    ("caption", "form", "synset", "rule"),
    [
        ("Trestle Table XL", "xl", "forty.n.01", "size_code"),
        ("Apple iphone 8 case", "8", "eight.n.01", "number"),
        ("Sky-Watcher BK 707AZ2 telescope", "bk", "berkelium.n.01", "case"),
        ("Corgi-Cardigan Welsh-de-", "de", "delaware.n.04", "foreign_word"),
        ("Led Zeppelin by Led Zeppelin", "led", "light-emitting_diode.n.01", "case"),
        ("Graines de tomates en sachet", "en", "en.n.01", "foreign_word"),
        ("Matt Damon at the premiere", "matt", "flatness.n.04", "name"),
        ("Harry Potter and the Cursed Child", "potter", "potter.n.01", "name"),
        ("Saving Grace (2000)", "grace", "grace.n.01", "title"),
        ("Gets the job done", "gets", "get.n.01", "part_of_speech"),
        ("Now on Etsy", "now", "now.n.01", "part_of_speech"),
        ("Sauteed Apples", "apples", "apple.n.02", "rare_sense"),
        ("Maddox Tufted Sofa", "sofa", "sofa.n.01", None),
        ("20W LED Floodlights", "led", "light-emitting_diode.n.01", None),
        ("2006 Lexus RX 330 Richmond VA", "va", "virginia.n.01", None),
        ("Zimmer Hampton Inn Gallatin Fotos", "inn", "hostel.n.01", None),
    ],
)
def test_the_rule_that_fires_on_a_real_caption(index, caption, form, synset, rule):
    wnid = index.by_name(synset).wnid
    assert pair_rule(caption, form, senses_of(index, [wnid])[wnid], _default_rules()) == rule


_RULES = []


def _default_rules():
    if not _RULES:
        _RULES.append(caption_rules(Selection().caption_rules))
    return _RULES[0]
