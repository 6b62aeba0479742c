"""Query texts: the text a synset's captions (or images) are compared with, from a template."""

from __future__ import annotations

import string

from imagenot.errors import ImagenotError
from imagenot.wordnet.index import NounIndex, Synset, load_index

HYPONYMS_SHOWN = 12
TEMPLATE_FIELDS = {
    "name": "head word of the synset's name, e.g. 'dog' for dog.n.01",
    "lemma": "first lemma with spaces, e.g. 'hot dog'",
    "lemmas": "all lemmas with spaces, comma-joined",
    "gloss": "the WordNet definition",
    "hypernym": "first lemma of the first hypernym with spaces, e.g. 'canine' for dog.n.01 (none at the root: '')",
    "examples": "WordNet's usage examples, semicolon-joined ('' when it has none)",
    "hyponyms": f"first lemmas of the first {HYPONYMS_SHOWN} hyponyms with spaces, comma-joined, e.g. 'fountain pen, "
    "ballpoint' for pen.n.01 ('' when it has none)",
    "category": "the lexicographer file's category, e.g. 'artifact', 'animal', 'food'",
}
LAIONET_TEMPLATE = "{name} which is {gloss}"


class TemplateError(ImagenotError, ValueError):
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


def query_text(synset: Synset, template: str, index: NounIndex | None = None) -> str:
    """The text a synset's captions are compared with, e.g. 'dog: a member of the genus Canis...'.
    `{hypernym}` and `{hyponyms}` read the `index` (default: WordNet's)."""
    validate_template(template)
    lemmas = [lemma.replace("_", " ") for lemma in synset.lemmas]
    index = index or load_index()
    hypernym = _first_lemma(index, synset.hypernyms[0]) if synset.hypernyms else ""
    hyponyms = ", ".join(_first_lemma(index, wnid) for wnid in synset.hyponyms[:HYPONYMS_SHOWN])
    return template.format(
        name=synset.head,
        lemma=lemmas[0],
        lemmas=", ".join(lemmas),
        gloss=synset.gloss,
        hypernym=hypernym,
        examples="; ".join(synset.examples),
        hyponyms=hyponyms,
        category=synset.lexname.split(".", 1)[1],
    ).strip()


def _first_lemma(index: NounIndex, wnid: str) -> str:
    return index[wnid].lemmas[0].replace("_", " ")
