"""Drop WordNet instance synsets: one named person, place, work or event, not a kind of thing.

WordNet files an individual under the class it is an instance of (NLTK's `instance_hypernyms()`):
armstrong.n.02, Louis Armstrong, is an instance of jazz_musician.n.01 and trumpeter.n.01; mount_everest.n.01
of mountain.n.01. 7,730 of WordNet 3.0's 82,115 noun synsets are instances. A class named after one
collects paintings, book covers and posters of it, and sorts images by who someone is; none of
ImageNet-1k's classes and none of the published ImageNot lists' is an instance synset.
`selection.instance_synsets: true` keeps them. The rule is the label decision's (a class named
after an individual is a wrong label for every image of it); the select stage hands it to
`filters.select.select_synsets`, which runs it in the funnel's order.
"""

from __future__ import annotations

from collections.abc import Iterable

from imagenot.filters.removal import Removal
from imagenot.filters.select import INSTANCE_STEP
from imagenot.wordnet.index import NounIndex

STEP = INSTANCE_STEP
REASON = "instance_synset"
NAMED = 3  # classes named in a removal's detail


def instance_detail(wnid: str, index: NounIndex) -> str:
    """What the synset is an instance of, for its removal and `imagenot why`."""
    of = index[wnid].instance_of
    shown = ", ".join(f"{w} {index[w].name}" for w in of[:NAMED])
    more = f" and {len(of) - NAMED} more" if len(of) > NAMED else ""
    return f"a named individual, not a class of things: an instance of {shown}{more}"


def instance_removals(candidates: Iterable[str], index: NounIndex) -> dict[str, Removal]:
    """The candidates that are WordNet instance synsets, each naming what it is an instance of."""
    return {
        wnid: Removal(wnid, index[wnid].name, STEP, REASON, instance_detail(wnid, index), index[wnid].instance_of[0])
        for wnid in sorted(set(candidates))
        if index[wnid].instance_of
    }
