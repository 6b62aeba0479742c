"""Corpus input: reading corpus files in every format img2dataset reads, presets, the check before
any stage, and generating synthetic corpora."""
