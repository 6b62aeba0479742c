"""Corpus input: reading LAION-style parquet shards, and generating synthetic ones."""
