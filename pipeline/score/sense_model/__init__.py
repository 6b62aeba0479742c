"""The trained sense head: its weights (`head.npz`, `head.json`), the numpy code that applies them
(`head.py`) and the script that trained them (`train.py`)."""
