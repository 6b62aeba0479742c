"""The run folder and how every stage runs over it: its layout, file access, lock, stage folders, shards,
progress and the Beam runner."""
