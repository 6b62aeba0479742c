"""Caption-to-gloss similarity: one query text per synset from a template, cosine scores.

Embeddings are L2-normalised, so cosine similarity is a row-wise dot product.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from imagenot.labels.senses.encoders import TextEncoder
from imagenot.wordnet.index import NounIndex
from imagenot.wordnet.queries import query_text, validate_template


@dataclass(frozen=True)
class QueryEmbeddings:
    """One normalised query vector per synset, rows in sorted wnid order."""

    wnids: tuple[str, ...]
    vectors: np.ndarray  # float32 (len(wnids), dim)

    @classmethod
    def build(cls, index: NounIndex, wnids: list[str], template: str, encoder: TextEncoder) -> QueryEmbeddings:
        validate_template(template)
        ordered = tuple(sorted(set(wnids)))
        missing = [w for w in ordered if w not in index]
        if missing:
            raise KeyError(f"not WordNet 3.0 noun synsets: {', '.join(missing[:5])}")
        vectors = encoder.encode([query_text(index[w], template) for w in ordered])
        return cls(ordered, vectors)

    @functools.cached_property
    def _row_of(self) -> dict[str, int]:
        return {wnid: row for row, wnid in enumerate(self.wnids)}

    def rows(self, wnids: list[str] | np.ndarray) -> np.ndarray:
        """Row of each wnid in `vectors`; an unknown wnid is an error naming it."""
        try:
            return np.fromiter((self._row_of[w] for w in wnids), dtype=np.int64, count=len(wnids))
        except KeyError as err:
            raise KeyError(f"no query embedding for synset {err.args[0]!r}") from None


def score_batch(caption_vectors: np.ndarray, wnids: list[str] | np.ndarray, queries: QueryEmbeddings) -> np.ndarray:
    """Cosine similarity of caption i with the query of synset wnids[i], float32 (n,)."""
    if len(caption_vectors) != len(wnids):
        raise ValueError(f"{len(caption_vectors)} caption vectors but {len(wnids)} wnids")
    query_rows = queries.vectors[queries.rows(wnids)]
    return np.einsum("ij,ij->i", caption_vectors, query_rows).astype(np.float32)
