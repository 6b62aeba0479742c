"""The stages' names in build order, for the command line, which must not import the stages
(they load Beam and torch); `pipeline.frame.registry` loads each by name."""

STAGE_NAMES = ("corpus", "tag", "select", "score", "rank", "sample", "download", "report", "export")
