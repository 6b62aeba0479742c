import pytest

from imagenot.wordnet.index import load_index


@pytest.fixture(scope="session")
def index():
    """The real WordNet 3.0 noun index (prepared by scripts/setup.sh, cached after)."""
    return load_index()
