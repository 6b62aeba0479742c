"""Picturable synsets: a candidate must be something an image can show.

999 of the ImageNot paper's 1,000 classes descend from physical_entity.n.01 and none is a place.
The hierarchy alone is too blunt (logo, business card and postcard sit under communication), so
a candidate passes when it descends from (or is) one of `roots` and its lexicographer file is not
in `excluded_lexnames` (noun.location: states, countries, cities, which captions name but an
image does not show as one thing). On the real dev set (benchmarks/quality_real.py) the default
drops 4 pairs judged picturable against 195 judged not.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex

STEP = "picturable"


def unpicturable_removals(
    candidates: Iterable[str], index: NounIndex, roots: Collection[str], excluded_lexnames: Collection[str]
) -> dict[str, Removal]:
    """The candidates under none of `roots` (synset names), or in an excluded lexicographer file."""
    root_wnids = {index.by_name(name).wnid for name in roots}
    removals = {}
    for wnid in sorted(candidates):
        synset = index[wnid]
        if synset.lexname in excluded_lexnames:
            removals[wnid] = Removal(wnid, synset.name, STEP, "a_place", f"a place ({synset.lexname})")
        elif not root_wnids & (index.ancestors(wnid) | {wnid}):
            removals[wnid] = Removal(
                wnid, synset.name, STEP, "not_picturable", f"descends from none of {', '.join(sorted(roots))}"
            )
    return removals
