"""Step 4: keep the leaves of the minimal WordNet subtree that holds the remaining candidates.

The leaves of that subtree are exactly the candidates with no other candidate below them (a
connecting node that is not a candidate always has a candidate below it), so a candidate is
dropped when another candidate is its descendant, and the kept set is an antichain: no class is
an ancestor of another. Hyponym links include instance links, as in ImageNet's tree.
"""

from __future__ import annotations

from collections.abc import Iterable

from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex

STEP = "leaves"


def non_leaves(candidates: Iterable[str], index: NounIndex) -> dict[str, Removal]:
    """The candidates that have a candidate descendant, each naming its shallowest one."""
    pool = set(candidates)
    below: dict[str, str] = {}  # dropped candidate -> the candidate descendant named as cause
    for wnid in sorted(pool, key=lambda w: (index[w].depth, w)):
        for ancestor in index.ancestors(wnid) & pool:
            below.setdefault(ancestor, wnid)
    return {
        wnid: Removal(
            wnid,
            index[wnid].name,
            STEP,
            "has_candidate_descendant",
            f"is an ancestor of candidate {cause} {index[cause].name}",
            cause,
        )
        for wnid, cause in sorted(below.items())
    }
