"""The none-of-these rule's corpus statistics (`none_of_these.form_statistics`) over a whole Arrow batch.

`none_of_these.form_statistics` reads a caption at a time in Python: its words, then each matched
form's first occurrence and the cues there. At real caption density (about five distinct forms a
caption) that was most of the select stage's CPU. Here the same counts come from column
operations over the batch. The ASCII captions (nearly all of an English corpus) are cut into
words with numpy over their bytes, as `none_of_these.tokens` cuts them, and each word's case and
digits are read once. A form's first occurrence is where its last word starts a caption's word
(found per prefix length by a hash lookup of the words' prefixes) with its other words just
before it, the least such position per caption and form; the cues are numpy arithmetic on word
positions. Other captions go through `form_statistics` itself, so the result is its result, count
for count (tests/test_form_counts.py compares them).

`lemmas` names the forms worth counting (the select stage: the lemmas of synsets that can still
become candidates, `of_lemmas`); another form is not counted at all.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.labels.none_of_these import MIN_LOWER_SHARE, STAT_KINDS, form_statistics

FormCounts = dict[str, dict[str, int]]  # kind (STAT_KINDS) -> form -> occurrences
_SCREEN = 3  # a word's first letters screened once before the per-length lookups


def of_lemmas(form: str, lemmas: Collection[str]) -> bool:
    """Whether a matched form is one of the normalised lemmas, or one with a plural ending."""
    return any(form[: len(form) - cut] in lemmas for cut in range(3))


def _of_lemmas(forms: pa.Array, lemmas: Collection[str]) -> np.ndarray:
    """`of_lemmas` of each form."""
    value_set = pa.array(sorted(lemmas), forms.type)
    found = [pc.is_in(forms if cut == 0 else pc.utf8_slice_codeunits(forms, 0, -cut), value_set) for cut in range(3)]
    return pc.fill_null(pc.or_(pc.or_(found[0], found[1]), found[2]), False).to_numpy(zero_copy_only=False)


def batch_form_statistics(
    captions: pa.Array | pa.ChunkedArray,
    matched: pa.Array | pa.ChunkedArray,
    lemmas: Collection[str] | None = None,
) -> FormCounts:
    """`form_statistics` of the batch's captions and their matched forms (the tag stage's
    `matched`), counting only the forms of `lemmas` (`of_lemmas`; None: every form). Each kind's
    forms come in no set order (the select stage sorts the shard's sum once)."""
    captions, matched = _array(captions).cast(pa.large_string()), _array(matched)
    forms, rows, form_ids = _occurrences(captions, matched, lemmas)
    plain = _plain_rows(captions)[rows]
    counts = _counted_plain(captions, forms, rows[plain], form_ids[plain])
    if not plain.all():
        by_row: dict[int, list[str]] = {}
        for row, form in zip(rows[~plain].tolist(), form_ids[~plain].tolist()):
            by_row.setdefault(row, []).append(forms[form])
        rows_left = sorted(by_row)
        other = form_statistics(captions.take(pa.array(rows_left)).to_pylist(), [by_row[r] for r in rows_left])
        for kind in STAT_KINDS:  # both hold positive counts only
            kept = counts[kind]
            for form, n in other[kind].items():
                kept[form] = kept.get(form, 0) + n
    return counts


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _occurrences(
    captions: pa.Array, matched: pa.Array, lemmas: Collection[str] | None
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The forms of `lemmas`, and each distinct (row, form id) of a caption that is not empty."""
    flat = pc.list_flatten(matched)
    parents = pc.list_parent_indices(matched).to_numpy()
    distinct = pc.drop_null(pc.unique(flat))
    if lemmas is not None:
        distinct = distinct.filter(pa.array(_of_lemmas(distinct, lemmas)))
    forms = sorted(form for form in distinct.to_pylist() if form)
    ids = pc.fill_null(pc.index_in(flat, pa.array(forms, flat.type)), -1).to_numpy()
    filled = pc.fill_null(pc.greater(pc.utf8_length(captions), 0), False).to_numpy(zero_copy_only=False)
    chosen = (ids >= 0) & filled[parents]
    keys = _distinct(parents[chosen].astype(np.int64) * max(len(forms), 1) + ids[chosen])
    return forms, keys // max(len(forms), 1), keys % max(len(forms), 1)


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _plain_rows(captions: pa.Array) -> np.ndarray:
    """Rows whose caption is ASCII: there the tokenizer's letters and digits are ASCII's."""
    return pc.fill_null(pc.string_is_ascii(captions), False).to_numpy(zero_copy_only=False)


def _counted_plain(captions: pa.Array, forms: list[str], rows: np.ndarray, form_ids: np.ndarray) -> FormCounts:
    """The counts of the (row, form id) occurrences in plain captions (`_plain_rows`)."""
    counts: FormCounts = {kind: {} for kind in STAT_KINDS}
    if len(rows) == 0:
        return counts
    new_row = np.r_[True, rows[1:] != rows[:-1]]  # rows come sorted
    taken, caption_of = rows[new_row], np.cumsum(new_row) - 1
    words = _Words(captions.take(pa.array(taken)))
    shape = _FormShape(forms)
    first = _first_occurrence(words, shape, caption_of, form_ids)
    found = first >= 0
    caption_of, first, form_ids = caption_of[found], first[found], form_ids[found]
    last = first + shape.size[form_ids] - 1
    share = words.lower_share[caption_of]
    in_lower = (share >= MIN_LOWER_SHARE) & (first > words.offsets[caption_of])
    no_lower, some_upper = np.ones(len(first), bool), np.zeros(len(first), bool)
    for j in range(shape.size.max()):
        inside = j < shape.size[form_ids]
        at = np.where(inside, first + j, first)
        no_lower &= ~inside | ~words.has_lower[at]
        some_upper |= inside & words.has_upper[at]
    cues = {
        "rows": np.ones(len(first), bool),
        "in_lower_case": in_lower,
        "capitalised": in_lower & words.starts_upper[first],
        "capitals": no_lower & some_upper & ((words.width[first] >= 2) | (last > first)) & (share > 0),
        "beside_digits": ((first > words.offsets[caption_of]) & words.has_digit[np.maximum(first - 1, 0)])
        | ((last + 1 < words.offsets[caption_of + 1]) & words.has_digit[np.minimum(last + 1, len(words.length) - 1)]),
    }
    for kind, present in cues.items():
        totals = np.bincount(form_ids, weights=present, minlength=len(forms))
        counts[kind] = {forms[i]: int(totals[i]) for i in np.flatnonzero(totals)}
    return counts


class _FormShape:
    """The forms' words: how many, the last one (the one a caption's word may extend: a plural
    ending), and the ones before it, which a caption's words must equal."""

    def __init__(self, forms: list[str]):
        # column operations over the forms' words (at LAION's candidate density a batch holds tens
        # of thousands of forms, and a loop over them cost a tenth of the statistics)
        split = pc.split_pattern(pa.array(forms, pa.large_string()), " ")
        offsets = split.offsets.to_numpy()
        words = split.values
        self.size = np.diff(offsets)
        is_last = np.zeros(len(words), bool)
        is_last[offsets[1:] - 1] = True
        self.lasts, self.last_of = _sorted_ids(words.filter(pa.array(is_last)))
        self.heads, head_of = _sorted_ids(words.filter(pa.array(~is_last)))
        self.before = np.full((len(forms), max(self.size.max() - 1, 1)), -1)  # before[f, j]: j + 1 words back
        form_of = np.repeat(np.arange(len(forms)), self.size)[~is_last]
        back = (offsets[1:] - 1)[form_of] - np.flatnonzero(~is_last) - 1
        self.before[form_of, back] = head_of


def _sorted_ids(words: pa.Array) -> tuple[list[str], np.ndarray]:
    """The distinct words, sorted, and each word's place among them."""
    distinct = pc.unique(words)
    distinct = distinct.take(pc.sort_indices(distinct))  # UTF-8's byte order is Python's code point order
    return distinct.to_pylist(), pc.index_in(words, distinct).to_numpy(zero_copy_only=False).astype(np.int64)


class _Words:
    """The words of plain captions (`_plain_rows`), flattened, with what the cues read of each,
    from numpy over the captions' bytes: `none_of_these.tokens`' words, runs of letters and digits
    where a run, an apostrophe and the next run make one word."""

    def __init__(self, captions: pa.Array):
        text, bounds = _bytes_of(captions)
        upper, lower = (text >= 65) & (text <= 90), (text >= 97) & (text <= 122)
        digit = (text >= 48) & (text <= 57)
        inside = upper | lower | digit
        before, after = np.r_[False, inside[:-1]], np.r_[inside[1:], False]
        before[bounds[:-1][bounds[:-1] < len(text)]] = False  # a word never runs across two captions
        after[bounds[1:][bounds[1:] > bounds[:-1]] - 1] = False
        runs = np.flatnonzero(inside & ~before), np.flatnonzero(inside & ~after) + 1
        starts, ends, self.length = _joined(text, *runs, np.searchsorted(bounds, runs[0], side="right") - 1)
        self.width = ends - starts  # characters, an apostrophe inside counted; `length` leaves it out
        self.caption = np.searchsorted(bounds, starts, side="right") - 1
        counts = np.bincount(self.caption, minlength=len(captions))
        self.offsets = np.r_[0, np.cumsum(counts)]  # caption i's words: offsets[i] to offsets[i + 1]
        kept = text[inside] | (upper[inside] * np.uint8(32))  # the words' letters lower-cased, end to end
        word_offsets = np.r_[0, np.cumsum(self.length)].astype(np.int64)
        self.lowered = pa.LargeStringArray.from_buffers(
            len(starts), pa.py_buffer(word_offsets.tobytes()), pa.py_buffer(kept.tobytes())
        )
        self.starts_upper = upper[starts]
        self.has_upper, self.has_lower, self.has_digit = (_any_in(flags, starts) for flags in (upper, lower, digit))
        alphas = np.bincount(self.caption, weights=upper[starts] | lower[starts], minlength=len(captions))
        lowers = np.bincount(self.caption, weights=lower[starts], minlength=len(captions))
        self.lower_share = np.divide(lowers, alphas, out=np.zeros(len(captions)), where=alphas > 0)


def _joined(
    text: np.ndarray, starts: np.ndarray, ends: np.ndarray, caption: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, letters and digits) of each word: a run, one apostrophe and the next run of the
    same caption are one word, taken from the left as the tokenizer's regular expression takes
    them ("rock'n'roll": "rock'n", "roll")."""
    sizes = ends - starts
    link = np.zeros(len(starts), bool)  # run i, an apostrophe, run i + 1
    if len(starts) > 1:
        apostrophe = text[np.minimum(ends[:-1], len(text) - 1)] == ord("'")
        link[:-1] = (ends[:-1] + 1 == starts[1:]) & apostrophe & (caption[:-1] == caption[1:])
    counted = np.cumsum(link)
    chained = counted - np.maximum.accumulate(np.where(link, 0, counted))  # links in a row so far
    used = link & (chained % 2 == 1)
    head = ~np.r_[False, used[:-1]]  # a run that starts a word
    next_end, next_size = np.r_[ends[1:], 0], np.r_[sizes[1:], 0]
    return starts[head], np.where(used, next_end, ends)[head], np.where(used, sizes + next_size, sizes)[head]


def _bytes_of(captions: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A large_string array's characters (bytes) end to end, and each caption's bounds in them."""
    offsets = np.frombuffer(captions.buffers()[1], np.int64)[captions.offset : captions.offset + len(captions) + 1]
    data = captions.buffers()[2]
    text = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return text[offsets[0] : offsets[-1]], offsets - offsets[0]


def _any_in(flags: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per word, whether any of its characters' flags is set: from its start to the next word's
    (the characters between are separators, never flagged)."""
    return np.logical_or.reduceat(flags, starts) if len(starts) else np.zeros(0, bool)


def _prefix_hits(words: _Words, lasts: list[str], asked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(word index, last-word id) of every caption word that starts with one of `lasts`, in the
    captions where `asked` (caption, last-word id pairs) looks for it."""
    lengths = np.array([len(word) for word in lasts])
    screen = pa.array(sorted({word[:_SCREEN] for word in lasts}), pa.large_string())
    screened = pc.is_in(pc.utf8_slice_codeunits(words.lowered, 0, _SCREEN), screen).to_numpy(zero_copy_only=False)
    captions, asked_lasts = asked
    hit_words, hit_lasts = [], []
    for length in np.unique(lengths):
        ids = np.flatnonzero(lengths == length)
        wanted = np.zeros(len(words.offsets) - 1, bool)
        wanted[captions[lengths[asked_lasts] == length]] = True
        pool = np.flatnonzero(wanted[words.caption] & (words.length >= length) & (screened | (length < _SCREEN)))
        prefixes = pc.utf8_slice_codeunits(words.lowered.take(pa.array(pool)), 0, int(length))
        at = pc.fill_null(pc.index_in(prefixes, pa.array([lasts[i] for i in ids], pa.large_string())), -1)
        at = at.to_numpy()
        hit_words.append(pool[at >= 0])
        hit_lasts.append(ids[at[at >= 0]])
    return np.concatenate(hit_words), np.concatenate(hit_lasts)


def _first_occurrence(words: _Words, shape: _FormShape, caption_of: np.ndarray, form_ids: np.ndarray) -> np.ndarray:
    """Per (caption, form id), the flat index of the form's first word at its first occurrence in
    the caption (`none_of_these._locate`), or -1."""
    end, last = _prefix_hits(words, shape.lasts, (caption_of, shape.last_of[form_ids]))
    forms_by_last = np.argsort(shape.last_of, kind="stable")
    starts = np.searchsorted(shape.last_of[forms_by_last], np.arange(len(shape.lasts) + 1))
    fan = starts[last + 1] - starts[last]  # the forms sharing each hit's last word
    end, form = np.repeat(end, fan), forms_by_last[_ranges(starts[last], fan)]
    caption = words.caption[end]
    key = caption.astype(np.int64) * len(shape.size) + form
    asked = caption_of.astype(np.int64) * len(shape.size) + form_ids  # sorted and distinct (`_occurrences`)
    slot = np.minimum(np.searchsorted(asked, key), len(asked) - 1)  # a hit's (caption, form) among those asked
    keep = asked[slot] == key
    end, form, caption, slot = end[keep], form[keep], caption[keep], slot[keep]
    start = end - shape.size[form] + 1
    ok = start >= words.offsets[caption]
    if shape.heads:
        head_ids = pc.fill_null(pc.index_in(words.lowered, pa.array(shape.heads, pa.large_string())), -1).to_numpy()
        for j in range(shape.before.shape[1]):
            needed = shape.before[form, j]
            at = np.clip(end - j - 1, 0, len(head_ids) - 1)
            ok &= (needed < 0) | (head_ids[at] == needed)
    none = np.iinfo(np.int64).max
    out = np.full(len(asked), none, np.int64)
    np.minimum.at(out, slot[ok], start[ok].astype(np.int64))  # the first occurrence: the least start
    out[out == none] = -1
    return out


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of range(s, s + n) for each (s, n)."""
    total = int(lengths.sum())
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths) + np.arange(total) - offsets
