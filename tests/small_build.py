"""A build small enough for tests (about a minute on 2 cores) that still yields 8 classes."""

SMALL_BUILD = {
    "corpus": {"synth": {"rows": 12_000, "seed": 4, "shard_rows": 3_000}},
    "selection": {"min_captions": 8},
    "scoring": {"first_pass_captions": 10},
    "ranking": {"classes": 8, "top_n": 5, "min_captions": 1, "thresholds": {"packaged:all-MiniLM-L6-v2": 0.3}},
    "sampling": {"images_per_class": 5, "test_per_class": 1, "reserve_factor": 0.4, "shard_rows": 20},
}
