"""`imagenot why SYNSET --run DIR`: why a synset is or is not a class of a finished run."""

from __future__ import annotations

import click
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.filters.funnel import KEPT, describe_fate
from imagenot.pipeline.download.class_fates import download_fate
from imagenot.pipeline.select.funnel_files import read_synset_fates
from imagenot.pipeline.shards import read_tsv
from imagenot.wordnet.index import WNID_PATTERN, load_index


@click.command("why")
@click.argument("synset")
@click.option("--run", "run_dir", required=True, help="the run directory (its select/ folder holds synset_fates.tsv)")
def why(synset: str, run_dir: str) -> None:
    """Say why SYNSET (a wnid like n03430313 or a name like gavel.n.01) is or is not a class."""
    index = load_index()
    if WNID_PATTERN.match(synset):
        if synset not in index:
            raise click.BadParameter(
                f"{synset} is not a WordNet 3.0 noun synset", param_hint="SYNSET"
            )
        wnid = synset
    else:
        try:
            wnid = index.by_name(synset).wnid
        except KeyError:
            raise click.BadParameter(
                f"{synset!r} is neither a wnid nor a noun synset name such as gavel.n.01",
                param_hint="SYNSET",
            ) from None
    path = FileSystems.join(run_dir, "select", "synset_fates.tsv")
    if not FileSystems.exists(path):
        raise ImagenotError(f"{path} does not exist: has the run reached the select stage?")
    fate = read_synset_fates(path).get(wnid)
    ranked = FileSystems.join(run_dir, "rank", "ranking.tsv")
    if fate is not None and fate["step"] == KEPT and FileSystems.exists(ranked):
        click.echo(_rank_fate(wnid, fate["name"], ranked))
        if (line := download_fate(run_dir, wnid)) is not None:  # its images: failures, blocklists, drops
            click.echo(line)
    else:
        click.echo(describe_fate(wnid, fate))


def _rank_fate(wnid: str, name: str, ranking_tsv: str) -> str:
    """A filtered-in synset's fate at the rank stage (steps 7-8)."""
    row = next((r for r in read_tsv(ranking_tsv) if r["wnid"] == wnid), None)
    if row is None:
        return f"{wnid} {name}: passed the filters but had no scored caption at the rank stage"
    if row["fate"] == "class":
        return f"{wnid} {name}: a class (gloss similarity score {row['score']})"
    return f"{wnid} {name}: passed the filters, dropped at step 'rank' ({row['fate']}; score {row['score']})"
