"""The none-of-these model's weights, written by benchmarks/fit_none_of_these.py (do not edit).

Fit on 345 judged real dev pairs (old single reader (right_sense no)); 5-fold cross-validated AUC 0.747.
"""

WEIGHTS = {
    "capitalised": -0.3176,
    "in_title_run": -0.0394,
    "after_given_name": -0.3165,
    "all_capitals": 0.1859,
    "short": 1.467,
    "beside_digits": -0.3441,
    "beside_modifier": 0.1529,
    "not_english": 0.0237,
    "proper_sense": -0.2462,
    "noun_share": -2.5973,
    "untagged_noun": -1.4073,
    "corpus_capitalised": -0.2394,
    "corpus_capitals": -0.2973,
    "corpus_beside_digits": 0.712,
}
BIAS = 2.6056
