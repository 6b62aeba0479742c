"""The tag stage: WordNet noun lemmas matched in captions, one Arrow batch at a time."""

from imagenot.pipeline.tag.matcher import LemmaMatcher, Tags, count_synsets

__all__ = ["LemmaMatcher", "Tags", "count_synsets"]
