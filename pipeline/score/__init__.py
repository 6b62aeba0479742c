"""Scoring captions against synset glosses with a text encoder, and ranking synsets by it."""
