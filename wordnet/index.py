"""A compact index over all WordNet 3.0 noun synsets, keyed by ImageNet-style wnid.

Built once from NLTK (about 8 s) and cached as gzipped JSON (about 1 s to load), so every
command and every pipeline worker gets the same plain-data view of the noun hierarchy.

Each relation's wnids are sorted: NLTK 3.10 keeps a synset's pointers in a set, so its
`hypernyms()`, `instance_hypernyms()` and the rest come in an order that follows the building
process's PYTHONHASHSEED, and a cache built once would carry that order into every output after it.

Hypernyms and hyponyms include the instance relations (`instance_hypernyms`,
`instance_hyponyms`): "Paris" sits under "national capital" as it does in ImageNet's tree.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import json
import os
import re
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from imagenot.bulk import without_gc
from imagenot.wordnet.nltk_data import WORDNET_DIGEST, WORDNET_VERSION, cache_dir, load_nltk_wordnet

ROOT_WNID = "n00001740"  # entity.n.01
_FORMAT = 3  # bump when a cached field's content changes; the file name also follows Synset's fields
WNID_PATTERN = re.compile(r"^([nvasr])([0-9]{8})$")  # ASCII digits: \d also takes "０" and "²"


def wnid_of_offset(offset: int) -> str:
    return f"n{offset:08d}"


@dataclass(frozen=True, slots=True)
class Synset:
    wnid: str
    name: str  # NLTK's name, e.g. "dog.n.01"
    lemmas: tuple[str, ...]  # as WordNet spells them: "hot_dog", "Golden_Retriever"
    gloss: str
    lexname: str  # lexicographer file, e.g. "noun.animal"
    hypernyms: tuple[str, ...]  # sorted wnids, instance hypernyms included
    hyponyms: tuple[str, ...]  # sorted wnids, instance hyponyms included
    depth: int  # shortest hypernym path to entity.n.01, which has 0
    usage_domains: tuple[str, ...] = ()  # sorted wnids of WordNet's usage labels, e.g. ethnic_slur.n.01
    examples: tuple[str, ...] = ()  # WordNet's usage examples
    lemma_counts: tuple[int, ...] = ()  # each lemma's tagged-corpus count (NLTK's `Lemma.count()`), as `lemmas`
    # each lemma's own usage labels (NLTK `Lemma.usage_domains()`), as `lemmas`: "blackamoor" in black.n.05
    lemma_usage_domains: tuple[tuple[str, ...], ...] = ()
    instance_of: tuple[str, ...] = ()  # sorted wnids of its instance hypernyms: set for named people, places, works

    @property
    def head(self) -> str:
        """The head word of `name`, as LAIONet uses it: "dog" for "dog.n.01"."""
        return self.name.rsplit(".", 2)[0].replace("_", " ")


class NounIndex:
    """All noun synsets with their lemmas, glosses and hierarchy, plus noun.exc."""

    def __init__(self, synsets: dict[str, Synset], irregular: dict[str, tuple[str, ...]]):
        self.synsets = synsets
        self.irregular = irregular  # inflected form -> base lemmas, from noun.exc
        self._by_name = {s.name: s for s in synsets.values()}
        self._ancestors: dict[str, frozenset[str]] = {}  # memo of ancestors(), per instance
        self._descendants: dict[str, frozenset[str]] = {}  # memo of descendants(), per instance

    version = WORDNET_VERSION

    def __getitem__(self, wnid: str) -> Synset:
        return self.synsets[wnid]

    def __contains__(self, wnid: object) -> bool:
        return wnid in self.synsets

    def __iter__(self):
        return iter(self.synsets.values())

    def __len__(self) -> int:
        return len(self.synsets)

    def by_name(self, name: str) -> Synset:
        return self._by_name[name]

    @functools.cached_property
    @without_gc
    def lemma_synsets(self) -> dict[str, tuple[str, ...]]:
        """Each lemma as WordNet spells it -> the wnids of the synsets that have it."""
        out: dict[str, list[str]] = {}
        for synset in self:
            for lemma in synset.lemmas:
                out.setdefault(lemma, []).append(synset.wnid)
        return {lemma: tuple(wnids) for lemma, wnids in out.items()}

    def ancestors(self, wnid: str) -> frozenset[str]:
        """Every synset on any hypernym path from `wnid` to the root, `wnid` excluded."""
        return self._closure(wnid, "hypernyms", self._ancestors)

    def descendants(self, wnid: str) -> frozenset[str]:
        """Every synset below `wnid` through hyponym links, `wnid` excluded."""
        return self._closure(wnid, "hyponyms", self._descendants)

    def _closure(self, wnid: str, relation: str, memo: dict[str, frozenset[str]]) -> frozenset[str]:
        """Every synset `relation` links lead to from `wnid`, `wnid` excluded, kept in `memo`."""
        if wnid not in memo:
            found: set[str] = set()
            for linked in getattr(self.synsets[wnid], relation):
                found.add(linked)
                found |= self._closure(linked, relation, memo)
            memo[wnid] = frozenset(found)
        return memo[wnid]


def _wnids(synsets) -> tuple[str, ...]:
    """The synsets' wnids, sorted (NLTK gives them in its pointer set's order)."""
    return tuple(sorted(wnid_of_offset(s.offset()) for s in synsets))


def tag_counts(wn) -> dict[str, int]:
    """Each sense key's tagged-corpus count from cntlist.rev ("key sense_number count" lines), read
    once: what NLTK's `Lemma.count()` returns, which binary-searches the file for each lemma (half
    the index's build time)."""
    with wn.open("cntlist.rev") as f:
        return {key: int(count) for key, _, count in (line.split() for line in f)}


