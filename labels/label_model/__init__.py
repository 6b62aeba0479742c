"""The label model: whether a caption's picture shows its class, learned from judged captions
(`model.py`; its features, `features.py`; its seeded trainer, `train.py`)."""
