"""A synthetic LAION-schema corpus with its ground truth (`imagenot synth`: `synth_command.py`), for demos,
tests and benchmarks.

No real LAION metadata can be had here, so this writes corpora as hard as the real thing:
captions in LAION's styles about WordNet noun synsets drawn Zipf-like (see `lexicon` and
`captions`), captions about several synsets or none, lemmas used in another of their senses,
exact duplicate captions, NSFW-tagged rows and rows the reader must drop. The same seed gives
the same bytes. Rows are generated and written shard by shard, never the whole corpus at once.
`captions` picks the caption kind (`captions.CAPTION_KINDS`): "realistic" (the default) costs what
real captions cost to tag; "compact" is the shorter captions of earlier versions, byte for byte,
for small builds that need many captions about one synset from few rows.

Shards `part-00000.parquet`, ... hold up to `shard_rows` rows each, in LAION-5B's schema:
SAMPLE_ID int64 (the row's number in the corpus), URL "<url_base>/<SAMPLE_ID>.jpg", TEXT,
HEIGHT and WIDTH int64, LICENSE (mostly "?"), NSFW ("UNLIKELY" / "UNSURE" / "NSFW"),
similarity float64 (CLIP score, 0.28-0.45), punsafe float64 (in [0, 0.5) for UNLIKELY,
[0.5, 0.9) for UNSURE, [0.9, 1] for NSFW), pwatermark float64, LANGUAGE ("en").

Rates: KIND_SHARES for what a fresh caption is about; DUPLICATE_SHARE of the rows with a
caption copy the caption (and truth) of an earlier row, heavy-tailed so that some captions recur
many times. Short alt texts also collide by chance: at 1M rows about 22% of captions repeat an
earlier one (26% of compact ones), within the 10-30% of exact duplicates seen in LAION's captions. NSFW_SHARES for
the NSFW tag; BAD_SHARES (1.5% in all) for rows built to trigger each of the reader's drop
reasons.

`<corpus folder>_ground_truth.parquet` (`ground_truth_path`), beside the corpus folder rather than
in it, where a glob of the folder's parquet files would read it as a shard; one row per corpus row
in corpus order:
- `row_id`: "<shard stem>:<position>", as the reader names rows.
- `wnid`: the one synset the caption is about; null when it is about none or several, or the
  row has no usable caption.
- `kind`: "single" (about `wnid`, written with one of its lemmas), "other_sense" (written with
  a lemma of `decoy` that `wnid` shares, about `wnid`: a "painter" that is an artist, not a
  cougar), "multi" (about all of `mentioned`), "none" (file names, brands, model numbers: no
  WordNet noun on purpose), "no_caption" (the caption is null, empty or not text).
- `lemma`: the WordNet lemma the subject was written with ("single" and "other_sense").
- `surface`: how that lemma is spelt in the caption (inflection, case, space or hyphen), without
  glued punctuation.
- `form`: "base", "plural" or "irregular_plural" (from WordNet's noun.exc).
- `mentioned`: sorted wnids of the synsets written into the caption on purpose; template
  filler words ("photo", "kitchen floor") are WordNet nouns too and are not listed.
- `decoy`: for "other_sense", the synset the lemma was borrowed from.
- `style`: "product", "alt", "sentence", "seo", "multi", "none" or "no_caption".
- `duplicate_of`: for a copied caption, the row_id of the row it copies (truth copied too).
- `bad_reason`: the reader drop reason the row was built to trigger, else null.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.corpus.captions import U_PER_ROW, Caption, CaptionWriter
from imagenot.pipeline.corpus.lexicon import Lexicon
from imagenot.pipeline.corpus.synth_defaults import DEFAULT_CAPTIONS, DEFAULT_SHARD_ROWS, DEFAULT_URL_BASE
from imagenot.pipeline.run.files import atomic_output
from imagenot.pipeline.run.layout import CORPUS_PARTS
from imagenot.pipeline.run.paths import name
from imagenot.wordnet.index import NounIndex, load_index

GROUND_TRUTH_SUFFIX = "_ground_truth.parquet"  # `corpus/` -> `corpus_ground_truth.parquet`, beside it
KIND_SHARES = {"single": 0.72, "other_sense": 0.06, "multi": 0.14, "none": 0.08}
DUPLICATE_SHARE = 0.15
DUPLICATE_POOL = 100_000  # recent distinct captions a duplicate may copy
BAD_SHARES = {
    "caption_missing": 0.004,
    "caption_empty": 0.003,
    "caption_not_text": 0.002,
    "url_missing": 0.003,
    "url_not_http": 0.003,
}
BAD_CAPTIONS = {
    "caption_missing": (None,),
    "caption_empty": ("", "   ", "\t"),
    "caption_not_text": ("...", "★★★★★", "\u200b", "- - -", "!!!", "© ®"),
}
BAD_URLS = (
    "ftp://files.example.org/{}.jpg",
    "file:///etc/passwd",
    "data:image/gif;base64,R0lGOD",
    "//cdn.example.org/{}.jpg",
    "javascript:void(0)",
)
NSFW_SHARES = {"UNLIKELY": 0.95, "UNSURE": 0.03, "NSFW": 0.02}
PUNSAFE_RANGES = {
    "UNLIKELY": (0.0, 0.5),
    "UNSURE": (0.5, 0.9),
    "NSFW": (0.9, 1.0),
}  # as NSFW_SHARES
LICENSES = ("?", "creativecommons.org/licenses/by/2.0/", "creativecommons.org/licenses/by-sa/4.0/")
LICENSE_SHARES = (0.96, 0.02, 0.02)
ASPECTS = (1.0, 4 / 3, 3 / 4, 3 / 2, 2 / 3, 16 / 9)

SHARD_SCHEMA = pa.schema(
    [
        ("SAMPLE_ID", pa.int64()),
        ("URL", pa.string()),
        ("TEXT", pa.string()),
        ("HEIGHT", pa.int64()),
        ("WIDTH", pa.int64()),
        ("LICENSE", pa.string()),
        ("NSFW", pa.string()),
        ("similarity", pa.float64()),
        ("punsafe", pa.float64()),
        ("pwatermark", pa.float64()),
        ("LANGUAGE", pa.string()),
    ]
)
TRUTH_SCHEMA = pa.schema(
    [
        ("row_id", pa.string()),
        ("wnid", pa.string()),
        ("kind", pa.string()),
        ("lemma", pa.string()),
        ("surface", pa.string()),
        ("form", pa.string()),
        ("mentioned", pa.list_(pa.string())),
        ("decoy", pa.string()),
        ("style", pa.string()),
        ("duplicate_of", pa.string()),
        ("bad_reason", pa.string()),
    ]
)


@dataclass(frozen=True)
class SynthResult:
    shards: list[str]
    ground_truth: str
    rows: int


def synth_corpus(
    out: str | os.PathLike,
    rows: int,
    seed: int,
    url_base: str = DEFAULT_URL_BASE,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    index: NounIndex | None = None,
    captions: str = DEFAULT_CAPTIONS,
) -> SynthResult:
    """Write `rows` rows as shards into `out` (any FileSystems folder), which must hold no corpus
    yet, and their ground truth beside it (`ground_truth_path`). Each file appears whole under its
    name or not at all."""
    out = os.fspath(out)
    truth_path = ground_truth_path(out)
    if existing := corpus_files(out):
        raise FileExistsError(f"{out} already holds a corpus ({name(existing[0])}); use an empty folder")
    shards = []
    with (
        atomic_output(truth_path) as truth_stream,
        pq.ParquetWriter(truth_stream, TRUTH_SCHEMA, compression="zstd") as truth_writer,
    ):
        for stem, table, truth in synth_shards(rows, seed, url_base, shard_rows, index, captions):
            shards.append(FileSystems.join(out, f"{stem}.parquet"))
            with atomic_output(shards[-1]) as stream:
                pq.write_table(table, stream, compression="zstd")
            truth_writer.write_table(truth)
    return SynthResult(shards, truth_path, rows)


def ground_truth_path(corpus_dir: str) -> str:
    """Where the ground truth of the corpus in `corpus_dir` lies: beside the folder, named by it."""
    parent, folder = FileSystems.split(corpus_dir.rstrip("/") or corpus_dir)
    if not folder:
        raise ImagenotError(f"{corpus_dir}: give the corpus a folder of its own (its ground truth goes beside it)")
    return FileSystems.join(parent, folder + GROUND_TRUTH_SUFFIX)


def corpus_files(corpus_dir: str) -> list[str]:
    """The shards in `corpus_dir` and the ground truth beside it, as far as they were written."""
    patterns = [FileSystems.join(corpus_dir, CORPUS_PARTS), ground_truth_path(corpus_dir)]
    return sorted(m.path for result in FileSystems.match(patterns) for m in result.metadata_list)


def synth_shards(
    rows: int,
    seed: int,
    url_base: str = DEFAULT_URL_BASE,
    shard_rows: int = DEFAULT_SHARD_ROWS,
    index: NounIndex | None = None,
    captions: str = DEFAULT_CAPTIONS,
) -> Iterator[tuple[str, pa.Table, pa.Table]]:
    """(stem, shard table, ground truth) of each shard `synth_corpus` writes, in order, in memory."""
    rng = np.random.default_rng(seed)
    writer = CaptionWriter(Lexicon(index or load_index(), rng), captions)
    generator = _ShardGenerator(writer, rng, url_base.rstrip("/"), U_PER_ROW[captions])
    for number, start in enumerate(range(0, rows, shard_rows)):
        stem = f"part-{number:05d}"
        yield stem, *generator.shard(stem, start, min(shard_rows, rows - start))


def _draw(rng: np.random.Generator, shares: dict[str, float], n: int) -> np.ndarray:
    """n draws as indices into `shares`; len(shares) where the shares leave mass over."""
    return np.searchsorted(np.cumsum(list(shares.values())), rng.random(n), side="right")


def _labels(rng: np.random.Generator, shares: dict[str, float], n: int, rest: str | None) -> list:
    """n labels drawn with the given shares, `rest` for the mass they leave over."""
    labels = [*shares, rest]
    return [labels[i] for i in _draw(rng, shares, n).tolist()]


class _ShardGenerator:
    """Rows shard by shard from one random stream, with a pool of captions to duplicate."""

    def __init__(self, writer: CaptionWriter, rng: np.random.Generator, url_base: str, draws_per_row: int):
        self.lexicon = writer.lexicon
        self.writer = writer
        self.draws_per_row = draws_per_row
        self.rng = rng
        self.url_base = url_base
        self.pool: list[tuple[str, Caption]] = []

    def shard(self, stem: str, start: int, n: int) -> tuple[pa.Table, pa.Table]:
        rng = self.rng
        kinds = _labels(rng, KIND_SHARES, n, rest="single")
        ranks = self.lexicon.draw_ranks(rng, 3 * n).reshape(n, 3).tolist()
        decoys = self.lexicon.draw_ambiguous_ranks(rng, n).tolist()
        draws = rng.random((n, self.draws_per_row)).tolist()
        duplicate = (rng.random(n) < DUPLICATE_SHARE).tolist()
        pool_draws = rng.random(n).tolist()
        bad = _labels(rng, BAD_SHARES, n, rest=None)
        texts, truth = [], []
        for i in range(n):
            row_id, u = f"{stem}:{i}", draws[i]
            duplicate_of = None
            if bad[i] in BAD_CAPTIONS:
                text = BAD_CAPTIONS[bad[i]][int(u[0] * len(BAD_CAPTIONS[bad[i]]))]
                caption = Caption(text, None, "no_caption", None, None, None, [], None, "no_caption")
            elif duplicate[i] and self.pool:
                # squared draw: low slots are copied more often, so some captions recur a lot
                duplicate_of, caption = self.pool[int(len(self.pool) * pool_draws[i] ** 2)]
            else:
                caption = self._fresh(kinds[i], ranks[i], decoys[i], u)
                self._remember(row_id, caption, pool_draws[i])
            texts.append(caption.text)
            truth.append((row_id, *caption[1:], duplicate_of, bad[i]))
        urls = [self._url(start + i, reason, u[1]) for i, (reason, u) in enumerate(zip(bad, draws))]
        table = self._metadata(rng, np.arange(start, start + n), urls, texts)
        return table, pa.table(list(zip(*truth)), schema=TRUTH_SCHEMA)

    def _fresh(self, kind: str, ranks: list[int], decoy: int, u: list[float]) -> Caption:
        if kind == "single":
            return self.writer.single(ranks[0], u)
        if kind == "other_sense":
            return self.writer.other_sense(decoy, u)
        if kind == "multi":
            return self.writer.multi(ranks, u)
        return self.writer.no_noun(u)

    def _remember(self, row_id: str, caption: Caption, u: float) -> None:
        """Keep the caption for later duplicates; a full pool replaces a random entry."""
        if len(self.pool) < DUPLICATE_POOL:
            self.pool.append((row_id, caption))
        else:
            self.pool[int(u * DUPLICATE_POOL)] = (row_id, caption)

    def _url(self, sample_id: int, bad_reason: str | None, u: float) -> str | None:
        if bad_reason == "url_missing":
            return None
        if bad_reason == "url_not_http":
            return BAD_URLS[int(u * len(BAD_URLS))].format(sample_id)
        return f"{self.url_base}/{sample_id}.jpg"

    @staticmethod
    def _metadata(rng: np.random.Generator, sample_ids: np.ndarray, urls: list, texts: list) -> pa.Table:
        n = len(sample_ids)
        width = np.clip(np.rint(rng.lognormal(np.log(600), 0.45, n)), 64, 4096).astype(np.int64)
        height = np.maximum(np.rint(width / rng.choice(ASPECTS, n)), 32).astype(np.int64)
        tag = np.minimum(_draw(rng, NSFW_SHARES, n), len(NSFW_SHARES) - 1)
        low, high = np.array(list(PUNSAFE_RANGES.values())).T[:, tag]
        unit = rng.random(n)
        punsafe = low + (high - low) * np.where(tag == 0, unit**4, unit)  # UNLIKELY: mostly ~0
        return pa.table(
            {
                "SAMPLE_ID": sample_ids,
                "URL": urls,
                "TEXT": texts,
                "HEIGHT": height,
                "WIDTH": width,
                "LICENSE": rng.choice(LICENSES, n, p=LICENSE_SHARES),
                "NSFW": np.array([*NSFW_SHARES])[tag],
                "similarity": np.clip(rng.normal(0.32, 0.035, n), 0.28, 0.45),
                "punsafe": punsafe,
                "pwatermark": rng.beta(1.0, 6.0, n),
                "LANGUAGE": np.full(n, "en"),
            },
            schema=SHARD_SCHEMA,
        )
