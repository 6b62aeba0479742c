"""The sense scorers of step 7: the caption's sentence (`sentence.py`), the word read where it
stands (`context.py`) and the trained head (`trained.py`), over encoders the caller gives
(`encoders.py`) and the settings it gives (`settings.py`)."""
