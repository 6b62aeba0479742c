"""What the class review shows of each candidate class: who it is, the captions that name it, and
the share of them used in its sense (`imagenot review classes`).

The candidates are the run's classes in rank's order, best first (`rank/ranking.tsv`, fate
`class`), then the `review.extra_candidates` next in line: after `review classes apply` the next
candidates that took the vetoed classes' places are classes too, and come up for review (reviewed
already when they were among the extra ones). Each shows its name, lemmas, gloss and WordNet path;
`CAPTIONS_SHOWN` of its first-pass captions (`score/first_pass/`: the captions the build scored
for it), those with the smallest keyed hash of their row id under `review.seed`, so every rater
sees the same ones, each marked with whether the sense decision (`caption_decision` at
`scoring.sense_decision()`: the sense margin and the fit floor) keeps it; its pass share (rank's,
`ranking.tsv`: the caption rules' and the sense decision's share; where rank has none, the sense
decision's share of its first-pass captions); and, once the download stage finished, up to `THUMBNAILS` of its images.

Any class list can be reviewed the same way (`--list FILE --corpus GLOB`): its classes in file
order, each with the captions that name it in a seeded sample of the corpus (`LIST_SAMPLE_ROWS`
rows, the tag stage's matcher, as `imagenot plan --sample` reads it), with no pass share (that
needs the run's encoder) and no images.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import SENSE_OFF, caption_decision
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.rank.pass_share import sense_pass_shares
from imagenot.pipeline.review.candidates import CAPTIONS_SHOWN, CLASS_FATE, review_candidates
from imagenot.pipeline.review.plan import image_id
from imagenot.pipeline.review.promotions import read_promotions
from imagenot.pipeline.review.session import wordnet_path
from imagenot.pipeline.run.files import read_schema, read_table, stage_shards
from imagenot.pipeline.run.keyed_hash import sample_keys
from imagenot.pipeline.run.layout import (
    DOWNLOAD,
    FIRST_PASS_DIR,
    MARGIN_COLUMN,
    SCORE,
    SCORE_COLUMN,
    SELECT,
    SELECTED_DIR,
    SENSE_COLUMNS,
    dataset_shards,
    pair_scores,
    stage_path,
)
from imagenot.pipeline.run.stage_dir import is_done
from imagenot.wordnet.index import NounIndex

THUMBNAILS = 8
LIST_SAMPLE_ROWS = 100_000
NEXT_IN_LINE = "; next in line, not a class yet: apply promotes it in a vetoed class's place"


def describe(index: NounIndex, wnid: str, position: int) -> dict:
    """A candidate's name, lemmas, gloss and WordNet path."""
    if wnid not in index:
        raise ImagenotError(f"{wnid} is not a WordNet 3.0 noun synset id")
    synset = index[wnid]
    return {
        "wnid": wnid,
        "position": position,
        "name": synset.name,
        "lemmas": ", ".join(lemma.replace("_", " ") for lemma in synset.lemmas),
        "gloss": synset.gloss,
        "path": wordnet_path(index, wnid),
    }


def _first_pass(run_dir: str, wnids: set[str]) -> pa.Table:
    """The candidates' first-pass rows: row_id, wnid, similarity and (with sense contrast) margin and fit."""
    shards = stage_shards(stage_path(run_dir, SCORE), FIRST_PASS_DIR)
    if not shards:
        return pa.table({"row_id": pa.array([], pa.string()), "wnid": pa.array([], pa.string())})
    names = read_schema(shards[0]).names
    columns = ["row_id", "wnid", SCORE_COLUMN, *(c for c in SENSE_COLUMNS if c in names)]
    table = pa.concat_tables(read_table(s, columns) for s in shards)
    return table.filter(pc.is_in(table.column("wnid"), pa.array(sorted(wnids), pa.string())))


def shown_captions(run_dir: str, config: Config, wnids: set[str]) -> dict[str, list[dict]]:
    """Per candidate its CAPTIONS_SHOWN captions (caption, passes), in keyed-hash order."""
    rows = _first_pass(run_dir, wnids)
    if not rows.num_rows:
        return {}
    row_ids = rows.column("row_id").to_pylist()
    keys = sample_keys(row_ids, config.review.seed)
    wnid_of = np.array(rows.column("wnid").to_pylist(), object)
    chosen = {}
    for wnid in wnids:
        members = np.flatnonzero(wnid_of == wnid)
        chosen[wnid] = [row_ids[i] for i in members[np.argsort(keys[members], kind="stable")[:CAPTIONS_SHOWN]]]
    picked = [i for members in chosen.values() for i in members]
    at = {r: i for i, r in enumerate(row_ids)}
    sense = config.scoring.sense_decision() if MARGIN_COLUMN in rows.column_names else SENSE_OFF
    passes, _ = caption_decision(pair_scores(rows.take([at[r] for r in picked])), None, sense)
    verdict = dict(zip(picked, passes.tolist()))
    text = _captions(run_dir, set(picked))
    return {
        wnid: [{"caption": text.get(r, ""), "passes": verdict[r]} for r in members] for wnid, members in chosen.items()
    }


def _first_by_key(row_ids: list[str], seed: int) -> list[int]:
    """Positions of the CAPTIONS_SHOWN row ids with the smallest keyed hash."""
    keys = sample_keys(row_ids, seed)
    return np.argsort(keys, kind="stable")[:CAPTIONS_SHOWN].tolist()


