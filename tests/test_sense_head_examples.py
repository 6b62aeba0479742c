"""WordNet's usage examples as sense-annotated training rows (`labels.sense_model.examples`), real WordNet."""

from imagenot.labels.sense_model.examples import SOURCE, example_rows
from imagenot.wordnet.senses import word_senses

BANKS = ("bank.n.01", "bank.n.03", "bank.n.04", "depository_financial_institution.n.01", "bank.n.10")


def test_each_example_is_a_row_of_its_sense_with_the_word_where_it_stands():
    senses = word_senses()
    rows = example_rows(senses, BANKS)
    river = rows.sentences.index("he sat on the bank of the river and watched the currents")
    assert rows.spans[river] == (14, 18) and rows.gold[river] == senses.index.by_name("bank.n.01").wnid
    assert rows.sentences[rows.gold.index(senses.index.by_name("bank.n.10").wnid)] == "the plane went into a steep bank"
    assert set(rows.docs) == {SOURCE} and set(rows.words) == {"bank"}
    assert all(c == senses.senses("bank") and g in c for c, g in zip(rows.candidates, rows.gold))


def test_an_example_whose_word_has_one_noun_sense_gives_no_row():
    """'a trackball is essentially an upside-down mouse': trackball has nothing to tell apart, and
    mouse, polysemous, is not a lemma of the synset the example shows."""
    assert example_rows(word_senses(), ["trackball.n.01"]).gold == []
