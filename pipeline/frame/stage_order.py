"""The stages' names in build order, and each one's command as `--help` shows it, for the command
line, which must not import the stages (they load Beam and torch); `pipeline.frame.registry`
loads each by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

STAGE_NAMES = ("corpus", "tag", "select", "score", "rank", "sample", "download", "report", "export")

UPSTREAM_HELP = "run directory holding the stage's finished upstream stage"


@dataclass(frozen=True)
class CommandFace:
    """What a stage's command shows before it runs: its help, its own options, and how it names its
    run folder."""

    doc: str
    options: tuple[Callable[[Callable], Callable], ...] = ()  # click options passed on to its run by name
    starts_run: bool = False  # the first stage: `--out DIR` (made when missing), `--input` names the corpus
    run_help: str = UPSTREAM_HELP  # the help of `--run` (a stage that does not start the run)


# The build stages' faces: what their commands show (each stage's declaration holds the rest).
FACES = {
    "corpus": CommandFace("Write the config's synthetic corpus."),
    "tag": CommandFace("Find every WordNet noun synset each caption mentions.", starts_run=True),
    "select": CommandFace(
        "Filter synsets (offensive, identity, ImageNet overlap, counts, leaves, NSFW) and keep single-synset captions."
    ),
    "score": CommandFace("Score each candidate synset's first-pass captions against its gloss."),
    "rank": CommandFace("Rank synsets by gloss similarity, write the class list, score the classes' captions."),
    "sample": CommandFace(
        "Pick each class's images and reserve from its scored captions, split train/test, write the dataset."
    ),
    "download": CommandFace(
        "Fetch the sampled images with img2dataset, backfilling failures from each class's reserve."
    ),
    "report": CommandFace(
        "Write the dataset card and the HTML report of a finished run into RUN/report/.",
        run_help="run directory holding a finished sample/ (or download/) stage",
    ),
    "export": CommandFace(
        "Write RUN/dataset/: the final images as train/test webdataset tars, parquet metadata, classes.txt, README.md."
    ),
}