def _captions(run_dir: str, row_ids: set[str]) -> dict[str, str]:
    """row_id -> caption, from select's kept captions (one pass, the wanted rows only)."""
    wanted = pa.array(sorted(row_ids), pa.string())
    found = {}
    for shard in stage_shards(stage_path(run_dir, SELECT), SELECTED_DIR):
        table = read_table(shard, ["row_id", "caption"])
        table = table.filter(pc.is_in(table.column("row_id"), wanted))
        found.update(zip(table.column("row_id").to_pylist(), table.column("caption").to_pylist()))
    return found


def pass_shares(run_dir: str, config: Config, ranked: list[dict]) -> dict[str, float | None]:
    """Per candidate rank's pass share, or the sense decision's share of its first-pass captions."""
    shares = {r["wnid"]: float(r["pass_share"]) for r in ranked if r.get("pass_share")}
    if len(shares) < len(ranked):
        sense = sense_pass_shares(run_dir, config.scoring.sense_decision())
        shares.update({r["wnid"]: sense.get(r["wnid"]) for r in ranked if r["wnid"] not in shares})
    return shares


def thumbnails(run_dir: str, wnids: set[str]) -> tuple[dict[str, list[str]], dict[str, tuple[str, str]]]:
    """Per candidate up to THUMBNAILS of its downloaded images (ids), and where each lies."""
    if not is_done(run_dir, DOWNLOAD):
        return {}, {}
    shown: dict[str, list[str]] = {}
    where = {}
    for shard in dataset_shards(run_dir, DOWNLOAD):
        for r in read_table(shard, ["row_id", "wnid", "sha256", "tar", "key", "order"]).to_pylist():
            images = shown.setdefault(r["wnid"], [])
            if r["wnid"] in wnids and len(images) < THUMBNAILS:
                image = image_id(r["row_id"], r["sha256"])
                images.append(image)
                where[image] = (r["tar"], r["key"])
    return shown, where


def candidates(run_dir: str, config: Config, index: NounIndex) -> tuple[list[dict], dict[str, tuple[str, str]]]:
    """The run's classes as the class review shows them, best first, and where their thumbnails lie."""
    ranked = review_candidates(run_dir, config.review.extra_candidates)
    wnids = {r["wnid"] for r in ranked}
    captions = shown_captions(run_dir, config, wnids)
    shares = pass_shares(run_dir, config, ranked)
    shown, where = thumbnails(run_dir, wnids)
    promoted = read_promotions(run_dir)
    rows = [
        {
            **describe(index, r["wnid"], position),
            "standing": f"rank {position} of the candidates (0 = best, as the report counts"
            + ("" if r["fate"] == CLASS_FATE else NEXT_IN_LINE)
            + f") · score {float(r['score']):.3f} (the mean similarity of its best captions to its gloss, "
            "which rank sorts by)"
            + (_in_place_of(index, promoted[r["wnid"]]) if r["wnid"] in promoted and r["fate"] == CLASS_FATE else ""),
            "captions": captions.get(r["wnid"], []),
            "pass_share": shares.get(r["wnid"]),
            "thumbnails": shown.get(r["wnid"], []),
        }
        for position, r in enumerate(ranked)
    ]
    return rows, where


def _in_place_of(index: NounIndex, vetoed: list[str]) -> str:
    named = ", ".join(f"{index[w].name} ({w})" if w in index else w for w in vetoed)
    return f" · promoted by imagenot review classes apply in place of {named}, which the class review vetoed" + (
        "" if len(vetoed) == 1 else " (the next candidates in rank order took their places)"
    )


def listed_candidates(config: Config, index: NounIndex, list_path: str) -> tuple[list[dict], dict]:
    """The classes of a class list as the class review shows them, in file order (no thumbnails)."""
    from imagenot.pipeline.config.reference_lists import read_class_list
    from imagenot.pipeline.plan.sample import sample_batches
    from imagenot.pipeline.tag.stage import build_matcher, tag_batch

    wnids = read_class_list(list_path, index)
    wanted = set(wnids)
    matcher = build_matcher(index, config.tagging.ignore_forms)
    found: dict[str, list[tuple[str, str]]] = {w: [] for w in wnids}
    rows = 0
    for shard_batch in sample_batches(config, LIST_SAMPLE_ROWS, config.review.seed):
        rows += shard_batch.batch.num_rows
        tagged = tag_batch(shard_batch.batch, matcher)
        columns = (tagged.column(name).to_pylist() for name in ("row_id", "wnids", "caption"))
        for row_id, tags, caption in zip(*columns):
            for wnid in wanted.intersection(tags):
                found[wnid].append((row_id, caption))
    listed = []
    for position, wnid in enumerate(wnids):
        named = found[wnid]
        shown = [named[i] for i in _first_by_key([r for r, _ in named], config.review.seed)] if named else []
        listed.append(
            {
                **describe(index, wnid, position),
                "standing": f"line {position + 1} of the list · {len(named):,} of {rows:,} sampled corpus rows name it",
                "captions": [{"caption": caption, "passes": None} for _, caption in shown],
                "pass_share": None,
                "thumbnails": [],
            }
        )
    return listed, {}
