"""The report stage: a finished run described for its users, as `report/card.md` (the dataset
card) and `report/report.html` (one self-contained page with plots)."""
