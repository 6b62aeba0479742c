"""`corpus.preset`: the column map and row-level NSFW settings of the corpora people hold, as
their publishers ship them (README: "Corpus presets", with where each schema is documented).

A preset fills `corpus.columns`, `corpus.column_names` (text files without a header) and the
row NSFW settings of `selection`; every key the config sets itself wins, key by key. The
resolved values are what the run's config.yaml and card show. A mapped optional column a file
lacks is simply not read; a column an enabled setting needs is checked before any stage
(`pipeline.corpus.preflight`).
"""

from __future__ import annotations

_OFF = {"allowed_nsfw_tags": None, "max_punsafe": None}
_NO_OPTIONAL = {
    "width": None,
    "height": None,
    "similarity": None,
    "punsafe": None,
    "nsfw": None,
    "sample_id": None,
    "license": None,
}

# preset -> corpus.columns, corpus.column_names, selection's row NSFW settings
PRESETS: dict[str, dict] = {
    # LAION-400M and LAION-5B metadata (laion2B-en and its -joined parquet): the defaults.
    "laion": {"columns": {}, "selection": {}},
    # Re-LAION-5B (research / research-safe): url and caption; NSFW filtered at source.
    "relaion": {
        "columns": {**_NO_OPTIONAL, "url": "url", "caption": "caption", "similarity": "similarity"},
        "selection": _OFF,
    },
    # DataComp CommonPool and DataComp-1B parquet metadata; NSFW filtered at source.
    "datacomp": {
        "columns": {
            **_NO_OPTIONAL,
            "url": "url",
            "caption": "text",
            "width": "original_width",
            "height": "original_height",
            "similarity": "clip_b32_similarity_score",
            "sample_id": "uid",
        },
        "selection": _OFF,
    },
    # COYO-700M parquet; NSFW images filtered at source, the OpenNSFW2 score kept as punsafe.
    "coyo": {
        "columns": {
            **_NO_OPTIONAL,
            "url": "url",
            "caption": "text",
            "width": "width",
            "height": "height",
            "similarity": "clip_similarity_vitb32",
            "punsafe": "nsfw_score_opennsfw2",
            "sample_id": "id",
        },
        "selection": _OFF,
    },
    # Conceptual Captions: TSV without a header, caption then URL; filtered at source.
    "cc3m": {
        "columns": {**_NO_OPTIONAL, "url": "url", "caption": "caption"},
        "column_names": ["caption", "url"],
        "selection": _OFF,
    },
    # Conceptual 12M: TSV without a header, URL then caption; filtered at source.
    "cc12m": {
        "columns": {**_NO_OPTIONAL, "url": "url", "caption": "caption"},
        "column_names": ["url", "caption"],
        "selection": _OFF,
    },
}
PRESET_NAMES = tuple(PRESETS)


def apply_preset(raw: object) -> object:
    """The raw config mapping with `corpus.preset`'s values under the keys the config leaves unset."""
    if not isinstance(raw, dict) or not isinstance(raw.get("corpus"), dict):
        return raw
    corpus = raw["corpus"]
    preset = PRESETS.get(corpus.get("preset"))
    if preset is None:  # none, or a name the config's validation refuses
        return raw
    own_columns = corpus.get("columns", {})
    columns = {**preset["columns"], **own_columns} if isinstance(own_columns, dict) else own_columns
    resolved = {**corpus, "columns": columns}
    if "column_names" in preset and "column_names" not in corpus:
        resolved["column_names"] = preset["column_names"]
    selection = raw.get("selection") if isinstance(raw.get("selection"), dict) else {}
    return {**raw, "corpus": resolved, "selection": {**preset["selection"], **selection}}
