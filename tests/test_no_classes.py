"""A build that ends with no classes finishes, and its card, report and last line say which step
cut the last synsets (asking more captions per synset than any has is an ordinary mistake)."""

import pytest
import yaml
from cli_runner import cli_command, invoke

from imagenot.pipeline.commands.build import build_command
from imagenot.wordnet import hierarchy

report_command = cli_command("report")

NO_CLASSES = {
    "corpus": {"synth": {"rows": 1_000, "seed": 4, "shard_rows": 500}},
    "selection": {"min_captions": 100_000},
    "ranking": {"classes": 8, "thresholds": {"packaged:all-MiniLM-L6-v2": 0.3}},
    "sampling": {"images_per_class": 5, "test_per_class": 1},
}
CUT = "no classes: step 'min_captions' cut the last synsets (too_few_captions="


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("no_classes")
    config = folder / "none.yaml"
    config.write_text(yaml.safe_dump(NO_CLASSES))
    result = invoke(build_command, ["--config", str(config), "--out", str(folder / "run")])
    return folder / "run", result


def test_build_finishes_and_its_last_line_names_the_step(built):
    run_dir, result = built
    assert result.exit_code == 0, result.output
    assert CUT in result.output.strip().splitlines()[-1]


def test_card_and_report_say_so(built):
    run_dir, _ = built
    card = (run_dir / "report" / "card.md").read_text()
    assert "> **No classes.** This run ended with " + CUT in card
    assert "## Classes\n\nNone: " + CUT in card
    page = (run_dir / "report" / "report.html").read_text()
    assert "<b>No classes.</b> This run ended with no classes: step &#x27;min_captions&#x27; cut" in page


def test_the_report_command_renders_it_again(built):
    run_dir, _ = built
    result = invoke(report_command, ["--run", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert '"classes": 0' in result.output


def test_an_empty_class_set_has_figures_without_dividing_by_zero(index):
    empty = hierarchy.set_figures(index, [], ["n02084071"])
    assert empty["count"] == 0 and empty["modularity"] is None and empty["depth_histogram"] == {}
    full = hierarchy.set_figures(index, ["n02084071"], [])
    assert set(full) == set(empty) and full["distance_median"] is None and full["count"] == 1
