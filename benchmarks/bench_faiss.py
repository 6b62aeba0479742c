"""Near-duplicate search speed and recall on 1M CLIP-sized vectors: the duplicates audit's
`knn` against exhaustive search.

The vectors (float32, dim 512, L2-normalised) are clustered like image embeddings of many
classes: `--clusters` random centres plus Gaussian noise (nearest non-duplicate neighbours at
cosine ~0.5). `--planted` pairs are near duplicates: a copy of another vector plus small noise
(cosine 0.96-0.99), some in the train and test halves alike.

- audit: `pipeline.audit.duplicates.knn` over all vectors as queries and database, with the
  default `ImageAudit` settings (above `exact_search_max` vectors: IVF with sqrt(n) lists,
  `ivf_probes` visited, 4-bit fast-scan PQ codes, `ann_rerank` * k candidates re-ranked by exact
  cosine). Build (training included) and search are timed; `--queries` (default all) sets how many of
  the vectors are searched, for quick runs (the figure is then extrapolated and says so).
- baseline: exhaustive numpy search (matrix products in blocks) for a random `--sample` of the
  queries; exhaustive faiss search (IndexFlatIP) over all of them is timed on the same sample
  and extrapolated to all queries.
- recall: of the sample's true neighbours at cosine >= the near-duplicate threshold (numpy,
  exhaustive), the fraction the audit's search returns; and of the planted pairs, the fraction
  found. Exhaustive faiss must agree with numpy on the sample (the script exits 1 otherwise).

The last line is JSON.

    python benchmarks/bench_faiss.py [--vectors 1000000] [--queries N] [--sample 2000]
"""

from __future__ import annotations

import json
import time

import click
import faiss
import numpy as np

from imagenot.pipeline.audit.duplicates import knn, near_pairs
from imagenot.pipeline.audit.embeddings import ImageAudit


def clustered_vectors(n: int, dim: int, clusters: int, planted: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, dim) unit vectors in clusters, and the (planted, 2) near-duplicate pairs made in them."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim), dtype=np.float32)
    vectors = np.empty((n, dim), np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        vectors[start:stop] = centres[rng.integers(0, clusters, stop - start)]
        vectors[start:stop] += 1.2 * rng.standard_normal((stop - start, dim), dtype=np.float32)
    faiss.normalize_L2(vectors)
    rows = rng.choice(n, 2 * planted, replace=False)
    pairs = np.sort(rows.reshape(planted, 2), axis=1)
    noise = rng.uniform(0.15, 0.28, (planted, 1)).astype(np.float32) / np.sqrt(dim)
    vectors[pairs[:, 1]] = vectors[pairs[:, 0]] + noise * rng.standard_normal((planted, dim), dtype=np.float32)
    faiss.normalize_L2(vectors)
    return vectors, pairs


def numpy_neighbours(
    database: np.ndarray, queries: np.ndarray, k: int, block: int = 100_000
) -> tuple[np.ndarray, np.ndarray]:
    """Exhaustive k-NN by matrix products, block by block: (cosines, indices), best first."""
    best_sims = np.full((len(queries), k), -np.inf, np.float32)
    best_ids = np.full((len(queries), k), -1, np.int64)
    for start in range(0, len(database), block):
        sims = queries @ database[start : start + block].T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        cand_sims = np.concatenate([best_sims, np.take_along_axis(sims, top, 1)], 1)
        cand_ids = np.concatenate([best_ids, top + start], 1)
        order = np.argsort(-cand_sims, axis=1, kind="stable")[:, :k]
        best_sims, best_ids = np.take_along_axis(cand_sims, order, 1), np.take_along_axis(cand_ids, order, 1)
    return best_sims, best_ids


def timed(run):
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


@click.command()
@click.option("--vectors", "n", default=1_000_000, show_default=True)
@click.option("--dim", default=512, show_default=True)
@click.option("--clusters", default=1000, show_default=True)
@click.option("--planted", default=5000, show_default=True, help="near-duplicate pairs planted")
@click.option("--queries", default=None, type=int, help="vectors searched by the audit's index (default: all)")
@click.option("--sample", default=2000, show_default=True, help="queries checked against exhaustive search")
@click.option("--seed", default=0, show_default=True)
def main(n: int, dim: int, clusters: int, planted: int, queries: int | None, sample: int, seed: int) -> None:
    settings = ImageAudit()
    k, threshold = settings.neighbours + 1, settings.near_duplicate_threshold
    vectors, pairs = clustered_vectors(n, dim, clusters, planted, seed)
    queries = n if queries is None else queries
    click.echo(f"{n:,} vectors, dim {dim}, {faiss.omp_get_max_threads()} threads; searching {queries:,} queries, k={k}")

    audit_s, (sims, ids) = timed(
        lambda: knn(vectors, vectors[:queries], k, settings.exact_search_max, settings.ivf_probes, settings.ann_rerank)
    )
    audit_all_s = audit_s * n / queries
    click.echo(
        f"audit search (build included): {audit_s:.1f} s"
        + ("" if queries == n else f", all {n:,}: ~{audit_all_s:.0f} s")
    )

    rows = np.sort(np.random.default_rng(seed + 1).choice(queries, sample, replace=False))
    numpy_s, (true_sims, true_ids) = timed(lambda: numpy_neighbours(vectors, vectors[rows], k))
    flat_s, (flat_sims, _) = timed(lambda: knn(vectors, vectors[rows], k, n, 1))
    flat_all_s = flat_s * n / sample
    click.echo(
        f"exhaustive on {sample:,} queries: numpy {numpy_s:.1f} s, faiss flat {flat_s:.1f} s "
        f"(all {n:,}: ~{flat_all_s / 60:.0f} min)"
    )
    disagreements = int(np.sum(np.abs(np.sort(flat_sims, 1) - np.sort(true_sims, 1)) > 1e-4))
    click.echo(f"faiss flat vs numpy: {disagreements} differing cosines")

    truth = true_sims >= threshold
    truth &= true_ids != rows[:, None]
    found = np.array([np.isin(true_ids[i][truth[i]], ids[rows[i]]).sum() for i in range(sample)])
    pair_recall = float(found.sum() / max(1, truth.sum()))
    a, b, _ = near_pairs(sims, ids, threshold)
    searched = pairs[(pairs[:, 0] < queries) | (pairs[:, 1] < queries)]
    planted_found = len(set(map(tuple, searched.tolist())) & set(zip(a.tolist(), b.tolist())))
    planted_recall = planted_found / max(1, len(searched))
    click.echo(f"recall of neighbours at cosine >= {threshold} on the sample: {pair_recall:.4f} ({truth.sum()} true)")
    click.echo(f"planted pairs found: {planted_found}/{len(searched)} ({planted_recall:.4f})")
    click.echo(
        json.dumps(
            {
                "vectors": n,
                "dim": dim,
                "queries": queries,
                "k": k,
                "index": "flat" if n <= settings.exact_search_max else "ivf-pq4fs-refine",
                "ivf_probes": settings.ivf_probes,
                "ann_rerank": settings.ann_rerank,
                "audit_s": round(audit_s, 1),
                "audit_all_queries_s": round(audit_all_s, 1),
                "flat_all_queries_s_extrapolated": round(flat_all_s, 1),
                "speedup_vs_flat": round(flat_all_s / audit_all_s, 1),
                "numpy_sample_s": round(numpy_s, 1),
                "near_duplicate_recall": round(pair_recall, 4),
                "planted_recall": round(planted_recall, 4),
                "flat_vs_numpy_disagreements": disagreements,
            }
        )
    )
    if disagreements:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
