"""The `imagenot` command line: one sub-command per stage or report, each defined beside the
function it runs."""

from __future__ import annotations

import logging
import traceback

import click

from imagenot.errors import ImagenotError
from imagenot.pipeline.audit.agreement import agreement_command
from imagenot.pipeline.audit.duplicates import duplicates_command
from imagenot.pipeline.audit.embeddings import embed_command
from imagenot.pipeline.audit.label_noise import label_noise_command
from imagenot.pipeline.audit.rankings import compare_rankings_command
from imagenot.pipeline.build import build_command
from imagenot.pipeline.corpus.synth import synth_command
from imagenot.pipeline.download.blocklist_apply import blocklist_command
from imagenot.pipeline.download.stage import download_command
from imagenot.pipeline.export.stage import export_command
from imagenot.pipeline.plan import plan_command
from imagenot.pipeline.rank.stage import rank_command
from imagenot.pipeline.report.stage import report_command
from imagenot.pipeline.sample.stage import sample_command
from imagenot.pipeline.score.prepare import prepare_models_command
from imagenot.pipeline.score.stage import score_command
from imagenot.pipeline.select.stage import select_command
from imagenot.pipeline.stats import stats
from imagenot.pipeline.tag.stage import tag_command
from imagenot.pipeline.why import why
from imagenot.wordnet.index import load_index


# Modules of the optional extras (pyproject.toml), by the extra that installs them.
OPTIONAL_MODULES = {"skimage": "demo", "faiss": "audit", "cleanlab": "audit"}


class Commands(click.Group):
    """The command group, and the one place where an imagenot error becomes one line and exit
    status 1 (with its traceback under -v)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ImagenotError as err:
            if ctx.params.get("verbose"):
                traceback.print_exc()
            raise click.ClickException(str(err)) from err
        except ModuleNotFoundError as err:
            extra = OPTIONAL_MODULES.get((err.name or "").split(".")[0])
            if extra is None:
                raise
            raise click.ClickException(f"{err.name} is not installed; it comes with imagenot[{extra}]: pip install 'imagenot[{extra}]'") from err


@click.group(cls=Commands)
@click.option("-v", "--verbose", is_flag=True, help="log progress at INFO level (and tracebacks of errors)")
def main(verbose: bool) -> None:
    """Build and describe ImageNot-style contrast datasets."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(message)s", force=True)
    logging.getLogger("apache_beam").setLevel(logging.WARNING)  # its INFO lines drown ours
    # Local worker processes forward a harmless "No semi_persistent_directory" warning each.
    logging.getLogger("apache_beam.runners.portability.local_job_service").setLevel(logging.ERROR)


@main.command("wordnet-prepare")
def wordnet_prepare() -> None:
    """Prepare WordNet 3.0 for NLTK and cache the noun index (done once; setup runs it)."""
    index = load_index()
    click.echo(f"WordNet {index.version}: {len(index)} noun synsets indexed")


@main.group("audit")
def audit() -> None:
    """Audits of a built dataset: label noise, duplicates, image-caption agreement."""


main.add_command(prepare_models_command)
for command in (build_command, stats, synth_command, tag_command, select_command, score_command, rank_command, sample_command, download_command, report_command, export_command, why):
    main.add_command(command)
main.add_command(compare_rankings_command)
main.add_command(plan_command)
main.add_command(blocklist_command)
audit.add_command(label_noise_command)
audit.add_command(embed_command, "embed")
audit.add_command(duplicates_command, "duplicates")
audit.add_command(agreement_command, "agreement")


if __name__ == "__main__":
    main()
