"""The select stage's funnel files: `funnel.tsv`, `funnel.json` and `synset_fates.tsv`; and the
per-class caption-rule drops its tally (`select_tally.json`) holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict

from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.filters.funnel import FATE_COLUMNS, Funnel
from imagenot.pipeline.run import files as atomic
from imagenot.pipeline.run.files import read_tsv
from imagenot.pipeline.run.layout import FUNNEL_FILE, SYNSET_FATES_FILE

FUNNEL_FILES = ("funnel.tsv", FUNNEL_FILE, SYNSET_FATES_FILE)
RULE_DROPS = "caption_rule_drops"  # the select tally's key: "wnid:rule" -> captions that rule dropped


def write_funnel(funnel: Funnel, out_dir: str) -> list[str]:
    """Write `funnel.tsv`, `funnel.json` and `synset_fates.tsv` (every found synset) atomically."""
    paths = [FileSystems.join(out_dir, name) for name in FUNNEL_FILES]
    atomic.write_tsv(
        paths[0],
        ("step", "synsets_left", "captions_left", "synsets_dropped", "captions_dropped"),
        (
            (s.step, s.synsets_left, s.captions_left, _reasons(s.synsets_dropped), _reasons(s.captions_dropped))
            for s in funnel.steps
        ),
    )
    atomic.write_json(paths[1], {"steps": [asdict(s) for s in funnel.steps]})
    atomic.write_tsv(paths[2], FATE_COLUMNS, funnel.fates().values())
    return paths


def read_synset_fates(path: str) -> dict[str, dict[str, str]]:
    """wnid -> its row of a `synset_fates.tsv`, to answer "why is my synset not a class?" later."""
    rows = read_tsv(path)
    if rows and tuple(rows[0]) != FATE_COLUMNS:
        raise ImagenotError(f"{path}: expected columns {FATE_COLUMNS}, found {tuple(rows[0])}")
    return {row["wnid"]: row for row in rows}


def _reasons(counts: Mapping[str, int]) -> str:
    return ",".join(f"{reason}={n}" for reason, n in counts.items())


def rule_drop_key(wnid: str, rule: str) -> str:
    """A flat key of the tally (tallies sum one level of nesting): "n01234567:number"."""
    return f"{wnid}:{rule}"


def read_rule_drops(tally: Mapping) -> dict[str, dict[str, int]]:
    """wnid -> {rule: captions dropped} from a select tally (empty for a run from before it was kept)."""
    drops: dict[str, dict[str, int]] = {}
    for key, n in tally.get(RULE_DROPS, {}).items():
        wnid, rule = key.split(":", 1)
        drops.setdefault(wnid, {})[rule] = n
    return drops
