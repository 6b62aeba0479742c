"""WordNet 3.0 from one pinned source: Debian's `wordnet-base` and `wordnet-sense-index` 1:3.0-37,
prepared once for NLTK's reader and checked against the files' sha256.

Every machine reads the same bytes, whatever else it holds: NLTK's data path (`NLTK_DATA`,
`~/nltk_data`) may have another WordNet (NLTK's own download, 3.1, Open English WordNet), and
the outputs follow its glosses and order, so it is never read. NLTK refuses `/usr/share/wordnet`
as a corpus root (and symlinks into it), and Debian does not ship the `lexnames` file NLTK needs,
so the files are copied into `<cache>/wordnet-3.0-<digest>/` and `lexnames` is generated from
the table in `man 5 lexnames`; the copy is checked before it is renamed into place.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import sys
import warnings
from pathlib import Path

from imagenot.bulk import without_gc
from imagenot.errors import ImagenotError

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
DEBIAN_LEXNAMES_MAN = Path("/usr/share/man/man5/lexnames.5WN.gz")
DEBIAN_VERSION = "1:3.0-37"
FIX_COMMAND = (
    f"apt-get install -y --no-install-recommends wordnet-base={DEBIAN_VERSION} wordnet-sense-index={DEBIAN_VERSION}"
)
WORDNET_VERSION = "3.0"

# The files NLTK's WordNetCorpusReader reads (nouns, verbs, adjectives, adverbs, sense keys, tag
# counts) as Debian's 1:3.0-37 packages install them, and `lexnames` as generated from its man page.
PINNED_SHA256 = {
    "data.noun": "fea17d2f9656611334eac790e5d69e47645fa180c4aa481fb4cd9b3520754ca2",
    "data.verb": "adcf43e35b581e8036d8b5a52d63d9cd3d3b4870b2720d3c03c799df44777bc2",
    "data.adj": "c89120dfc1f046ddff4a631bf9b7e9fa1a36b5e86565a23bf82dbe14f30b88a7",
    "data.adv": "444a63bf3955080ab7524f5079cfc07ff9bc682cb98bdb1db73b0fb9829f1139",
    "index.noun": "a490d99d93d017bf4822fe2f0ffa51fd73911ce271dc7535fade21f8814b5a04",
    "index.verb": "e2ac24816c3a8289dcb72aaa9cf8db81fdf25ec34d792bfc96ac5b7a20c8b4ae",
    "index.adj": "c9865d7b4d1f805bdef82ccdcea5282436e23083e6f6f1b33e716327c4eda810",
    "index.adv": "6f5465ed5758fe9c8a2f7ec17b1300f3aa875756c70ff7cba162f7e71bcf88ea",
    "noun.exc": "2b5d675c380b39ecf595af9fa9d4e7feb1d58c643b0bff08c40ed5bfe41fab7a",
    "verb.exc": "dbbcf9a601b2d77e934e413b91d90e88ec7f933a8b77cfc00602a923b891b42c",
    "adj.exc": "8824cc24bbedd797b9702316b27f07cd4c2b76b629539f0a1276f03926758016",
    "adv.exc": "e7291461b629abfe63301bbe1998cee09fd575ed7107abd7ea9763adb05bf0a8",
    "index.sense": "ce997000ec806318ff1dfadf77d314ac527358e127d7bbe3d1f4e83a1c5c1c2b",
    "cntlist.rev": "a198580b8f705fa02797bba8b13e5cbe4a9f9f40cb1697e774c7fc6a5865b035",
    "lexnames": "c871b6797d2109f563f7a162b64e8ebf18f6f42d00918572846034c7f393a214",
}
# One digest for the whole source: it names the prepared folder and the caches built from it.
WORDNET_DIGEST = hashlib.sha256("".join(f"{n} {d}\n" for n, d in sorted(PINNED_SHA256.items())).encode()).hexdigest()
LEXNAMES = "lexnames"

_SYNTACTIC_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


class WordNetDataError(ImagenotError, RuntimeError):
    """WordNet 3.0 cannot be found or prepared; the message says how to fix it."""


def cache_dir() -> Path:
    """The imagenot cache: `$IMAGENOT_CACHE`, else `~/.cache/imagenot`."""
    return Path(os.environ.get("IMAGENOT_CACHE") or Path.home() / ".cache" / "imagenot")


def wordnet_dir(cache: Path | None = None) -> Path:
    """The prepared copy of the pinned source, named after its digest."""
    return (cache or cache_dir()) / f"wordnet-{WORDNET_VERSION}-{WORDNET_DIGEST[:12]}"


def lexnames_table(man_page: Path = DEBIAN_LEXNAMES_MAN) -> str:
    """The `lexnames` file (number, name, syntactic category; tab separated) from the man page."""
    with gzip.open(man_page, "rt", encoding="utf-8") as f:
        rows = re.findall(r"^(\d\d)\t(\w+\.\w+)\s*\t", f.read(), flags=re.MULTILINE)
    if len(rows) != 45:
        raise WordNetDataError(f"{man_page}: expected the 45 lexicographer files of WordNet 3.0, found {len(rows)}")
    return "".join(f"{num}\t{name}\t{_SYNTACTIC_CATEGORY[name.split('.')[0]]}\n" for num, name in rows)


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def prepare(cache: Path | None = None, source: Path = DEBIAN_WORDNET_DIR, man_page: Path = DEBIAN_LEXNAMES_MAN) -> Path:
    """The prepared copy (made once, with a line on stderr saying so): Debian's files copied, the
    `lexnames` file generated, each checked against `PINNED_SHA256`. Written into a temporary
    folder renamed into place, so an interrupted run leaves nothing half-prepared under the name."""
    final = wordnet_dir(cache)
    if final.is_dir():
        return final
    databases = [name for name in PINNED_SHA256 if name != LEXNAMES]
    missing = [str(source / name) for name in databases if not (source / name).exists()]
    if missing or not man_page.exists():
        raise WordNetDataError(
            f"WordNet 3.0 not found: Debian's WordNet files are missing ({', '.join(missing) or man_page}). "
            f"Fix: {FIX_COMMAND}"
        )
    print(f"imagenot: preparing WordNet {WORDNET_VERSION} once into {final} (a second or two)", file=sys.stderr)
    staging = final.with_name(f".{final.name}-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for name in databases:
            shutil.copyfile(source / name, staging / name)
        (staging / LEXNAMES).write_text(lexnames_table(man_page), encoding="utf-8")
        for name, expected in PINNED_SHA256.items():
            if (found := _sha256(staging / name)) != expected:
                origin = man_page if name == LEXNAMES else source / name
                raise WordNetDataError(
                    f"{origin}: sha256 {found}, expected {expected} (the pinned WordNet {WORDNET_VERSION}, "
                    f"Debian's {DEBIAN_VERSION}); other WordNet files give other classes. Fix: {FIX_COMMAND}"
                )
        staging.rename(final)
    except OSError:
        if not final.is_dir():  # another process finishing first is the one expected failure
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


@without_gc
def load_nltk_wordnet():
    """NLTK's WordNet 3.0 reader over the prepared copy, named to it: no lookup on NLTK's data path."""
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class EnglishWordNetReader(WordNetCorpusReader):
        """Without the offset map NLTK builds at start for Open Multilingual WordNet's tab files
        (more than half of the reader's start-up), which this reader, given none, never reads."""

        def map_wn(self, version="wordnet"):
            return None

    import nltk

    root = str(prepare())
    if root not in nltk.data.path:  # NLTK opens a corpus only under a folder of its data path
        nltk.data.path.append(root)
    with warnings.catch_warnings():  # "multilingual functions are not available": not used
        warnings.simplefilter("ignore", UserWarning)
        return EnglishWordNetReader(root, None)


OTHER_PARTS_OF_SPEECH = {"verb": "a verb", "adj": "an adjective", "adv": "an adverb"}


def other_parts_of_speech(lemma: str) -> list[str]:
    """What WordNet has `lemma` (lower case, underscores for spaces) as, other than a noun: read
    from its index files directly, since NLTK's reader loads every index first (seconds)."""
    root = prepare()
    prefix = f"{lemma} ".encode()
    return [
        part
        for suffix, part in OTHER_PARTS_OF_SPEECH.items()
        if any(line.startswith(prefix) for line in (root / f"index.{suffix}").read_bytes().splitlines())
    ]


def is_noun_offset(offset: int) -> bool:
    """Whether a noun synset starts at `offset` of WordNet's data.noun (a wnid's 8 digits are that
    byte offset): read there directly, without loading WordNet."""
    with (prepare() / "data.noun").open("rb") as data:
        data.seek(offset)
        return data.read(9) == f"{offset:08d} ".encode()


def is_noun_synset_name(name: str) -> bool:
    """Whether `name` (`lemma.n.NN`, as NLTK names synsets) names a noun synset: lemma's line of
    index.noun lists at least NN senses."""
    lemma, _, number = name.lower().rpartition(".n.")
    if not lemma or not (number.isascii() and number.isdigit()) or int(number) < 1:
        return False
    prefix = f"{lemma} n ".encode()
    for line in (prepare() / "index.noun").read_bytes().splitlines():
        if line.startswith(prefix):
            return int(line.split()[2]) >= int(number)  # lemma pos synset_cnt ...
    return False
