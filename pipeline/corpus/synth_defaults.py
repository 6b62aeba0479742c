"""A synthetic corpus's defaults, shared by `imagenot synth` (`synth_command.py`, whose `--help`
loads no numpy, pyarrow or Beam) and the writer (`synth.py`)."""

DEFAULT_URL_BASE = "http://127.0.0.1:8000/img"
DEFAULT_SHARD_ROWS = 100_000
DEFAULT_CAPTIONS = "realistic"
CAPTION_KINDS = ("realistic", "compact")  # captions.py writes them; see there
