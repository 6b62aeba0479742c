"""Senses web captions use that WordNet 3.0 lacks: desktop "wallpaper", an image "thumbnail", a
"stock" photo, "vector" graphics, "blush" the cosmetic, and the brands and works a common word often
names there ("canon" the camera maker). WordNet dates from 2006; a sense model that must choose among
its senses gives such a caption a wrong one, and a class whose captions mostly use the web sense is
wrong whole.

`web_senses.tsv` lists them, one line a sense: the word (normalised as `WordSenses` keys words:
"t shirt"), `kind` (`sense`: a common-noun meaning; `name`: a brand, product line, company or work the
word often stands for), a gloss written for this project, `kind_of` (what kind of thing it is), the
WordNet senses it is confused with, and the captions of the shared LAION sample it was read in
(`benchmarks/data/web_senses/README.md` says how it was written). The sense scorers score a word's web
senses beside its WordNet ones (`senses.sentence.SenseContrast`): a caption whose word a web sense
wins is dropped as `web_sense`.

A web sense's id is `web:<word>.<n>` (n counts its word's senses from 1, in the file's order), which
no WordNet id (`n` and eight digits) can be.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

from imagenot.errors import ImagenotError
from imagenot.wordnet.index import NounIndex
from imagenot.wordnet.senses import sense_label

PREFIX = "web:"
KINDS = ("sense", "name")
COLUMNS = ("word", "kind", "gloss", "kind_of", "confused_with", "examples")
FILE = "web_senses.tsv"


@dataclass(frozen=True)
class WebSense:
    id: str  # web:wallpaper.1
    word: str  # normalised: "t shirt"
    kind: str  # sense or name
    gloss: str
    kind_of: str  # "image", "company"
    confused_with: tuple[str, ...]  # WordNet synset names: wallpaper.n.01
    examples: tuple[str, ...]  # row ids of the shared LAION sample


def is_web_sense(sense: str) -> bool:
    return sense.startswith(PREFIX)


class WebLexicon:
    """The web senses by word and by id."""

    def __init__(self, senses: Iterable[WebSense]):
        self._by_id = {sense.id: sense for sense in senses}
        by_word: dict[str, list[str]] = {}
        for sense in self._by_id.values():
            by_word.setdefault(sense.word, []).append(sense.id)
        self._by_word = {word: tuple(ids) for word, ids in by_word.items()}

    def __getitem__(self, sense_id: str) -> WebSense:
        return self._by_id[sense_id]

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self):
        return iter(self._by_id.values())

    def of_word(self, word: str) -> tuple[str, ...]:
        """The ids of a normalised word's web senses, in the file's order; () if it has none."""
        return self._by_word.get(word, ())

    def words(self) -> frozenset[str]:
        return frozenset(self._by_word)


NO_WEB_SENSES = WebLexicon(())


def read_lexicon(text: str, source: str = FILE) -> WebLexicon:
    """A lexicon file's senses; a line that is not one names its line and field."""
    reader = csv.DictReader(io.StringIO(text), delimiter="\t")
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ImagenotError(f"{source}: no column {', '.join(missing)} (found {reader.fieldnames})")
    senses, counts = [], {}
    for line, row in enumerate(reader, start=2):
        empty = [c for c in COLUMNS if not (row[c] or "").strip()]
        if empty:
            raise ImagenotError(f"{source}, line {line}: empty {', '.join(empty)}")
        if row["kind"] not in KINDS:
            raise ImagenotError(f"{source}, line {line}: kind {row['kind']!r}, expected one of {', '.join(KINDS)}")
        word = row["word"].strip()
        counts[word] = counts.get(word, 0) + 1
        senses.append(
            WebSense(
                f"{PREFIX}{word}.{counts[word]}",
                word,
                row["kind"],
                row["gloss"].strip(),
                row["kind_of"].strip(),
                tuple(name.strip() for name in row["confused_with"].split(",") if name.strip()),
                tuple(row["examples"].split()),
            )
        )
    return WebLexicon(senses)


@functools.cache
def _packaged() -> str:
    return resources.files("imagenot.labels").joinpath(FILE).read_text(encoding="utf-8")


@functools.cache
def web_lexicon() -> WebLexicon:
    """The packaged lexicon, read once per process."""
    return read_lexicon(_packaged())


def lexicon_digest() -> str:
    """The packaged lexicon's digest: what a stage that scored its senses records."""
    return hashlib.sha256(_packaged().encode("utf-8")).hexdigest()[:16]


def query_text(sense: WebSense, template: str) -> str:
    """A web sense's text for a sense query template (`wordnet.queries`' fields): its word stands for
    the lemmas and the name, its kind for the hypernym and the category, its gloss for the gloss
    (and for the hyponyms and examples it has none of)."""
    word = sense.word
    return template.format(
        name=word,
        lemma=word,
        lemmas=word,
        gloss=sense.gloss,
        hypernym=sense.kind_of,
        examples=sense.gloss,
        hyponyms=sense.gloss,
        category=sense.kind_of,
    ).strip()


def any_sense_name(index: NounIndex, sense: str) -> str:
    """A WordNet sense's synset name (crane.n.04), or a web sense's id (web:wallpaper.1)."""
    return sense if is_web_sense(sense) else index[sense].name


def any_sense_label(index: NounIndex, sense: str) -> str:
    """`wordnet.senses.sense_label`, or a web sense's id with its kind: "web:wallpaper.1 (image)"."""
    if is_web_sense(sense):
        return f"{sense} ({web_lexicon()[sense].kind_of})"
    return sense_label(index, sense)


def any_sense_gloss(index: NounIndex, sense: str) -> str:
    """A WordNet sense's gloss, or a web sense's."""
    return web_lexicon()[sense].gloss if is_web_sense(sense) else index[sense].gloss
