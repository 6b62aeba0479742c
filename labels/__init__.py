"""The label decision: whether a caption's word, where it stands, names the synset it was kept for
(the span, the caption rules, none of these, the sense scorers and the trained head's weights, the
instance rule), as plain functions below the stages (docs/architecture.md)."""
