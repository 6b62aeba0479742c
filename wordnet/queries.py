"""Query texts: the text a synset's captions (or images) are compared with, from a template."""

from __future__ import annotations

import string

from imagenot.errors import ImagenotError
from imagenot.wordnet.index import Synset

TEMPLATE_FIELDS = {
    "name": "head word of the synset's name, e.g. 'dog' for dog.n.01",
    "lemma": "first lemma with spaces, e.g. 'hot dog'",
    "lemmas": "all lemmas with spaces, comma-joined",
    "gloss": "the WordNet definition",
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


def query_text(synset: Synset, template: str) -> str:
    """The text a synset's captions are compared with, e.g. 'dog: a member of the genus Canis...'."""
    validate_template(template)
    lemmas = [lemma.replace("_", " ") for lemma in synset.lemmas]
    return template.format(name=synset.head, lemma=lemmas[0], lemmas=", ".join(lemmas), gloss=synset.gloss)
