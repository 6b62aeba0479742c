"""Class lists and blocklists as people save them, and as an attacker writes them: a parse or a clear error."""

import codecs

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imagenot.pipeline.config.reference_lists import read_class_list
from imagenot.wordnet.classlists import ClassListError, parse_class_list

TEXT = "# my classes\nn02084071 dog\nn03430313\n"
WNIDS = ["n02084071", "n03430313"]


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF8 + TEXT.encode("utf-8"),
        TEXT.encode("utf-16"),  # with the platform's BOM
        codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"),
        codecs.BOM_UTF8 + TEXT.replace("\n", "\r\n").encode("utf-8"),  # Notepad's line ends
    ],
    ids=["utf8-bom", "utf16", "utf16-le", "utf16-be", "utf8-bom-crlf"],
)
def test_boms_and_utf16_are_read(tmp_path, index, data):
    path = tmp_path / "classes.txt"
    path.write_bytes(data)
    assert read_class_list(str(path), index) == WNIDS


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (TEXT.encode("utf-16-le"), r"holds NUL characters \(UTF-16 without a BOM\?\)"),
        (b"n02084071\n\xff\xfe", r"not UTF-8 text \(byte 10\)"),
        (codecs.BOM_UTF16_LE + b"n\x00\x00", r"not UTF-16 text"),  # an odd byte count
        (TEXT.encode("latin-1") + "caf\u00e9\n".encode("latin-1"), r"not UTF-8 text"),
    ],
)
def test_other_undecodable_bytes_are_a_clear_error_naming_the_file(tmp_path, index, data, message):
    path = tmp_path / "classes.txt"
    path.write_bytes(data)
    with pytest.raises(ClassListError, match=message) as err:
        read_class_list(str(path), index)
    assert str(path) in str(err.value)


_LINES = st.one_of(
    st.sampled_from(
        ["n02084071", "n03430313", "n02084071 dog", "# note", "", "v01234567", "n99999999", "\ufeffn02084071"]
    ),
    st.text(max_size=30),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.binary(max_size=200),
        st.lists(_LINES, max_size=8).map(lambda lines: "\n".join(lines).encode("utf-8")),
        st.lists(_LINES, max_size=8).map(lambda lines: "\r\n".join(lines).encode("utf-16")),
    )
)
def test_fuzz_any_bytes_parse_or_give_a_class_list_error(index, data):
    try:
        wnids = parse_class_list(data, "fuzz.txt", index)
    except ClassListError as err:
        assert str(err).startswith("fuzz.txt")
    else:
        assert len(wnids) == len(set(wnids)) and all(w in index for w in wnids)


_BLOCKLIST_LINES = st.one_of(
    st.sampled_from(
        [
            "url http://a.example/x.jpg",
            "domain Example.COM.",
            "sha256 " + "ab" * 32,
            "md5 " + "0" * 32,
            "# note",
            "",
            "URL HTTP://A/",
            "domain",
            "sha256 xyz",
            "url a b",
            "\ufeffdomain a",
        ]
    ),
    st.text(max_size=40),
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200), st.lists(_BLOCKLIST_LINES, max_size=8).map(lambda ls: "\n".join(ls).encode("utf-8"))
    ),
    st.lists(
        st.one_of(
            st.none(),
            st.text(max_size=40),
            st.sampled_from(["http://a.example/x.jpg", "http://[::1", "http://x:99999/"]),
        )
    ),
)
def test_fuzz_any_blocklist_bytes_parse_or_give_a_blocklist_error(data, urls):
    from imagenot.pipeline.download.blocklists import Blocklist, BlocklistError

    blocklist = Blocklist()
    try:
        blocklist.add("fuzz.txt", data)
    except BlocklistError as err:
        assert str(err).startswith("fuzz.txt")
        return
    for url in urls:  # a parsed list judges any row URL without raising
        assert blocklist.row_reason(url) in (None, "blocklist_url", "blocklist_domain")
