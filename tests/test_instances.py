"""The instance rule: a WordNet instance synset (a named person, place, work or event) is no
candidate unless `selection.instance_synsets` says so; on real WordNet 3.0 and real class lists."""

from __future__ import annotations

import functools

import pytest

from imagenot.filters.select import select_synsets
from imagenot.labels.instances import instance_removals
from imagenot.pipeline.config.reference_lists import reference_wnids

PUBLISHED = ("wordnet/data/imagenot_classes_2024-04-02.txt", "wordnet/data/imagenot_classes_2024-05-25.txt")


@pytest.fixture(scope="module")
def imagenet1k(index):
    return reference_wnids("imagenet1k", index)


def test_instances_are_named_individuals_and_no_published_class_is_one(index, imagenet1k):
    instances = instance_removals(index.synsets, index)
    assert len(instances) == 7_730  # of 82,115 nouns: NLTK's instance_hypernyms() over WordNet 3.0
    armstrong = instances[index.by_name("armstrong.n.02").wnid]
    assert (armstrong.step, armstrong.reason, armstrong.detail) == (
        "instance_synsets",
        "instance_synset",
        "a named individual, not a class of things: an instance of n10220486 jazz_musician.n.01, "
        "n10732010 trumpeter.n.01",  # in wnid order, as data.noun lists them
    )
    assert index.by_name("trumpeter.n.01").wnid not in instances  # the class it belongs to is a class
    for listed in (imagenet1k, *(reference_wnids(path, index) for path in PUBLISHED)):
        assert len(listed) == 1000 and not instance_removals(listed, index)


def test_an_instance_goes_before_step_2_so_its_class_stays_a_leaf(index, imagenet1k):
    names = ("armstrong.n.02", "monet.n.01", "trumpeter.n.01", "gavel.n.01")
    tagged = {index.by_name(n).wnid: 9 for n in names}
    rule = functools.partial(instance_removals, index=index)  # as the select stage hands it over
    selection = select_synsets(
        tagged, tagged, index, reference=imagenet1k, min_count=5, nsfw_threshold=None, instances=rule
    )
    fates = {index[w].name: (r.step, r.reason) for w, r in selection.removals.items()}
    assert fates == {n: ("instance_synsets", "instance_synset") for n in ("armstrong.n.02", "monet.n.01")}
    assert sorted(index[w].name for w in selection.candidates) == ["gavel.n.01", "trumpeter.n.01"]
    kept = select_synsets(tagged, tagged, index, reference=imagenet1k, min_count=5, nsfw_threshold=None)
    assert kept.removals[index.by_name("trumpeter.n.01").wnid].step == "leaves"  # Louis Armstrong lies below it
    assert sorted(index[w].name for w in kept.candidates) == ["armstrong.n.02", "gavel.n.01", "monet.n.01"]
