"""Where a class set sits in the WordNet noun hierarchy, measured against another set.

Pure functions over the NounIndex and wnids; `wordnet.stats_report` turns them into files.
The hierarchy is the index's: hypernym links with instance links included, depth is the
shortest hypernym path to entity.n.01. Every figure of one set is computed against an
"other" set, so the same function describes the classes (other = the reference) and the
reference (other = the classes).
"""

from __future__ import annotations

import functools
import statistics
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from imagenot.wordnet.index import NounIndex

if TYPE_CHECKING:  # networkx loads when a graph is built: a config check imports this module without one
    import networkx as nx

COMMUNITY_METHOD = "networkx.community.louvain_communities"
COMMUNITY_SEED = 0


def hypernym_subgraph(index: NounIndex, wnids: Iterable[str]) -> nx.DiGraph:
    """The union of all hypernym paths from the classes to the root; edges point parent -> child."""
    import networkx as nx

    nodes = set(wnids)
    for wnid in list(nodes):
        nodes |= index.ancestors(wnid)
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(nodes))  # insertion order fixes Louvain's outcome for a seed
    graph.add_edges_from((parent, child) for child in sorted(nodes) for parent in index[child].hypernyms)
    return graph


def modularity(graph: nx.DiGraph) -> tuple[float | None, int]:
    """Modularity of the undirected graph under seeded Louvain communities, and their number;
    None for a graph without edges (no classes, or entity.n.01 alone), where it is undefined."""
    if graph.number_of_edges() == 0:
        return None, graph.number_of_nodes()
    import networkx as nx

    undirected = graph.to_undirected()
    communities = nx.community.louvain_communities(undirected, seed=COMMUNITY_SEED)
    return nx.community.modularity(undirected, communities), len(communities)


def parents(index: NounIndex, wnids: Iterable[str]) -> set[str]:
    """The direct hypernyms of the classes."""
    return {parent for wnid in wnids for parent in index[wnid].hypernyms}


def siblings(index: NounIndex, wnid: str) -> set[str]:
    """The other hyponyms of the class's parents (distinct synsets)."""
    return {child for parent in index[wnid].hypernyms for child in index[parent].hyponyms} - {wnid}


def ancestors_in(index: NounIndex, wnids: Iterable[str], targets: Iterable[str]) -> dict[str, list[str]]:
    """Each class that descends from some target -> those targets (sorted); others left out."""
    targets = set(targets)
    found = {wnid: sorted(index.ancestors(wnid) & targets) for wnid in sorted(set(wnids))}
    return {wnid: hits for wnid, hits in found.items() if hits}


def descendants_in(index: NounIndex, wnids: Iterable[str], targets: Iterable[str]) -> dict[str, list[str]]:
    """Each class that is an ancestor of some target -> those targets (sorted); others left out.

    Walks up from the targets: the ancestors of a synset are few and cached, its descendants
    can be tens of thousands.
    """
    wnids = set(wnids)
    found: dict[str, list[str]] = {}
    for target in sorted(set(targets)):
        for ancestor in index.ancestors(target) & wnids:
            found.setdefault(ancestor, []).append(target)
    return dict(sorted(found.items()))


