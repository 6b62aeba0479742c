"""The trained sense head: its weights (`head.npz`, `head.json`) and the numpy code that applies them
(`head.py`); `train.py` is the script that trained them."""
