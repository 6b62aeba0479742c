"""A synthetic corpus's defaults, shared by `imagenot synth` (`synth_command.py`, whose `--help`
loads no pyarrow or Beam) and the writer (`synth.py`)."""

DEFAULT_URL_BASE = "http://127.0.0.1:8000/img"
DEFAULT_SHARD_ROWS = 100_000
DEFAULT_CAPTIONS = "realistic"
