"""Tag a batch of captions with every WordNet noun synset whose lemma (or inflection) occurs in it.

Built once per worker from the surface-form table, then `tag` handles one Arrow batch at a time
with whole-batch numpy/Arrow operations (Python loops only over n-gram length and overlap rounds):

1. `tokenize` gives the batch's normalised tokens; one `index_in` maps each to a word id of the
   lemma vocabulary.
2. The surface forms are a trie over word ids. All tokens step into it at once; round n extends
   only the paths still inside the trie by the token n places on (same caption only), so the
   work shrinks each round. The longest surface form starting at each token is kept.
3. Overlap policy, leftmost-longest and non-overlapping: reading left to right, a match is taken
   unless it overlaps one already taken; among matches starting at the same token the longest
   wins. "hot dog bun" -> "hot dog", "bun" (not "dog"); were "hot dog bun" a lemma, it alone.
4. Each taken surface form expands to its synsets; per caption the wnids come out sorted and
   unique, the matched surface forms unique in caption order.

The matcher holds only numpy arrays and Arrow arrays, so it pickles (about 16 MB for all of
WordNet); building it from the index takes a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.bulk import without_gc
from imagenot.pipeline.tag.tokens import tokenize
from imagenot.wordnet.index import NounIndex
from imagenot.wordnet.lemmas import surface_forms

_NO_EDGE = np.iinfo(np.int64).max  # sentinel after the last trie edge key


class Tags(NamedTuple):
    """Per caption of a batch: the synsets matched and the surface forms that matched them."""

    wnids: pa.ListArray  # list<string>, sorted, unique
    matched: pa.ListArray  # list<string>, normalised surface forms, unique, in caption order


class LemmaMatcher:
    """Matches normalised surface forms (see `wordnet.lemmas`) in batches of captions."""

    def __init__(self, forms: Mapping[str, Sequence[str]]):
        """`forms`: normalised surface form ("golden retriever") -> the wnids it tags."""
        words, parent, word, child, node_surface = _trie(forms)
        n_words = len(words)
        from_root = parent == 0
        self._n_words = n_words
        self._vocabulary = pa.array(words, pa.large_string())
        self._root_child = np.full(n_words, -1, np.int64)
        self._root_child[word[from_root]] = child[from_root]
        # Edges below the root, as sorted keys `parent * n_words + word` for searchsorted.
        keys = parent[~from_root] * n_words + word[~from_root]
        order = np.argsort(keys)
        self._edge_keys = np.append(keys[order], _NO_EDGE)
        self._edge_child = np.append(child[~from_root][order], -1)
        self._has_children = np.zeros(len(node_surface), bool)
        self._has_children[parent] = True
        # Whether a word ever follows another in a surface form; indexed by word id, where -1
        # (a token outside the vocabulary) hits the extra last entry.
        self._continues = np.zeros(n_words + 1, bool)
        self._continues[word[~from_root]] = True
        self._node_surface = node_surface

        self._surfaces = pa.array(list(forms), pa.string())
        wnids = sorted({w for wnids in forms.values() for w in wnids})
        if len({len(w) for w in wnids}) > 1:
            raise ValueError("wnids must all have the same length (a letter and eight digits)")
        self._wnid_width = len(wnids[0]) if wnids else 1
        self._wnids = np.frombuffer("".join(wnids).encode("ascii"), f"V{self._wnid_width}")
        wnid_id = {wnid: i for i, wnid in enumerate(wnids)}
        self._surface_wnid_counts = np.array([len(wnids) for wnids in forms.values()], np.int64)
        self._surface_wnid_starts = np.cumsum(self._surface_wnid_counts) - self._surface_wnid_counts
        self._surface_wnid_ids = np.array([wnid_id[w] for wnids in forms.values() for w in wnids], np.int64)

    @classmethod
    def from_index(cls, index: NounIndex) -> LemmaMatcher:
        """The matcher over every noun lemma of `index` and its inflections."""
        return cls(surface_forms(index))

    def tag(self, captions: pa.Array | pa.ChunkedArray) -> Tags:
        """Tags aligned with `captions`; null and empty captions get empty lists."""
        tokens = tokenize(captions)
        word = pc.fill_null(pc.index_in(tokens.values, value_set=self._vocabulary), -1)
        start, length, surface = self._longest_matches(word.to_numpy(), tokens.row)
        taken = leftmost_longest(start, length)
        row, surface = tokens.row[start[taken]], surface[taken]
        # Each surface form once per caption, at its first occurrence.
        _, first = np.unique(row * len(self._surfaces) + surface, return_index=True)
        first.sort()
        row, surface = row[first], surface[first]
        n_rows = len(captions)
        return Tags(
            self._wnid_lists(row, surface, n_rows),
            _lists(row, self._surfaces.take(surface), n_rows),
        )

    def _longest_matches(self, word: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token positions where a surface form starts, its length in tokens, its surface id."""
        best_length = np.zeros(len(word), np.int64)
        best_surface = np.full(len(word), -1, np.int64)
        position = np.flatnonzero(word >= 0)
        node = self._root_child[word[position]]
        position, node = position[node >= 0], node[node >= 0]
        length = 1
        while len(position):
            surface = self._node_surface[node]
            ends = surface >= 0
            best_length[position[ends]] = length
            best_surface[position[ends]] = surface[ends]

            following = position + length
            go_on = self._has_children[node] & (following < len(word))
            position, node, following = position[go_on], node[go_on], following[go_on]
            go_on = (row[following] == row[position]) & self._continues[word[following]]
            position, node, following = position[go_on], node[go_on], following[go_on]
            keys = node * self._n_words + word[following]
            slot = np.searchsorted(self._edge_keys, keys)
            found = self._edge_keys[slot] == keys
            position, node = position[found], self._edge_child[slot[found]]
            length += 1
        start = np.flatnonzero(best_length)
        return start, best_length[start], best_surface[start]

    def _wnid_lists(self, row: np.ndarray, surface: np.ndarray, n_rows: int) -> pa.ListArray:
        """Per caption, the sorted distinct wnids of the surface forms matched in it."""
        counts = self._surface_wnid_counts[surface]
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        wnid = self._surface_wnid_ids[np.repeat(self._surface_wnid_starts[surface], counts) + within]
        keys = np.sort(np.repeat(row, counts) * len(self._wnids) + wnid)
        distinct = np.ones(len(keys), bool)
        distinct[1:] = keys[1:] != keys[:-1]
        keys = keys[distinct]
        # Fixed-width strings gathered with numpy: several times faster than Arrow's `take`.
        values = self._wnids[keys % len(self._wnids)]
        offsets = np.arange(0, (len(values) + 1) * self._wnid_width, self._wnid_width, dtype=np.int32)
        strings = pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets), pa.py_buffer(values))
        return _lists(keys // len(self._wnids), strings, n_rows)


@without_gc
def _trie(forms: Iterable[str]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The forms as a trie over word ids: the words, the edges (parent node, word id, child
    node; node 0 is the root) and, per node, the id of the form ending there or -1."""
    words: dict[str, int] = {}
    edges: dict[tuple[int, int], int] = {}
    node_surface = [-1]
    for surface_id, form in enumerate(forms):
        node = 0
        for word in form.split(" "):
            edge = (node, words.setdefault(word, len(words)))
            if edge not in edges:
                edges[edge] = len(node_surface)
                node_surface.append(-1)
            node = edges[edge]
        node_surface[node] = surface_id
    parent, word = np.array(list(edges), np.int64).reshape(-1, 2).T
    child = np.fromiter(edges.values(), np.int64, len(edges))
    return list(words), parent, word, child, np.array(node_surface, np.int64)


def leftmost_longest(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Which candidate spans (sorted by start, one per start) the greedy left-to-right scan takes.

    Each round takes every undecided span that no earlier live span reaches into, then drops
    every span a taken one reaches into; the first undecided span is always decided, and chains
    of overlapping multi-word matches are short, so there are few rounds.
    """
    end = start + length
    taken = np.zeros(len(start), bool)
    undecided = np.ones(len(start), bool)
    while undecided.any():
        taken |= undecided & ~_reached(start, np.where(undecided | taken, end, -1))
        undecided &= ~taken & ~_reached(start, np.where(taken, end, -1))
    return taken


def _reached(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whether some earlier span's end lies beyond each span's start."""
    reach = np.maximum.accumulate(end)
    return np.concatenate(([False], reach[:-1] > start[1:]))


def _lists(row: np.ndarray, values: pa.Array, n_rows: int) -> pa.ListArray:
    offsets = np.zeros(n_rows + 1, np.int32)
    np.cumsum(np.bincount(row, minlength=n_rows), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def count_synsets(wnids: pa.ListArray) -> dict[str, int]:
    """Captions per synset in a batch's `wnids` (each caption lists a synset at most once)."""
    counts = pc.value_counts(wnids.flatten())
    return dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()))
