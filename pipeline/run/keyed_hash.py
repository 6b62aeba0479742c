"""A keyed hash of row ids: the pipeline's one source of seeded randomness.

Its own module because unrelated stages draw on it: the score stage picks each synset's
first-pass captions by it, the sample stage orders a class's images and splits them by it. A key
fixed by (seed, row_id) alone does not depend on row order, sharding or runner, so the same seed
always chooses the same rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np


def sample_keys(row_ids: Iterable[str], seed: int) -> np.ndarray:
    """A uniform 64-bit key per row id, fixed by (seed, row_id) alone, as uint64: the 8-byte
    BLAKE2b digest of the UTF-8 row id keyed by the seed, read big-endian."""
    keyed = hashlib.blake2b(digest_size=8, key=seed.to_bytes(8, "big", signed=True))

    def digest(row_id: str) -> bytes:
        row = keyed.copy()  # the key block is already hashed: copying it is cheaper than keying anew
        row.update(row_id.encode("utf-8"))
        return row.digest()

    # The digests joined are the keys' big-endian bytes: one numpy read instead of an int per row.
    return np.frombuffer(b"".join(map(digest, row_ids)), dtype=">u8").astype(np.uint64)


def sample_key(row_id: str, seed: int) -> int:
    """`sample_keys` of one row id."""
    return int(sample_keys([row_id], seed)[0])
