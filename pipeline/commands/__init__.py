"""Commands over the whole pipeline: build, one stage, why, stats, and their shared options."""
