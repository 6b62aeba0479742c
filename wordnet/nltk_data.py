"""Find WordNet 3.0 for NLTK offline, or prepare it once from Debian's packages.

NLTK refuses `/usr/share/wordnet` as a corpus root (and symlinks into it), and Debian does not
ship the `lexnames` file NLTK needs, so the files are copied into an NLTK data directory and
`lexnames` is generated from the table in `man 5 lexnames`.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import warnings
from pathlib import Path

from imagenot.bulk import without_gc
from imagenot.errors import ImagenotError

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
DEBIAN_LEXNAMES_MAN = Path("/usr/share/man/man5/lexnames.5WN.gz")
FIX_COMMAND = "apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index"
WORDNET_VERSION = "3.0"

# Files NLTK's WordNetCorpusReader reads for nouns, verbs, adjectives and adverbs.
_DATABASE_FILES = [f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")] + [
    "noun.exc",
    "verb.exc",
    "adj.exc",
    "adv.exc",
    "index.sense",
    "cntlist.rev",
]

_SYNTACTIC_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


class WordNetDataError(ImagenotError, RuntimeError):
    """WordNet 3.0 cannot be found or prepared; the message says how to fix it."""


def cache_dir() -> Path:
    """The imagenot cache: `$IMAGENOT_CACHE`, else `~/.cache/imagenot`."""
    return Path(os.environ.get("IMAGENOT_CACHE") or Path.home() / ".cache" / "imagenot")


def nltk_data_dir() -> Path:
    """Where imagenot prepares NLTK data: `$IMAGENOT_NLTK_DATA`, else `<cache>/nltk_data`."""
    override = os.environ.get("IMAGENOT_NLTK_DATA")
    return Path(override) if override else cache_dir() / "nltk_data"


def lexnames_table(man_page: Path = DEBIAN_LEXNAMES_MAN) -> str:
    """The `lexnames` file (number, name, syntactic category; tab separated) from the man page."""
    with gzip.open(man_page, "rt", encoding="utf-8") as f:
        rows = re.findall(r"^(\d\d)\t(\w+\.\w+)\s*\t", f.read(), flags=re.MULTILINE)
    if len(rows) != 45:
        raise WordNetDataError(f"{man_page}: expected the 45 lexicographer files of WordNet 3.0, found {len(rows)}")
    return "".join(f"{num}\t{name}\t{_SYNTACTIC_CATEGORY[name.split('.')[0]]}\n" for num, name in rows)


def prepare_from_debian(target: Path | None = None, source: Path = DEBIAN_WORDNET_DIR) -> Path:
    """Copy Debian's WordNet into `target` (an NLTK data root); returns the root.

    Writes into a temporary folder renamed into place, so an interrupted run leaves nothing
    half-prepared under the final name.
    """
    root = target or nltk_data_dir()
    final = root / "corpora" / "wordnet"
    if (final / "lexnames").exists():
        return root
    missing = [name for name in _DATABASE_FILES if not (source / name).exists()]
    if missing or not DEBIAN_LEXNAMES_MAN.exists():
        raise WordNetDataError(
            f"WordNet 3.0 not found: no NLTK 'wordnet' corpus on NLTK's data path and "
            f"Debian's WordNet files are missing ({', '.join(missing) or DEBIAN_LEXNAMES_MAN}). "
            f"Fix: {FIX_COMMAND}"
        )
    staging = final.with_name(f".wordnet-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in _DATABASE_FILES:
        shutil.copyfile(source / name, staging / name)
    (staging / "lexnames").write_text(lexnames_table(), encoding="utf-8")
    try:
        staging.rename(final)
    except OSError:  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)
    return root


def wordnet_root():
    """The WordNet corpus folder NLTK reads: on NLTK's data path, else imagenot's prepared copy."""
    import nltk

    own_root = str(nltk_data_dir())
    if own_root not in nltk.data.path:  # NLTK only opens corpora under its data path
        nltk.data.path.append(own_root)
    try:
        return nltk.data.find("corpora/wordnet")
    except LookupError:
        prepare_from_debian()
        return nltk.data.find("corpora/wordnet")


@without_gc
def load_nltk_wordnet():
    """NLTK's WordNet 3.0 reader: from NLTK's data path, else from imagenot's prepared copy."""
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class EnglishWordNetReader(WordNetCorpusReader):
        """Without the offset map NLTK builds at start for Open Multilingual WordNet's tab files
        (more than half of the reader's start-up), which this reader, given none, never reads."""

        def map_wn(self, version="wordnet"):
            return None

    path = wordnet_root()
    with warnings.catch_warnings():  # "multilingual functions are not available": not used
        warnings.simplefilter("ignore", UserWarning)
        reader = EnglishWordNetReader(path, None)
    if reader.get_version() != WORDNET_VERSION:
        raise WordNetDataError(
            f"{path} holds WordNet {reader.get_version()}; imagenot needs {WORDNET_VERSION} "
            f"(ImageNet wnids are 3.0 offsets). Remove it from NLTK_DATA or run: {FIX_COMMAND}"
        )
    return reader


OTHER_PARTS_OF_SPEECH = {"verb": "a verb", "adj": "an adjective", "adv": "an adverb"}


def other_parts_of_speech(lemma: str) -> list[str]:
    """What WordNet has `lemma` (lower case, underscores for spaces) as, other than a noun: read
    from its index files directly, since NLTK's reader loads every index first (seconds)."""
    root = Path(str(wordnet_root()))
    prefix = f"{lemma} ".encode()
    return [
        part
        for suffix, part in OTHER_PARTS_OF_SPEECH.items()
        if any(line.startswith(prefix) for line in (root / f"index.{suffix}").read_bytes().splitlines())
    ]


def _database() -> Path:
    """WordNet's files: imagenot's prepared copy when there is one (no NLTK import, seconds on a
    busy machine), else the folder NLTK reads."""
    own = nltk_data_dir() / "corpora" / "wordnet"
    return own if (own / "data.noun").exists() else Path(str(wordnet_root()))


def is_noun_offset(offset: int) -> bool:
    """Whether a noun synset starts at `offset` of WordNet's data.noun (a wnid's 8 digits are that
    byte offset): read there directly, without loading WordNet."""
    with (_database() / "data.noun").open("rb") as data:
        data.seek(offset)
        return data.read(9) == f"{offset:08d} ".encode()


def is_noun_synset_name(name: str) -> bool:
    """Whether `name` (`lemma.n.NN`, as NLTK names synsets) names a noun synset: lemma's line of
    index.noun lists at least NN senses."""
    lemma, _, number = name.lower().rpartition(".n.")
    if not lemma or not (number.isascii() and number.isdigit()) or int(number) < 1:
        return False
    prefix = f"{lemma} n ".encode()
    for line in (_database() / "index.noun").read_bytes().splitlines():
        if line.startswith(prefix):
            return int(line.split()[2]) >= int(number)  # lemma pos synset_cnt ...
    return False
