"""`imagenot audit classes` on a list of every WordNet noun synset (82,115) over a synthetic corpus
of realistic captions (each names about 20 noun synsets, as real ones do, so nearly every caption
makes about 20 (caption, class) pairs): wall time and the command's peak memory (its process's
maximum resident set, `getrusage`), run as a user runs it. The pairs are decided a chunk at a
time (`pipeline.audit.classes.CHUNK_PAIRS`), so the peak should stay flat as the pairs grow.
The last line is JSON.

    python benchmarks/bench_audit_classes.py [--captions 2000] [--seed 1] [--classes N]
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.run.layout import CORPUS_PARTS
from imagenot.wordnet.index import load_index


@click.command()
@click.option("--captions", default=2000, show_default=True, help="corpus rows (realistic synthetic captions)")
@click.option("--seed", default=1, show_default=True)
@click.option("--classes", type=int, help="the first N noun synsets only (a smoke run) [every one]")
def main(captions: int, seed: int, classes: int | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        synth_corpus(work / "corpus", captions, seed, shard_rows=max(captions, 1), captions="realistic")
        wnids = [synset.wnid for synset in load_index()][:classes]
        (work / "every_noun.txt").write_text("".join(f"{wnid}\n" for wnid in wnids))
        command = [sys.executable, "-m", "imagenot.pipeline.cli", "audit", "classes", "--list"]
        command += [str(work / "every_noun.txt"), "--corpus", str(work / "corpus" / CORPUS_PARTS)]
        command += ["--out", str(work / "classes.tsv")]
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        seconds = time.monotonic() - started
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
    pairs = int(re.search(r"named by ([\d,]+) captions", done.stdout).group(1).replace(",", ""))
    print(done.stdout.strip())
    print(
        json.dumps(
            {
                "classes": len(wnids),
                "captions": captions,
                "pairs": pairs,
                "seconds": round(seconds, 1),
                "pairs_per_second": round(pairs / seconds, 1),
                "peak_rss_mib": round(peak_mib),
            }
        )
    )


if __name__ == "__main__":
    main()