def shared_lemmas(index: NounIndex, wnids: Iterable[str], targets: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """Each class with a lemma (spelled as in WordNet) of another synset among the targets ->
    sorted (target, lemma) pairs. The same synset in both sets is synset overlap, not counted here.
    """
    targets = set(targets)
    found: dict[str, list[tuple[str, str]]] = {}
    for wnid in sorted(set(wnids)):
        hits = {
            (target, lemma)
            for lemma in index[wnid].lemmas
            for target in index.lemma_synsets[lemma]
            if target in targets and target != wnid
        }
        if hits:
            found[wnid] = sorted(hits)
    return found


def nearest(index: NounIndex, wnids: Iterable[str], targets: Iterable[str]) -> dict[str, tuple[int, str]]:
    """Each class -> (hops to its nearest target in the undirected hypernym graph, that target).

    One multi-source breadth-first search from all targets over the whole noun graph. Among
    equally near targets the smallest wnid is named: a node's label is the smallest label of
    its neighbours one level closer, which is the smallest of all its nearest targets.
    """
    distance, label = _spread(index, frozenset(targets))
    # WordNet's noun graph is connected (one root), so every class is reached.
    return {wnid: (distance[wnid], label[wnid]) for wnid in sorted(set(wnids))} if label else {}


@functools.lru_cache(maxsize=4)
def _spread(index: NounIndex, targets: frozenset[str]) -> tuple[dict[str, int], dict[str, str]]:
    """(hops, nearest target) of every synset: `nearest`'s search, once per target set in a process
    (the report measures several class sets against the same reference list)."""
    label = {target: target for target in sorted(targets)}
    if not label:  # no target to be near: no distances
        return {}, {}
    distance = dict.fromkeys(label, 0)
    frontier = list(label)
    while frontier:
        reached: dict[str, str] = {}
        for node in frontier:
            synset = index[node]
            for neighbour in synset.hypernyms + synset.hyponyms:
                if neighbour not in distance and (neighbour not in reached or label[node] < reached[neighbour]):
                    reached[neighbour] = label[node]
        level = distance[frontier[0]] + 1
        for neighbour, source in reached.items():
            distance[neighbour] = level
            label[neighbour] = source
        frontier = list(reached)
    return distance, label


PHYSICAL_ENTITY = "physical_entity.n.01"


def physical_share(index: NounIndex, wnids: list[str]) -> float:
    """The share of the (non-empty) set under physical_entity.n.01: 999 of the ImageNot paper's 1,000."""
    physical = index.by_name(PHYSICAL_ENTITY).wnid
    return sum(physical in index.ancestors(wnid) for wnid in wnids) / len(wnids)


def set_figures(index: NounIndex, wnids: list[str], other: list[str]) -> dict:
    """The named figures of one class set, measured against `other` (plain data). An empty set
    (a build that ended with no classes) has count 0 and no other figure; against an empty
    other set, the distances are None."""
    if not wnids:
        histograms = {key: {} for key in _SET_FIGURES if key.endswith("_histogram")}
        return {**dict.fromkeys(_SET_FIGURES), "count": 0, **histograms}
    own, other_set = set(wnids), set(other)
    import networkx as nx

    graph = hypernym_subgraph(index, own)
    community_modularity, community_count = modularity(graph)
    depths = [index[wnid].depth for wnid in wnids]
    leaves = sum(1 for wnid in wnids if not index[wnid].hyponyms)
    own_parents, other_parents = parents(index, own), parents(index, other_set)
    in_set_ancestors = ancestors_in(index, own, own)
    sibling_counts = [len(siblings(index, wnid)) for wnid in wnids]
    set_sibling_counts = [len(siblings(index, wnid) & own) for wnid in wnids]
    distances = [hops for hops, _ in nearest(index, own, other_set).values()]
    return {
        "count": len(wnids),
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "density": nx.density(graph),
        "modularity": community_modularity,
        "communities": community_count,
        "depth_min": min(depths),
        "depth_median": float(statistics.median(depths)),
        "depth_max": max(depths),
        "depth_mean": statistics.fmean(depths),
        "leaf_count": leaves,
        "leaf_share": leaves / len(wnids),
        "physical_share": physical_share(index, wnids),
        "synset_overlap_count": len(own & other_set),
        "synset_overlap": len(own & other_set) / len(own),
        "parent_count": len(own_parents),
        "parent_overlap_count": len(own_parents & other_parents),
        "parent_overlap": _share(len(own_parents & other_parents), len(own_parents)),
        "descendants_of_other": len(ancestors_in(index, own, other_set)),
        "ancestors_of_other": len(descendants_in(index, own, other_set)),
        "sharing_lemma_with_other": len(shared_lemmas(index, own, other_set)),
        "distance_median": float(statistics.median(distances)) if distances else None,
        "distance_mean": statistics.fmean(distances) if distances else None,
        "distance_max": max(distances) if distances else None,
        "ancestor_pairs": sum(len(hits) for hits in in_set_ancestors.values()),
        "with_ancestor_in_set": len(in_set_ancestors),
        "antichain": not in_set_ancestors,
        "siblings_median": float(statistics.median(sibling_counts)),
        "siblings_mean": statistics.fmean(sibling_counts),
        "siblings_max": max(sibling_counts),
        "siblings_in_set_median": float(statistics.median(set_sibling_counts)),
        "siblings_in_set_mean": statistics.fmean(set_sibling_counts),
        "siblings_in_set_max": max(set_sibling_counts),
        "depth_histogram": _histogram(depths),
        "distance_histogram": _histogram(distances),
        "siblings_histogram": _histogram(sibling_counts),
        "lexname_histogram": dict(sorted(Counter(index[w].lexname for w in wnids).items())),
    }


# The keys `set_figures` returns, in order.
_SET_FIGURES = (
    "count nodes edges density modularity communities depth_min depth_median depth_max depth_mean "
    "leaf_count leaf_share physical_share synset_overlap_count synset_overlap parent_count parent_overlap_count "
    "parent_overlap descendants_of_other ancestors_of_other sharing_lemma_with_other distance_median "
    "distance_mean distance_max ancestor_pairs with_ancestor_in_set antichain siblings_median "
    "siblings_mean siblings_max siblings_in_set_median siblings_in_set_mean siblings_in_set_max "
    "depth_histogram distance_histogram siblings_histogram lexname_histogram"
).split()


def _share(part: int, whole: int) -> float:
    """part / whole, 0.0 for an empty whole (only entity.n.01 alone has no parents)."""
    return part / whole if whole else 0.0


def _histogram(values: list[int]) -> dict[str, int]:
    """value -> count in numeric order, keys as strings so the JSON reads back the same."""
    return {str(value): count for value, count in sorted(Counter(values).items())}
