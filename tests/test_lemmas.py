import pyarrow as pa
import pytest

from imagenot.wordnet.lemmas import is_common_noun, normalize, normalize_text, regular_plurals


@pytest.mark.parametrize(
    ("spellings", "normalised"),
    [
        (["go-kart", "Go Kart", "go_kart", "GO--KART!"], "go kart"),
        (
            ["jack-o'-lantern", "Jack-O-Lantern", "jack o lantern", "Jack-O\u2019-Lantern"],
            "jack o lantern",
        ),
        (
            ["Golden   Retriever", "golden-retriever", "(golden_retriever)", "Golden / Retriever"],
            "golden retriever",
        ),
        (["St. Bernard", "st bernard", "St.Bernard"], "st bernard"),
        (["U.S.", "u s", "U. S."], "u s"),
        (["4-wheel drive", "4 Wheel Drive"], "4 wheel drive"),
        (["Ctrl-Alt-Del", "ctrl+alt+del"], "ctrl alt del"),
        (["o'clock", "O\u2019Clock"], "oclock"),
        (["Café", "CAFE", "cafe\u0301"], "cafe"),  # precomposed, upper-case, combining accent
        (["\ufb01sh", "FISH"], "fish"),  # ligature
        (["dogs'", "DOGS", "dogs's"], "dogs"),  # an apostrophe goes; so does a possessive 's
        (["dog's", "DOG’S", "dog"], "dog"),
        (["rock 'n' roll", "Rock-n-Roll"], "rock n roll"),
    ],
)
def test_spellings_normalise_alike(spellings, normalised):
    assert [normalize(s) for s in spellings] == [normalised] * len(spellings)


def test_normalisation_keeps_other_letters_and_digits_and_nulls():
    assert normalize("Øresund — 日本 2019…") == "øresund 日本 2019"
    assert normalize_text(pa.array(["  ", None, "!!!"])).to_pylist() == ["", None, ""]


@pytest.mark.parametrize(
    ("word", "plurals"),
    [
        ("dog", ["dogs"]),
        ("box", ["boxes"]),
        ("church", ["churches"]),
        ("pony", ["ponies"]),
        ("boy", ["boys"]),
        ("knife", ["knifes", "knives"]),
        ("leaf", ["leafs", "leaves"]),
        ("potato", ["potatos", "potatoes"]),
        ("fireman", ["firemans", "firemen"]),
        ("ox", []),  # too short: "a", "i" would claim "as", "is"; "oxen" comes from noun.exc
    ],
)
def test_regular_plurals(word, plurals):
    assert regular_plurals(word) == plurals


@pytest.mark.parametrize(
    ("lemma", "common"),
    [
        ("golden_retriever", True),
        ("jack-o'-lantern", True),
        ("Labrador_retriever", True),
        ("Paris", False),
        ("Saint_Bernard", False),
        ("U.S.", False),
        ("20/20", False),
    ],
)
def test_proper_nouns_are_told_by_their_last_word(lemma, common):
    assert is_common_noun(lemma) is common


def test_every_lemma_is_a_surface_form_of_all_its_synsets(index, forms):
    normalised = normalize_text(pa.array(list(index.lemma_synsets))).to_pylist()
    for (lemma, wnids), form in zip(index.lemma_synsets.items(), normalised):
        assert set(wnids) <= set(forms[form]), lemma
    assert all(wnids == tuple(sorted(set(wnids))) for wnids in forms.values())


def test_inflections_tag_their_lemmas_synsets(index, forms):
    def wnid(name):
        return index.by_name(name).wnid

    assert wnid("dog.n.01") in forms["dogs"]
    assert wnid("box.n.01") in forms["boxes"]
    assert wnid("pony.n.01") in forms["ponies"]
    assert wnid("golden_retriever.n.01") in forms["golden retrievers"]
    assert wnid("jack-o'-lantern.n.02") in forms["jack o lanterns"]
    assert wnid("mouse.n.01") in forms["mice"]  # noun.exc
    assert wnid("meadow_vole.n.01") in forms["meadow mice"]  # noun.exc, in the last word
    assert wnid("adjutant.n.01") in forms["aides de camp"]  # noun.exc, whole lemma
    assert wnid("mother-in-law.n.01") in forms["mothers in law"]  # head before a preposition
    assert wnid("bird_of_paradise.n.01") in forms["birds of paradise"]
    assert wnid("man-of-war.n.01") in forms["men of war"]
    assert wnid("goose.n.01") in forms["geese"]
    assert wnid("child.n.01") in forms["children"]
    assert wnid("woman.n.01") in forms["women"]  # -man -> -men
    assert wnid("knife.n.01") in forms["knives"]


def test_a_form_shared_by_lemmas_tags_all_their_synsets(index, forms):
    # "glasses" is a lemma (spectacles) and the plural of "glass"; "painter" names four synsets.
    assert {index.by_name("spectacles.n.01").wnid, index.by_name("glass.n.02").wnid} <= set(forms["glasses"])
    painter = {index.by_name(n).wnid for n in ("painter.n.01", "cougar.n.01")}
    assert painter <= set(forms["painter"]) and len(forms["painter"]) == 4


def test_proper_nouns_and_function_words_get_no_plural(forms):
    assert "paris" in forms and "pariss" not in forms and "parises" not in forms
    assert "is" not in forms and "his" not in forms
