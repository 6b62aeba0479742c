"""Synset filters (steps 2-5) on real WordNet 3.0 synsets and real reference class lists."""

from __future__ import annotations

import pytest
from profanity_check import predict_prob

from imagenot.filters.leaves import non_leaves
from imagenot.filters.min_captions import too_few_captions
from imagenot.filters.nsfw_synsets import nsfw_removals, nsfw_scores, synset_text
from imagenot.filters.overlap import overlap_removals
from imagenot.filters.select import select_synsets
from imagenot.pipeline.config.reference_lists import reference_wnids

IMAGENOT_2024_05 = "wordnet/data/imagenot_classes_2024-05-25.txt"


def wnid(index, name: str) -> str:
    return index.by_name(name).wnid


@pytest.fixture(scope="module")
def imagenet1k(index):
    return reference_wnids("imagenet1k", index)


def test_paper_keeps_gavel_strict_drops_it_below_hammer(index, imagenet1k):
    gavel = wnid(index, "gavel.n.01")
    assert overlap_removals([gavel], imagenet1k, index, "paper") == {}
    removal = overlap_removals([gavel], imagenet1k, index, "strict")[gavel]
    assert (removal.step, removal.reason) == ("imagenet_overlap", "descendant_of_reference")
    assert removal.cause == wnid(index, "hammer.n.02")
    assert removal.detail == "is a descendant of reference n03481172 hammer.n.02"


def test_strict_drops_aircraft_as_an_ancestor_of_imagenet_planes(index, imagenet1k):
    aircraft = wnid(index, "aircraft.n.01")
    assert overlap_removals([aircraft], imagenet1k, index, "paper") == {}
    removal = overlap_removals([aircraft], imagenet1k, index, "strict")[aircraft]
    assert removal.reason == "ancestor_of_reference"
    assert removal.cause in set(imagenet1k) & index.descendants(aircraft)
    assert wnid(index, "airliner.n.01") in index.descendants(aircraft)


@pytest.mark.parametrize("reading", ["paper", "strict"])
def test_reference_synset_and_shared_lemma_are_dropped_with_the_lemma_named(index, imagenet1k, reading):
    airliner, piston, stephen_crane = (wnid(index, n) for n in ("airliner.n.01", "piston.n.02", "crane.n.01"))
    removals = overlap_removals([airliner, piston, stephen_crane], imagenet1k, index, reading)
    assert removals[airliner].reason == "reference_synset"
    assert removals[piston].reason == "shares_lemma"
    assert removals[piston].detail == "shares lemma 'plunger' with reference n03970156 plunger.n.03"
    # "Crane" (the writer) collides case-insensitively with "crane" (bird n02012849, machine ...)
    assert removals[stephen_crane].reason == "shares_lemma"
    assert removals[stephen_crane].cause == "n02012849"
    assert "'Crane'" in removals[stephen_crane].detail


def test_released_imagenot_list_satisfies_paper_but_not_strict(index, imagenet1k):
    classes = reference_wnids(IMAGENOT_2024_05, index)
    assert overlap_removals(classes, imagenet1k, index, "paper") == {}
    strict = overlap_removals(classes, imagenet1k, index, "strict")
    assert {wnid(index, "aircraft.n.01"), wnid(index, "gavel.n.01")} <= strict.keys()
    reasons = {r.reason for r in strict.values()}
    assert reasons == {"ancestor_of_reference", "descendant_of_reference"}


def test_imagenet21k_reference(index, imagenet1k):
    dog, puppy = wnid(index, "dog.n.01"), wnid(index, "puppy.n.01")
    assert overlap_removals([dog, puppy], imagenet1k, index, "paper") == {}
    imagenet21k = reference_wnids("imagenet21k", index)
    removals = overlap_removals([dog, puppy], imagenet21k, index, "paper")
    assert {w: r.reason for w, r in removals.items()} == {
        dog: "reference_synset",
        puppy: "reference_synset",
    }


