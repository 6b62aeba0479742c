"""The none-of-these model's weights, written by benchmarks/fit_none_of_these.py (do not edit).

Fit on 1545 judged real dev pairs (4 readers' majority use); 5-fold cross-validated AUC 0.759.
"""

WEIGHTS = {
    "capitalised": 0.286,
    "in_title_run": 0.2809,
    "after_given_name": 0.349,
    "all_capitals": 0.4581,
    "short": 2.595,
    "beside_digits": 0.2582,
    "beside_modifier": -0.3091,
    "before_noun": 0.7793,
    "few_words": -0.2058,
    "not_english": 0.4182,
    "proper_sense": 0.1193,
    "noun_share": -2.5307,
    "untagged_noun": -0.2768,
    "corpus_capitalised": 2.6669,
    "corpus_capitals": -1.3557,
    "corpus_beside_digits": -0.1699,
}
BIAS = -0.0069
