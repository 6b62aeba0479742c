"""`imagenot why` on what is not a noun synset, or not a run: an answer that says what is wrong and
what exists instead, never a generic refusal."""

import pytest

from imagenot.pipeline.commands.why import why
from tests.cli_runner import invoke


def _refusal(word: str, run_dir: str) -> str:
    result = invoke(why, [word, "--run", run_dir])
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    return result.output


@pytest.mark.parametrize(
    "word, part",
    [("beautiful", "an adjective"), ("quickly", "an adverb"), ("elapse", "a verb")],
)
def test_a_word_of_another_part_of_speech_says_which(tmp_path, word, part):
    output = _refusal(word, str(tmp_path))
    assert f"'{word}' is {part} in WordNet; imagenot classes are noun synsets" in output


def test_a_synset_name_that_does_not_exist_suggests_the_senses_that_do(tmp_path):
    output = _refusal("dog.n.99", str(tmp_path))
    assert "dog.n.99 is not a WordNet 3.0 noun synset; did you mean dog.n.01, " in output


def test_a_misspelt_synset_name_suggests_close_names(tmp_path):
    assert "did you mean" in _refusal("gavle.n.01", str(tmp_path)) and "gavel.n.01" in _refusal(
        "gavle.n.01", str(tmp_path)
    )


def test_a_wnid_that_does_not_exist_names_the_nearest_that_do(tmp_path):
    output = _refusal("n02084072", str(tmp_path))  # dog.n.01 is n02084071
    assert "n02084072 is not a WordNet 3.0 noun synset; the nearest that exist: n02084071 dog.n.01" in output


def test_a_word_wordnet_lacks_suggests_close_nouns(tmp_path):
    output = _refusal("giraffee", str(tmp_path))
    assert "neither a wnid, a noun synset name such as gavel.n.01, nor a WordNet word (close nouns: giraffe" in output


def test_a_run_directory_that_does_not_exist_is_named_as_such(tmp_path):
    missing = tmp_path / "no-such-run"
    output = _refusal("bed", str(missing))
    assert f"run directory {missing} does not exist" in output
