"""The encoders the label decision reads with: text encoders (`text.py`), a word read where it stands
(`spans.py`), and the text models they load by the names a config gives (`models.py`)."""