def _build_from_nltk() -> NounIndex:
    wn = load_nltk_wordnet()
    counts = tag_counts(wn)
    raw = {}
    for s in wn.all_synsets("n"):
        raw[wnid_of_offset(s.offset())] = (
            s.name(),
            tuple(s.lemma_names()),
            s.definition(),
            s.lexname(),
            _wnids(s.hypernyms() + s.instance_hypernyms()),
            _wnids(s.hyponyms() + s.instance_hyponyms()),
            _wnids(s.usage_domains()),
            tuple(s.examples()),
            tuple(counts.get(lemma.key(), 0) for lemma in s.lemmas()),
            tuple(_wnids(d.synset() for d in lemma.usage_domains()) for lemma in s.lemmas()),
            _wnids(s.instance_hypernyms()),
        )
    depth = _shortest_depths({wnid: fields[5] for wnid, fields in raw.items()})
    synsets = {
        wnid: Synset(
            wnid,
            *fields[:6],
            depth=depth[wnid],
            usage_domains=fields[6],
            examples=fields[7],
            lemma_counts=fields[8],
            lemma_usage_domains=fields[9],
            instance_of=fields[10],
        )
        for wnid, fields in sorted(raw.items())
    }
    irregular: dict[str, tuple[str, ...]] = {}
    with wn.open("noun.exc") as f:
        for line in f:
            form, *bases = line.split()
            irregular[form] = tuple(bases)
    return NounIndex(synsets, irregular)


def _shortest_depths(hyponyms: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """Breadth-first from the root: the first time a synset is reached is its shortest depth."""
    depth = {ROOT_WNID: 0}
    queue = deque([ROOT_WNID])
    while queue:
        wnid = queue.popleft()
        for child in hyponyms[wnid]:
            if child not in depth:
                depth[child] = depth[wnid] + 1
                queue.append(child)
    return depth


def _cache_path() -> Path:
    """Named after the WordNet source's digest, the format and Synset's fields, so checkouts whose
    sources or layouts differ, sharing one cache, never read each other's file."""
    fields = ",".join(field.name for field in dataclasses.fields(Synset))
    layout = hashlib.sha256(f"{_FORMAT}:{fields}".encode()).hexdigest()[:8]
    return cache_dir() / f"noun_index-wordnet{WORDNET_VERSION}-{WORDNET_DIGEST[:12]}-v{_FORMAT}-{layout}.json.gz"


def _save(index: NounIndex, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "synsets": [
            [
                s.wnid,
                s.name,
                s.lemmas,
                s.gloss,
                s.lexname,
                s.hypernyms,
                s.hyponyms,
                s.depth,
                s.usage_domains,
                s.examples,
                s.lemma_counts,
                s.lemma_usage_domains,
                s.instance_of,
            ]
            for s in index
        ],
        "irregular": index.irregular,
    }
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    with gzip.open(staging, "wt", encoding="utf-8") as f:
        json.dump(payload, f, separators=(",", ":"))
    staging.replace(path)


def _load(path: Path) -> NounIndex:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        payload = json.load(f)
    synsets = {
        row[0]: Synset(
            row[0],
            row[1],
            tuple(row[2]),
            row[3],
            row[4],
            tuple(row[5]),
            tuple(row[6]),
            row[7],
            tuple(row[8]),
            tuple(row[9]),
            tuple(row[10]),
            tuple(tuple(domains) for domains in row[11]),
            tuple(row[12]),
        )
        for row in payload["synsets"]
    }
    return NounIndex(synsets, {k: tuple(v) for k, v in payload["irregular"].items()})


@functools.lru_cache(maxsize=1)
@without_gc
def load_index() -> NounIndex:
    """The noun index of WordNet 3.0, from the cache or built (and cached) from NLTK."""
    path = _cache_path()
    if path.exists():
        return _load(path)
    print(f"imagenot: indexing WordNet's noun synsets once into {path} (about 10 s)", file=sys.stderr)
    index = _build_from_nltk()
    _save(index, path)
    return index
