"""WordNet's own usage examples as sense-annotated text: each noun synset's examples where one of
its lemmas stands, annotated with that synset. Lexicographers wrote them to show a sense, so they
reach the rare senses SemCor's running text seldom annotates (8,896 rows of 2+-sense words from
11,489 noun examples); they are not SemCor's documents, so no held-apart document is read."""

from __future__ import annotations

from collections.abc import Iterable

from imagenot.labels.spans import caption_words, first_span
from imagenot.wordnet.nltk_data import load_nltk_wordnet
from imagenot.wordnet.semcor import PolysemousRows
from imagenot.wordnet.senses import WordSenses

SOURCE = "wordnet-examples"


def example_rows(senses: WordSenses, names: Iterable[str] | None = None) -> PolysemousRows:
    """One row per noun example in which a lemma of its synset stands (the first that does), the
    word having two or more noun senses, in WordNet's synset order; of the synsets `names`
    (`dog.n.01`) only, when given."""
    out = PolysemousRows([], [], [], [], [], [], [])
    wordnet = load_nltk_wordnet()
    for synset in wordnet.all_synsets("n") if names is None else map(wordnet.synset, names):
        examples = synset.examples()
        if not examples:
            continue
        wnid = f"n{synset.offset():08d}"
        forms = [(form, word) for form, word in senses.forms(wnid).items() if len(senses.senses(word)) > 1]
        for example in examples:
            words = caption_words([example])[0]
            found = next(((span, w) for f, w in forms if (span := first_span(words, [f]))), None)
            if found is None:
                continue
            span, word = found
            out.docs.append(SOURCE)
            out.sentences.append(example)
            out.spans.append(span)
            out.lemmas.append(word)
            out.words.append(word)
            out.candidates.append(senses.senses(word))
            out.gold.append(wnid)
    return out
