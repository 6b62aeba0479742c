"""The `imagenot` command line: one sub-command per stage or report, each defined beside the
function it runs.

A command's module is imported only when that command runs or shows its help: the stages pull in
Beam, torch and open_clip, which take seconds to load, and `imagenot --help`,
`imagenot build --help` or `imagenot --version` need none of them.
"""

from __future__ import annotations

import importlib
import logging
import os
import traceback

import click

from imagenot.errors import ImagenotError
from imagenot.pipeline.run.extras import MissingExtraError, extra_for_missing, install_line, require_gcp_for_paths
from imagenot.pipeline.run.worker_errors import unwrapped

# A build stage's command, built from its face: the stage's module loads when the command runs.
STAGE_COMMAND = ("imagenot.pipeline.frame.stage_command", "declared_stage_command")
AUDIT_COMMAND = ("imagenot.pipeline.audit.faces", "audit_command")  # an audit declared as a stage, likewise
# name -> (module, attribute, the line `--help` lists it with); the attribute is a click command, or a
# function of the command's name that builds one
COMMANDS = {
    "build": (
        "imagenot.pipeline.commands.build",
        "build_command",
        "Build a dataset from a config: every stage in order.",
    ),
    "why": (
        "imagenot.pipeline.commands.why",
        "why",
        "Say why a synset (or each sense of a word) is or is not a class.",
    ),
    "stats": ("imagenot.pipeline.commands.stats", "stats", "A class set's place in WordNet beside a reference's."),
    "synth": ("imagenot.pipeline.corpus.synth_command", "synth_command", "Write a synthetic LAION-schema corpus."),
    "tag": (*STAGE_COMMAND, "Stage 1: tag captions with the noun synsets they name."),
    "select": (*STAGE_COMMAND, "Stage 2: filter synsets and captions."),
    "score": (*STAGE_COMMAND, "Stage 3: score candidates' captions against glosses."),
    "rank": (*STAGE_COMMAND, "Stage 4: rank synsets, write the class list."),
    "sample": (*STAGE_COMMAND, "Stage 5: pick images per class, split train/test."),
    "download": (*STAGE_COMMAND, "Stage 6: fetch the images, backfill failures."),
    "report": (*STAGE_COMMAND, "Stage 7: write the dataset card and HTML report."),
    "export": (*STAGE_COMMAND, "Stage 8: write RUN/dataset/, ready to train on."),
    "compare-rankings": (
        "imagenot.pipeline.audit.rankings_command",
        "compare_rankings_command",
        "Compare model rankings on two datasets.",
    ),
    "prepare-models": (
        "imagenot.pipeline.score.prepare",
        "prepare_models_command",
        "Build the scoring model artifacts once, offline.",
    ),
    "senses": (
        "imagenot.pipeline.commands.senses",
        "senses_command",
        "Score a caption against every noun sense of its word.",
    ),
    "plan": (
        "imagenot.pipeline.plan.command",
        "plan_command",
        "Project a build's work, jobs and cost; refuse what will fail.",
    ),
    "review": ("imagenot.pipeline.review.command", "review_command", "Human review: raters check labels in a browser."),
    "blocklist": (
        "imagenot.pipeline.amend.blocklist",
        "blocklist_command",
        "Blocklists: apply a new list to a finished dataset.",
    ),
}
AUDITS = {
    "embed": (*AUDIT_COMMAND, "CLIP-embed every downloaded image and caption."),
    "duplicates": (
        *AUDIT_COMMAND,
        "Exact and near duplicates (--drop: take them out).",
    ),
    "agreement": (*AUDIT_COMMAND, "Image-class and image-caption agreement."),
    "classes": (
        "imagenot.pipeline.audit.classes",
        "classes_command",
        "Per class of a list: the share of a corpus's captions naming it that use it in its sense.",
    ),
    "label-noise": (
        "imagenot.pipeline.audit.label_noise_command",
        "label_noise_command",
        "Label errors by confident learning.",
    ),
}
# The loggers through which Beam repeats an error raised in a worker, traceback and all: the command
# says it in one line (the traceback only under -v).
WORKER_ERROR_LOGGERS = ("apache_beam.runners.common", "apache_beam.runners.portability.local_job_service")

# Set before any model library loads: their download and loading bars, and transformers' warnings
# (its LOAD REPORT table of unused weights), show only with -vv.
QUIET_MODEL_LOADING = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "TQDM_DISABLE": "1"}


def command(found: object, name: str) -> click.Command:
    """The command a `COMMANDS` entry names: a click command, or the one a function builds for `name`."""
    return found if isinstance(found, click.Command) else found(name)


class LazyGroup(click.Group):
    """A group whose sub-commands are imported from `lazy` when first used."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in self.lazy:
            module, attribute, _ = self.lazy[name]
            self.add_command(command(getattr(importlib.import_module(module), attribute), name), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table, without importing any command."""
        rows = [
            (name, self.lazy[name][2] if name in self.lazy else self.commands[name].get_short_help_str())
            for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class Commands(LazyGroup):
    """The top-level group, and the one place where an imagenot error becomes one line and exit
    status 1 (with its traceback under -v)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """A gs:// argument without the gcp extra is refused here, before any command starts."""
        try:
            require_gcp_for_paths(args)
        except MissingExtraError as err:
            raise click.ClickException(str(err)) from err
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as err:
            extra = extra_for_missing(err.name)
            if extra is None:
                raise
            raise click.ClickException(install_line(extra, f"{err.name}")) from err
        except Exception as err:  # an ImagenotError, or one a Beam worker raised, wrapped by Beam
            error = unwrapped(err) or (err if isinstance(err, ImagenotError) else None)
            if error is None:
                raise
            if ctx.params.get("verbose"):
                traceback.print_exc()
            # notes added on the way out (pipeline.run.journal: how to finish a command an error stopped)
            raise click.ClickException("; ".join([str(error), *getattr(err, "__notes__", ())])) from err


@click.group(cls=Commands, lazy=COMMANDS)
@click.version_option(package_name="imagenot", message="imagenot %(version)s")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="-v: log progress at INFO level (and tracebacks of errors); -vv: also show model loading",
)
def main(verbose: int) -> None:
    """Build and describe ImageNot-style contrast datasets."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(message)s", force=True
    )
    logging.getLogger("apache_beam").setLevel(logging.WARNING)  # its INFO lines drown ours
    # Local worker processes forward a harmless "No semi_persistent_directory" warning each.
    for name in WORKER_ERROR_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR if verbose else logging.CRITICAL)
    if verbose < 2:
        for name, value in QUIET_MODEL_LOADING.items():
            os.environ.setdefault(name, value)
        logging.getLogger("transformers").setLevel(logging.ERROR)  # where it was imported before the variable


@main.command("wordnet-prepare")
def wordnet_prepare() -> None:
    """Prepare WordNet 3.0 for NLTK and cache the noun index (done once; setup runs it)."""
    from imagenot.wordnet.index import load_index

    index = load_index()
    click.echo(f"WordNet {index.version}: {len(index)} noun synsets indexed")


@main.group("audit", cls=LazyGroup, lazy=AUDITS)
def audit() -> None:
    """Audits of a built dataset: label noise, duplicates, image-caption agreement."""


if __name__ == "__main__":
    main()