def test_class_list_file_reference(index, tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("# my own reference\nn02084071  dog.n.01\n", encoding="utf-8")
    reference = reference_wnids(str(path), index)
    dog, puppy, canine = (wnid(index, n) for n in ("dog.n.01", "puppy.n.01", "canine.n.02"))
    cat = wnid(index, "cat.n.01")
    assert set(overlap_removals([dog, puppy, canine, cat], reference, index, "paper")) == {dog}
    strict = overlap_removals([dog, puppy, canine, cat], reference, index, "strict")
    assert {w: r.reason for w, r in strict.items()} == {
        dog: "reference_synset",
        puppy: "descendant_of_reference",
        canine: "ancestor_of_reference",
    }
    assert strict[puppy].cause == strict[canine].cause == dog


def test_unknown_reading_is_an_error(index, imagenet1k):
    with pytest.raises(ValueError, match="'loose' is not one of paper, strict"):
        overlap_removals([], imagenet1k, index, "loose")


def test_min_captions_counts_usable_captions_and_reports_tagged_ones(index):
    dog, cat, gavel = (wnid(index, n) for n in ("dog.n.01", "cat.n.01", "gavel.n.01"))
    tagged = {dog: 12, cat: 10, gavel: 9}
    usable = {dog: 10, cat: 10}
    removals = too_few_captions([dog, cat, gavel], usable, tagged, 10, index)
    assert set(removals) == {gavel}
    assert removals[gavel].detail == "0 usable captions (9 tagged) < minimum 10"
    assert set(too_few_captions([dog, cat], usable, tagged, 11, index)) == {dog, cat}
    with pytest.raises(ValueError, match="at least 1"):
        too_few_captions([dog], usable, tagged, 0, index)


def test_leaves_drop_the_ancestor_and_name_its_descendant(index):
    names = ("dog.n.01", "puppy.n.01", "cat.n.01", "gavel.n.01")
    dog, puppy, cat, gavel = (wnid(index, n) for n in names)
    removals = non_leaves([dog, puppy, cat, gavel], index)
    assert set(removals) == {dog}
    assert removals[dog].cause == puppy
    assert removals[dog].detail == f"is an ancestor of candidate {puppy} puppy.n.01"


def test_leaves_of_the_released_list_form_an_antichain(index):
    classes = set(reference_wnids(IMAGENOT_2024_05, index))
    removals = non_leaves(classes, index)
    kept = classes - removals.keys()
    assert removals and all(not (index.ancestors(w) & kept) for w in kept)
    for dropped, removal in removals.items():
        assert removal.cause in classes and removal.cause in index.descendants(dropped)


def test_nsfw_classifier_flags_offensive_synsets_only(index):
    flagged = ["fuck.n.01", "cunt.n.01", "nigger.n.01", "prostitute.n.01"]
    clean = ["dog.n.01", "gavel.n.01", "television_receiver.n.01", "kitty.n.04"]
    wnids = [wnid(index, n) for n in flagged + clean]
    removals = nsfw_removals(wnids, index, 0.5)
    assert {r.name for r in removals.values()} == set(flagged)
    assert all(r.reason == "nsfw_text" and "score" in r.detail for r in removals.values())
    assert set(nsfw_removals(wnids, index, 1.0)) < set(removals)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        nsfw_removals(wnids, index, 0.0)


def test_nsfw_text_joins_lemmas_and_gloss_so_the_gloss_gives_the_sense(index):
    tv = index.by_name("television_receiver.n.01")
    assert synset_text(tv).startswith("television receiver, television, ")
    assert predict_prob(["idiot box"])[0] > 0.5  # the lemma alone would be flagged
    assert nsfw_scores([tv.wnid], index)[tv.wnid] < 0.1


def test_select_runs_steps_in_order_and_each_dropped_synset_once(index, imagenet1k):
    names = {
        "gavel.n.01": 50,  # kept by paper
        "airliner.n.01": 50,  # ImageNet
        "piston.n.02": 50,  # shares 'plunger'
        "cat.n.01": 2,  # too few
        "dog.n.01": 50,  # has puppy below
        "puppy.n.01": 50,
        "cunt.n.01": 50,  # NSFW
        "crane.n.05": 1,  # ImageNet and too few: overlap comes first
    }
    tagged = {wnid(index, n): c for n, c in names.items()}
    selection = select_synsets(tagged, tagged, index, reference=imagenet1k, min_count=5)
    steps = {index[w].name: r.step for w, r in selection.removals.items()}
    assert steps == {
        "airliner.n.01": "imagenet_overlap",
        "piston.n.02": "imagenet_overlap",
        "crane.n.05": "imagenet_overlap",
        "cat.n.01": "min_captions",
        "dog.n.01": "leaves",
        "cunt.n.01": "nsfw_synsets",
    }
    assert [index[w].name for w in selection.candidates] == ["puppy.n.01", "gavel.n.01"]
    strict = select_synsets(tagged, tagged, index, reference=imagenet1k, reading="strict", min_count=5)
    assert strict.removals[wnid(index, "gavel.n.01")].step == "imagenet_overlap"
    off = select_synsets(tagged, tagged, index, reference=imagenet1k, min_count=5, nsfw_threshold=None)
    assert wnid(index, "cunt.n.01") in off.candidates


def test_select_rejects_inconsistent_count_tables(index, imagenet1k):
    dog = wnid(index, "dog.n.01")
    with pytest.raises(ValueError, match="'n99999999' is not a WordNet 3.0 noun synset"):
        select_synsets({"n99999999": 3}, {}, index, reference=imagenet1k)
    with pytest.raises(ValueError, match="exceeds its tagged count"):
        select_synsets({dog: 3}, {dog: 4}, index, reference=imagenet1k)


def test_within_keeps_only_the_reference_synsets(index):
    from imagenot.filters.overlap import overlap_removals

    dog, gavel = index.by_name("dog.n.01").wnid, index.by_name("gavel.n.01").wnid
    tench = index.by_name("tench.n.01").wnid  # ImageNet-1k class 0
    removals = overlap_removals([dog, gavel, tench], [tench], index, "within")
    assert sorted(removals) == sorted([dog, gavel])
    assert {r.reason for r in removals.values()} == {"not_in_reference"}
