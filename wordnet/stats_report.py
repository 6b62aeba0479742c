"""A class set's place in WordNet beside a reference set's (the ImageNot paper's appendix B.1,
Table 3, and more), as a JSON-ready report and its Markdown; `imagenot.pipeline.commands.stats` writes
them with the plots."""

from __future__ import annotations

from imagenot.wordnet import hierarchy
from imagenot.wordnet.index import NounIndex

DEFINITIONS = {
    "subgraph": "the union of all hypernym paths from the set's classes to entity.n.01 "
    "(instance links included); edges point from hypernym to hyponym",
    "density": "networkx.density of the directed subgraph: edges / (nodes * (nodes - 1))",
    "modularity": "networkx.community.modularity of the undirected subgraph, communities "
    f"from {hierarchy.COMMUNITY_METHOD}(seed={hierarchy.COMMUNITY_SEED}, resolution=1)",
    "depth": "shortest hypernym path from the class to entity.n.01 (entity has depth 0)",
    "leaf_share": "share of the classes with no hyponym in WordNet (instance hyponyms count)",
    "physical_share": "share of the classes under physical_entity.n.01 (things an image can show)",
    "synset_overlap": "|S ∩ O| / |S|: share of this set's classes that are also in the other set",
    "parent_overlap": "|P(S) ∩ P(O)| / |P(S)|, P = the direct hypernyms (parents) of a set's classes",
    "descendants_of_other": "classes with a class of the other set among their ancestors",
    "ancestors_of_other": "classes that are an ancestor of a class of the other set",
    "sharing_lemma_with_other": "classes with a lemma (as WordNet spells it, case kept) of a "
    "different synset of the other set",
    "distance": "hops from a class to the nearest class of the other set along hypernym links "
    "taken in both directions over all of WordNet's nouns (0 if it is in the other set); "
    "ties name the smallest wnid",
    "ancestor_pairs": "pairs of classes of the set where one is an ancestor of the other; "
    "the set is an antichain when there are none",
    "siblings": "distinct other hyponyms of the class's parents in WordNet "
    "(siblings_in_set: those that are classes of the same set)",
}

# (label in stats.md, figure key); other figures are in stats.json only.
TABLE_ROWS = [
    ("classes", "count"),
    ("subgraph nodes", "nodes"),
    ("subgraph edges", "edges"),
    ("density (directed)", "density"),
    ("modularity (undirected, Louvain)", "modularity"),
    ("communities", "communities"),
    ("depth min", "depth_min"),
    ("depth median", "depth_median"),
    ("depth max", "depth_max"),
    ("depth mean", "depth_mean"),
    ("leaves", "leaf_count"),
    ("leaf share", "leaf_share"),
    ("share under physical_entity.n.01", "physical_share"),
    ("synset overlap (count)", "synset_overlap_count"),
    ("synset overlap", "synset_overlap"),
    ("parents", "parent_count"),
    ("parent overlap (count)", "parent_overlap_count"),
    ("parent overlap", "parent_overlap"),
    ("descendants of the other set's classes", "descendants_of_other"),
    ("ancestors of the other set's classes", "ancestors_of_other"),
    ("sharing a lemma with the other set", "sharing_lemma_with_other"),
    ("distance to the other set, median", "distance_median"),
    ("distance to the other set, mean", "distance_mean"),
    ("distance to the other set, max", "distance_max"),
    ("ancestor pairs inside the set", "ancestor_pairs"),
    ("classes with an ancestor in the set", "with_ancestor_in_set"),
    ("antichain", "antichain"),
    ("siblings per class, median", "siblings_median"),
    ("siblings per class, mean", "siblings_mean"),
    ("siblings per class, max", "siblings_max"),
    ("siblings in the set, median", "siblings_in_set_median"),
    ("siblings in the set, mean", "siblings_in_set_mean"),
    ("siblings in the set, max", "siblings_in_set_max"),
]
MD_LIST_LIMIT = 12  # related classes named per row in stats.md; stats.json holds them all


