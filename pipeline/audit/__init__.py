"""Audits of a built dataset: rankings across datasets, label noise, embeddings, duplicates, agreement."""
