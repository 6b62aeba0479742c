"""Caption-to-gloss similarity: one query text per synset from a template, cosine scores.

Embeddings are L2-normalised, so cosine similarity is a row-wise dot product.
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass

import numpy as np

from pipeline.score.encoders import TextEncoder
from wordnet.index import NounIndex, Synset

TEMPLATE_FIELDS = {
    "name": "head word of the synset's name, e.g. 'dog' for dog.n.01",
    "lemma": "first lemma with spaces, e.g. 'hot dog'",
    "lemmas": "all lemmas with spaces, comma-joined",
    "gloss": "the WordNet definition",
}
LAIONET_TEMPLATE = "{name} which is {gloss}"


class TemplateError(ValueError):
    """A query template uses a field that does not exist or is malformed."""


def validate_template(template: str) -> None:
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    except ValueError as err:
        raise TemplateError(f"query template {template!r}: {err}") from err
    if not fields:
        raise TemplateError(f"query template {template!r}: uses no field; expected some of {sorted(TEMPLATE_FIELDS)}")
    for field in fields:
        if field not in TEMPLATE_FIELDS:
            raise TemplateError(
                f"query template {template!r}: unknown field {{{field}}}; "
                f"expected one of {', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)}"
            )


def query_text(synset: Synset, template: str) -> str:
    """The text a synset's captions are compared with, e.g. 'dog: a member of the genus Canis...'."""
    validate_template(template)
    lemmas = [lemma.replace("_", " ") for lemma in synset.lemmas]
    return template.format(name=synset.head, lemma=lemmas[0], lemmas=", ".join(lemmas), gloss=synset.gloss)


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
