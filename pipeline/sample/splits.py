"""The per-class train/test split: a fixed function of the images' row ids and the seed."""

from __future__ import annotations

from typing import Literal

import numpy as np

from imagenot.pipeline.run.keyed_hash import sample_key

SPLIT_SALT = 0x5A17_5EED  # keys the split apart from the sampling priority of the same seed

Split = Literal["train", "test"]


def assign_splits(row_ids: list[str], test_per_class: int, seed: int) -> list[Split]:
    """ "test" for the `test_per_class` rows with the smallest split key (all rows when there are
    fewer), "train" for the others; row ids break the (unlikely) ties. The answer for a row
    depends only on the set of row ids, not their order, so the download stage can apply it
    again to a class's final images after replacing failed downloads.
    """
    keys = [(sample_key(row_id, seed ^ SPLIT_SALT), row_id) for row_id in row_ids]
    test = np.zeros(len(row_ids), bool)
    test[sorted(range(len(keys)), key=keys.__getitem__)[:test_per_class]] = True
    return ["test" if t else "train" for t in test]
