"""The none-of-these model's weights, written by benchmarks/fit_none_of_these.py (do not edit).

Fit on 1545 judged real dev pairs (4 readers' majority use); 5-fold cross-validated AUC 0.758.
"""

WEIGHTS = {
    "capitalised": 0.2453,
    "in_title_run": 0.3049,
    "after_given_name": 0.3455,
    "all_capitals": 0.4748,
    "short": 2.7339,
    "beside_digits": 0.2698,
    "beside_modifier": -0.3969,
    "before_noun": 0.774,
    "few_words": -0.2105,
    "not_english": 0.4511,
    "proper_sense": 0.0671,
    "noun_share": -2.4026,
    "untagged_noun": -0.3375,
    "corpus_capitalised": 2.7707,
    "corpus_capitals": -1.6852,
    "corpus_beside_digits": -0.186,
}
BIAS = -0.0913
