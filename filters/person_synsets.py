"""Drop person synsets that sort people by who they are, or (setting `all`) every person synset.

A picture cannot show a person's ethnicity, nationality, religion, sexual orientation, sex or
gender identity, or disability; a class that claims to is a stereotype, and ImageNet removed such
synsets in 2019 (Yang et al., "Towards Fairer Datasets", FAT* 2020). The rule is WordNet's own
hierarchy: a `noun.person` synset is an identity synset when it is one of IDENTITY_ROOTS or
descends from one (instance links included, so named people filed under "Muslim" go too). Each
root was chosen by reading its subtree in WordNet 3.0; the README lists them with their counts.

Modes (`selection.person_synsets`): `identity` drops identity synsets; `all` drops every
`noun.person` synset (ImageNet's choice for people who cannot be told apart in a picture), identity
synsets under their category, the rest as `person_synset`; `keep` drops none.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Literal

from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex

STEP = "person_synsets"
PERSON_LEXNAME = "noun.person"
Mode = Literal["identity", "all", "keep"]
MODES: tuple[Mode, ...] = ("identity", "all", "keep")
ANY_PERSON = "person_synset"  # the reason of a person synset `all` drops that is no identity synset

# reason -> root synsets; a synset under roots of several categories takes the first category
# (WordNet files Asian nationals under person_of_color.n.01 too: "Japanese" reads as a nationality).
IDENTITY_ROOTS = {
    "identity_nationality": (
        "inhabitant.n.01",  # Americans, Europeans, Frenchmen, Parisians, also villagers and residents
        "native.n.01",  # Filipinos, Russians
        "native.n.02",
        "african.n.01",
        "compatriot.n.01",
        "foreigner.n.01",  # gringo, au pair, metic
        "emigrant.n.01",
        "immigrant.n.01",
    ),
    "identity_race_ethnicity": (
        "person_of_color.n.01",  # Amerindians, Asians (by people and by country), Black people
        "white.n.01",  # Caucasians, Semites, WASPs
        "mixed-blood.n.01",  # mulatto, quadroon, metis
        "mestizo.n.01",
        "ethnic.n.01",
        "slav.n.01",
        "latin.n.03",  # peoples whose languages derive from Latin
        "jat.n.01",
        "jew.n.01",  # by descent or conversion; Hebrews, Levites
        "tribesman.n.01",
        "primitive.n.01",  # "savage", "aborigine": peoples ranked by a supposed stage of civilization
        "outcaste.n.01",  # caste
        "passer.n.02",  # passes as a member of another ethnic group
    ),
    "identity_religion": (
        "religious_person.n.01",  # believers of each faith, clergy of none: monks, nuns, imams
        "nonreligious_person.n.01",  # atheists, heathens, infidels
        "gentile.n.02",
        "convert.n.01",
        "totemist.n.01",
    ),
    "identity_sexual_orientation": (
        "homosexual.n.01",
        "heterosexual.n.01",
        "bisexual.n.01",  # also intersex people (hermaphrodite), filed under it
        "pansexual.n.01",
    ),
    "identity_sex_gender": (
        "male.n.02",  # men and boys, and every "-man" under them
        "female.n.02",  # women and girls, and every "-woman" under them
        "transvestite.n.01",
        "transsexual.n.02",
    ),
    "identity_disability": (
        "handicapped_person.n.01",  # paralytics, amnesics, aphasics
        "visually_impaired_person.n.01",
        "color-blind_person.n.01",
        "deaf_person.n.01",
        "cripple.n.01",
        "amputee.n.01",
        "dyslectic.n.01",
        "idiot.n.01",  # intellectual disability ("retard", "moron" are its lemmas)
        "idiot_savant.n.01",
        "subnormal.n.01",
        "dwarf.n.01",
        "sick_person.n.01",  # named by an illness: diabetics, epileptics, lepers, neurotics
        "asthmatic.n.01",
    ),
}
IDENTITY_LABELS = {
    "identity_nationality": "nationality or origin",
    "identity_race_ethnicity": "race or ethnicity",
    "identity_religion": "religion",
    "identity_sexual_orientation": "sexual orientation",
    "identity_sex_gender": "sex or gender identity",
    "identity_disability": "disability or illness",
}


@functools.lru_cache(maxsize=2)
def identity_synsets(index: NounIndex) -> dict[str, tuple[str, str]]:
    """wnid -> (reason, the root it descends from) for every identity synset, computed once per index."""
    found: dict[str, tuple[str, str]] = {}
    for reason, names in IDENTITY_ROOTS.items():
        for name in names:
            root = index.by_name(name).wnid
            for wnid in sorted({root, *index.descendants(root)}):
                if index[wnid].lexname == PERSON_LEXNAME:
                    found.setdefault(wnid, (reason, root))
    return dict(sorted(found.items()))


def person_removals(candidates: Iterable[str], index: NounIndex, mode: Mode) -> dict[str, Removal]:
    """The candidates `mode` drops, each with its category and the root that puts it there."""
    if mode not in MODES:
        raise ValueError(f"person_synsets mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "keep":
        return {}
    identity = identity_synsets(index)
    removals = {}
    for wnid in sorted(set(candidates)):
        synset = index[wnid]
        if wnid in identity:
            reason, root = identity[wnid]
            where = "is" if root == wnid else "descends from"
            detail = f"names people by {IDENTITY_LABELS[reason]}: {where} {root} {index[root].name}"
            removals[wnid] = Removal(wnid, synset.name, STEP, reason, detail, root)
        elif mode == "all" and synset.lexname == PERSON_LEXNAME:
            removals[wnid] = Removal(wnid, synset.name, STEP, ANY_PERSON, "a noun.person synset (person_synsets: all)")
    return removals