def build_report(
    index: NounIndex,
    classes: list[str],
    reference: list[str],
    classes_source: str,
    reference_source: str,
) -> dict:
    """The whole report as plain data: figures of both sets, then the relation lists."""

    def named(wnid: str) -> dict:
        return {"wnid": wnid, "name": index[wnid].name}

    def grouped(found: dict[str, list[str]], key: str) -> list[dict]:
        return [{**named(w), key: [named(t) for t in hits]} for w, hits in found.items()]

    class_set = set(classes)

    def class_row(wnid: str, hops: int, target: str) -> dict:
        siblings = hierarchy.siblings(index, wnid)
        return {
            **named(wnid),
            "lexname": index[wnid].lexname,
            "depth": index[wnid].depth,
            "leaf": not index[wnid].hyponyms,
            "siblings": len(siblings),
            "siblings_in_set": len(siblings & class_set),
            "in_reference": hops == 0,
            "distance": hops,
            "nearest_reference": named(target),
        }

    return {
        "wordnet": index.version,
        "definitions": DEFINITIONS,
        "community": {"method": hierarchy.COMMUNITY_METHOD, "seed": hierarchy.COMMUNITY_SEED},
        "classes": {
            "source": classes_source,
            **hierarchy.set_figures(index, classes, reference),
        },
        "reference": {
            "source": reference_source,
            **hierarchy.set_figures(index, reference, classes),
        },
        "relations": {
            "descendant_of_reference": grouped(
                hierarchy.ancestors_in(index, classes, reference), "reference_ancestors"
            ),
            "ancestor_of_reference": grouped(
                hierarchy.descendants_in(index, classes, reference), "reference_descendants"
            ),
            "shares_lemma_with_reference": [
                {**named(w), "reference": [{**named(t), "lemma": lemma} for t, lemma in hits]}
                for w, hits in hierarchy.shared_lemmas(index, classes, reference).items()
            ],
            "ancestor_in_classes": grouped(hierarchy.ancestors_in(index, classes, classes), "class_ancestors"),
            "per_class": [
                class_row(w, hops, target) for w, (hops, target) in hierarchy.nearest(index, classes, reference).items()
            ],
        },
    }


def render_markdown(report: dict) -> str:
    classes, reference, relations = report["classes"], report["reference"], report["relations"]
    lines = [
        f"# WordNet structure: `{classes['source']}` beside `{reference['source']}`",
        "",
        f"WordNet {report['wordnet']} nouns. Each set's figures are measured against the other set.",
        "",
        "| figure | classes | reference |",
        "|---|---:|---:|",
        *(f"| {label} | {_cell(classes[key])} | {_cell(reference[key])} |" for label, key in TABLE_ROWS),
        "",
        "## Definitions",
        "",
        *(f"- **{name}**: {text}" for name, text in report["definitions"].items()),
        "",
        "## Lexicographer files",
        "",
        "| lexname | classes | reference |",
        "|---|---:|---:|",
        *(
            f"| {name} | {classes['lexname_histogram'].get(name, 0)} | {reference['lexname_histogram'].get(name, 0)} |"
            for name in sorted(classes["lexname_histogram"] | reference["lexname_histogram"])
        ),
        "",
        *_relation_section(
            "Classes that descend from a reference class",
            relations["descendant_of_reference"],
            "reference_ancestors",
        ),
        *_relation_section(
            "Classes that are an ancestor of reference classes",
            relations["ancestor_of_reference"],
            "reference_descendants",
        ),
        *_relation_section(
            "Classes sharing a lemma with a reference class",
            relations["shares_lemma_with_reference"],
            "reference",
        ),
        *_relation_section(
            "Classes with another class of the set as ancestor",
            relations["ancestor_in_classes"],
            "class_ancestors",
        ),
        "## Per class",
        "",
        "| class | lexname | depth | leaf | siblings | siblings in set | distance | nearest reference |",
        "|---|---|---:|---|---:|---:|---:|---|",
        *(
            f"| {_name(row)} | {row['lexname']} | {row['depth']} | {_cell(row['leaf'])} | "
            f"{row['siblings']} | {row['siblings_in_set']} | {row['distance']} | "
            f"{_name(row['nearest_reference'])} |"
            for row in relations["per_class"]
        ),
        "",
    ]
    return "\n".join(lines)


def _relation_section(title: str, rows: list[dict], key: str) -> list[str]:
    lines = [f"## {title} ({len(rows)})", ""]
    for row in rows:
        related = row[key]
        shown = ", ".join(_name(t) + (f" via “{t['lemma']}”" if "lemma" in t else "") for t in related[:MD_LIST_LIMIT])
        more = f", and {len(related) - MD_LIST_LIMIT} more" if len(related) > MD_LIST_LIMIT else ""
        lines.append(f"- {_name(row)}: {shown}{more}")
    return [*lines, ""]


def _name(entry: dict) -> str:
    return f"{entry['name']} (`{entry['wnid']}`)"


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
