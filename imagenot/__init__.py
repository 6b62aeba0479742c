"""imagenot: build ImageNot-style contrast datasets from LAION-style image/caption metadata.

The repository's top-level folders install under this namespace: `imagenot.wordnet` (WordNet
access), `imagenot.filters` (synset and caption filters) and `imagenot.pipeline` (Beam stages,
the run folder and the command line). See docs/architecture.md.
"""
