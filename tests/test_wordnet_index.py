import gzip
import shutil

import pytest

from imagenot.pipeline.config.reference_lists import read_class_list, reference_wnids
from imagenot.wordnet import nltk_data
from imagenot.wordnet.classlists import ClassListError
from imagenot.wordnet.index import ROOT_WNID


def test_wnids_are_wordnet_30_offsets(index):
    dog = index.by_name("dog.n.01")
    assert dog.wnid == "n02084071"
    assert index["n02084071"] is dog
    assert dog.lemmas == ("dog", "domestic_dog", "Canis_familiaris")
    assert dog.lexname == "noun.animal"
    assert dog.head == "dog"
    assert len(index) == 82115


def test_depth_is_shortest_hypernym_path(index):
    assert index[ROOT_WNID].name == "entity.n.01"
    assert index[ROOT_WNID].depth == 0
    # dog.n.01 has two hypernym paths (via canine and via domestic_animal); the shorter counts.
    assert index.by_name("dog.n.01").depth == 8
    assert index.by_name("physical_entity.n.01").depth == 1


def test_every_relation_is_in_wnid_order(index):
    """NLTK keeps pointers in a set (its order follows PYTHONHASHSEED); the index sorts them, so
    the cache a machine builds first gives the same order as any other's."""
    for s in index:
        relations = (s.hypernyms, s.hyponyms, s.usage_domains, s.instance_of, *s.lemma_usage_domains)
        assert all(list(wnids) == sorted(wnids) for wnids in relations), s.name


def test_instance_relations_are_part_of_the_hierarchy(index):
    paris = index.by_name("paris.n.01")
    capital = index.by_name("national_capital.n.01")
    assert capital.wnid in paris.hypernyms
    assert paris.wnid in capital.hyponyms


def test_ancestors_and_descendants(index):
    dog = index.by_name("dog.n.01").wnid
    assert index.by_name("canine.n.02").wnid in index.ancestors(dog)
    assert index.by_name("domestic_animal.n.01").wnid in index.ancestors(dog)
    assert ROOT_WNID in index.ancestors(dog)
    assert dog in index.descendants(index.by_name("carnivore.n.01").wnid)
    assert len(index.descendants(ROOT_WNID)) == len(index) - 1


def test_irregular_plurals_come_from_noun_exc(index):
    assert "mouse" in index.irregular["mice"]
    assert "child" in index.irregular["children"]


def test_every_imagenet_wnid_resolves(index):
    assert len(reference_wnids("imagenet1k", index)) == 1000
    assert len(reference_wnids("imagenet21k", index)) == 21843


def test_gavel_descends_from_an_imagenet_class(index):
    imagenet = set(reference_wnids("imagenet1k", index))
    gavel = index.by_name("gavel.n.01").wnid
    assert index.by_name("hammer.n.02").wnid in index.ancestors(gavel) & imagenet


def test_class_list_format(tmp_path, index):
    path = tmp_path / "classes.txt"
    path.write_text("# my classes\nn02084071 dog extra columns\n\n  n03430313\t# gavel\n")
    assert read_class_list(str(path), index) == ["n02084071", "n03430313"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("dog.n.01", "is not a wnid"),
        ("n0208407", "is not a wnid"),
        ("v01234567", "is not a noun synset"),
        ("n99999999", "is not a WordNet 3.0 noun synset offset"),
        ("n02084071", "repeats line 1"),
    ],
)
def test_class_list_errors_name_file_line_and_value(tmp_path, index, line, message):
    path = tmp_path / "bad.txt"
    path.write_text(f"n02084071\n{line}\n")
    with pytest.raises(ClassListError, match=message) as err:
        read_class_list(str(path), index)
    assert f"{path}:2: '{line}'" in str(err.value)


def test_missing_class_list_is_named(tmp_path, index):
    with pytest.raises(ClassListError, match="nope.txt"):
        read_class_list(str(tmp_path / "nope.txt"), index)


def test_lexnames_generated_from_debian_man_page():
    table = nltk_data.lexnames_table().splitlines()
    assert len(table) == 45
    assert table[3] == "03\tnoun.Tops\t1"
    assert table[5] == "05\tnoun.animal\t1"
    assert table[44] == "44\tadj.ppl\t3"


def test_prepare_copies_the_pinned_source_and_checks_it(tmp_path, capsys):
    corpus = nltk_data.prepare(tmp_path)
    assert corpus == nltk_data.wordnet_dir(tmp_path) and corpus.name.endswith(nltk_data.WORDNET_DIGEST[:12])
    assert sorted(p.name for p in corpus.iterdir()) == sorted(nltk_data.PINNED_SHA256)
    assert (corpus / "lexnames").read_text() == nltk_data.lexnames_table()
    assert "preparing WordNet 3.0 once" in capsys.readouterr().err
    assert nltk_data.prepare(tmp_path) == corpus and not capsys.readouterr().err  # a second call does nothing
    assert [p.name for p in tmp_path.iterdir()] == [corpus.name]  # no staging left behind


def test_other_wordnet_files_are_refused_by_name_and_digest(tmp_path):
    source = tmp_path / "debian"
    shutil.copytree(nltk_data.DEBIAN_WORDNET_DIR, source)
    with (source / "data.noun").open("r+b") as f:  # one gloss's letter changed, as another edition's would be
        f.seek(10_000_000)
        byte = f.read(1)
        f.seek(10_000_000)
        f.write(b"x" if byte != b"x" else b"y")
    with pytest.raises(nltk_data.WordNetDataError, match=f"{source}/data.noun: sha256 .*, expected fea17d2f") as err:
        nltk_data.prepare(tmp_path / "cache", source=source)
    assert "wordnet-base=1:3.0-37" in str(err.value)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())


def test_nltks_data_path_is_never_read(tmp_path, monkeypatch):
    """Another WordNet where NLTK looks first (NLTK_DATA) is not the one imagenot reads."""
    other = tmp_path / "nltk_data" / "corpora" / "wordnet"
    other.mkdir(parents=True)
    (other / "data.noun").write_text("  1 another WordNet\n")
    monkeypatch.setenv("NLTK_DATA", str(tmp_path / "nltk_data"))
    monkeypatch.setenv("IMAGENOT_CACHE", str(tmp_path / "cache"))
    assert nltk_data.is_noun_offset(2084071)  # dog.n.01, read from the prepared copy
    assert (nltk_data.wordnet_dir() / "data.noun").stat().st_size == 15_300_280


def test_missing_debian_data_names_the_fix(tmp_path):
    with pytest.raises(nltk_data.WordNetDataError, match="apt-get install .*wordnet-base"):
        nltk_data.prepare(tmp_path / "out", source=tmp_path / "empty")


def test_man_page_with_wrong_table_is_refused(tmp_path):
    bad = tmp_path / "lexnames.5WN.gz"
    with gzip.open(bad, "wt") as f:
        f.write("00\tadj.all\tall adjective clusters\n")
    with pytest.raises(nltk_data.WordNetDataError, match="expected the 45"):
        nltk_data.lexnames_table(bad)
