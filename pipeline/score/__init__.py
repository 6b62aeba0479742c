"""Scoring captions against synset glosses with a text encoder."""
