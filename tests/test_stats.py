"""`imagenot stats` on real WordNet 3.0 and the real ImageNot / ImageNet class lists.

The pinned ImageNot figures were cross-checked by hand and, for the subgraph sizes and leaf
counts, against NLTK's own `hypernym_paths()` and `hyponyms() + instance_hyponyms()`.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from cli_runner import invoke

from imagenot.pipeline.commands.stats import PLOTS, stats
from imagenot.pipeline.config.reference_lists import read_class_list, reference_wnids
from imagenot.wordnet import hierarchy

DATA = Path(__file__).resolve().parents[1] / "wordnet" / "data"
IMAGENOT_APRIL = DATA / "imagenot_classes_2024-04-02.txt"
IMAGENOT_MAY = DATA / "imagenot_classes_2024-05-25.txt"


def wnid(index, name: str) -> str:
    return index.by_name(name).wnid


def names(index, wnids) -> set[str]:
    return {index[w].name for w in wnids}


@pytest.fixture(scope="module")
def imagenet1k(index):
    return reference_wnids("imagenet1k", index)


@pytest.fixture(scope="module")
def may(index):
    return read_class_list(str(IMAGENOT_MAY), index)


def test_subgraph_of_dog_is_its_two_hypernym_paths(index):
    # dog -> canine -> carnivore -> ... -> entity (14 nodes) plus dog -> domestic_animal -> animal.
    graph = hierarchy.hypernym_subgraph(index, [wnid(index, "dog.n.01")])
    assert graph.number_of_nodes() == 15
    assert graph.number_of_edges() == 15
    assert graph.has_edge(wnid(index, "domestic_animal.n.01"), wnid(index, "dog.n.01"))
    assert graph.has_edge(wnid(index, "entity.n.01"), wnid(index, "physical_entity.n.01"))
    assert nx.density(graph) == pytest.approx(15 / (15 * 14))


def test_gavel_descends_from_hammer_an_imagenet1k_class(index, imagenet1k):
    gavel = wnid(index, "gavel.n.01")
    found = hierarchy.ancestors_in(index, [gavel, wnid(index, "dog.n.01")], imagenet1k)
    assert found == {gavel: [wnid(index, "hammer.n.02")]}


def test_aircraft_is_an_ancestor_of_imagenet1k_classes(index, imagenet1k):
    aircraft = wnid(index, "aircraft.n.01")
    found = hierarchy.descendants_in(index, [aircraft], imagenet1k)
    assert names(index, found[aircraft]) == {"airliner.n.01", "airship.n.01", "balloon.n.01", "warplane.n.01"}


def test_piston_shares_the_lemma_plunger_with_an_imagenet1k_class(index, imagenet1k):
    april = read_class_list(str(IMAGENOT_APRIL), index)
    assert hierarchy.shared_lemmas(index, april, imagenet1k) == {
        wnid(index, "piston.n.02"): [(wnid(index, "plunger.n.03"), "plunger")]
    }
    # The same synset in both sets is overlap, not a shared lemma.
    dog = wnid(index, "dog.n.01")
    assert hierarchy.shared_lemmas(index, [dog], [dog]) == {}


def test_siblings_are_the_other_hyponyms_of_both_parents(index):
    siblings = names(index, hierarchy.siblings(index, wnid(index, "dog.n.01")))
    assert {"wolf.n.01", "fox.n.01", "jackal.n.01", "domestic_cat.n.01"} <= siblings
    assert "dog.n.01" not in siblings
    assert len(siblings) == 11


def test_nearest_names_the_smallest_of_equally_near_targets(index):
    dog, canine, pet = (wnid(index, n) for n in ("dog.n.01", "canine.n.02", "domestic_animal.n.01"))
    assert hierarchy.nearest(index, [dog], [canine, pet]) == {dog: (1, min(canine, pet))}
    assert hierarchy.nearest(index, [dog], [dog, canine]) == {dog: (0, dog)}
    # Up to animal and down the other path: dog - domestic_animal - animal - chordate.
    assert hierarchy.nearest(index, [dog], [wnid(index, "chordate.n.01")])[dog][0] == 3


def test_nearest_agrees_with_networkx_shortest_paths(index, may, imagenet1k):
    graph = nx.Graph((s.wnid, parent) for s in index for parent in s.hypernyms)
    expected = nx.multi_source_dijkstra_path_length(graph, set(imagenet1k))
    found = hierarchy.nearest(index, may, imagenet1k)
    assert {w: hops for w, (hops, _) in found.items()} == {w: expected[w] for w in may}
    assert all(expected[target] == 0 for _, target in found.values())


def test_may_list_figures_against_imagenet1k(index, may, imagenet1k):
    figures = hierarchy.set_figures(index, may, imagenet1k)
    # The method doc's facts about the released (2024-05-25) list.
    assert figures["with_ancestor_in_set"] == 45
    assert figures["ancestor_pairs"] == 45
    assert not figures["antichain"]
    assert figures["leaf_count"] == 697  # 30.3% are not WordNet leaves
    assert (figures["nodes"], figures["edges"]) == (1957, 1979)
    assert (figures["depth_min"], figures["depth_median"], figures["depth_max"]) == (2, 8.0, 18)
    assert figures["synset_overlap_count"] == 0
    assert (figures["parent_count"], figures["parent_overlap_count"]) == (663, 146)
    assert figures["descendants_of_other"] == 8
    assert figures["ancestors_of_other"] == 11
    assert figures["sharing_lemma_with_other"] == 0
    assert 0.9 < figures["modularity"] < 1  # a tree-like graph splits into tight communities
    assert figures == hierarchy.set_figures(index, may, imagenet1k)  # seeded: same communities


def test_april_list_and_imagenet1k_figures(index, imagenet1k):
    april = read_class_list(str(IMAGENOT_APRIL), index)
    figures = hierarchy.set_figures(index, april, imagenet1k)
    assert (figures["with_ancestor_in_set"], figures["ancestor_pairs"]) == (660, 734)
    assert figures["leaf_count"] == 656
    assert (figures["nodes"], figures["edges"]) == (1877, 1899)
    assert (figures["descendants_of_other"], figures["ancestors_of_other"]) == (54, 53)
    reference = hierarchy.set_figures(index, imagenet1k, april)
    assert reference["antichain"]
    assert (reference["nodes"], reference["edges"], reference["leaf_count"]) == (1860, 1937, 641)
    depths = (reference["depth_min"], reference["depth_median"], reference["depth_max"])
    assert depths == (4, 10.0, 17)


def test_stats_command_writes_the_report(tmp_path, index):
    out = tmp_path / "report"
    result = invoke(stats, ["--classes", str(IMAGENOT_MAY), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert report["reference"]["source"] == "imagenet1k"
    assert report["community"] == {"method": hierarchy.COMMUNITY_METHOD, "seed": 0}
    assert report["classes"]["with_ancestor_in_set"] == 45
    assert report["reference"]["count"] == 1000
    relations = report["relations"]
    gavel = next(r for r in relations["descendant_of_reference"] if r["name"] == "gavel.n.01")
    assert gavel["reference_ancestors"] == [{"wnid": "n03481172", "name": "hammer.n.02"}]
    assert len(relations["ancestor_in_classes"]) == 45
    rows = relations["per_class"]
    assert [r["wnid"] for r in rows] == sorted(read_class_list(str(IMAGENOT_MAY), index))
    markdown = (out / "stats.md").read_text(encoding="utf-8")
    assert "| classes with an ancestor in the set | 45 | 0 |" in markdown
    assert "parent_overlap" in markdown and "seed=0" in markdown
    for plot in PLOTS:
        assert (out / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob(".*"))  # no staging files left behind

    again = tmp_path / "again"
    invoke(stats, ["--classes", str(IMAGENOT_MAY), "--out", str(again)])
    for name in ("stats.json", "stats.md", *PLOTS):
        assert (again / name).read_bytes() == (out / name).read_bytes()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n02084071\nn0208407x\n", "classes.txt:2: 'n0208407x' is not a wnid"),
        ("# only a comment\n", "lists no class"),
    ],
)
def test_a_bad_class_list_is_a_clean_error(tmp_path, text, message):
    classes = tmp_path / "classes.txt"
    classes.write_text(text, encoding="utf-8")
    result = invoke(stats, ["--classes", str(classes), "--out", str(tmp_path / "o")])
    assert result.exit_code != 0
    assert message in result.output
    assert isinstance(result.exception, SystemExit)  # click's error, not a traceback
    assert not (tmp_path / "o").exists()


def test_a_missing_reference_file_is_a_clean_error(tmp_path):
    missing = tmp_path / "nowhere.txt"
    result = invoke(
        stats,
        ["--classes", str(IMAGENOT_MAY), "--reference", str(missing), "--out", str(tmp_path)],
    )
    assert result.exit_code != 0
    assert f"{missing}: cannot read class list" in result.output
    assert isinstance(result.exception, SystemExit)
