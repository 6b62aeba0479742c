"""Blocklist files as a careless operator writes them: an entry that can match no host is refused
naming the file and line, and a list that is not there, or is a folder, is named by the option
that named it, in one line."""

import pytest
from cli_runner import invoke

from imagenot.pipeline.amend.blocklist import apply_command
from imagenot.pipeline.download.blocklists import Blocklist, BlocklistError


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("*.127.0.0.1", "a wildcard over an IP address"),
        ("127.0.0.1:8791", "a port"),
        ("example.com:443", "a port"),
        ("*.example.com", "wildcards are not read"),
        ("https://example.com/", "it is a URL or a path"),
        ("example..com", "an empty label"),
        ("0.0.1", "it ends in a number"),
    ],
)
def test_a_domain_that_can_match_no_host_is_refused_naming_the_file_and_line(entry, why):
    with pytest.raises(BlocklistError) as raised:
        Blocklist().add("list.txt", f"domain example.org\ndomain {entry}\n".encode())
    assert str(raised.value).startswith(f"list.txt:2: domain {entry!r} can match no host: {why}")


def test_an_address_and_a_name_match_as_listed():
    blocklist = Blocklist()
    blocklist.add("list.txt", b"domain 127.0.0.1\ndomain [::1]\ndomain bad.example\n")
    assert blocklist.row_reason("http://127.0.0.1:8791/a.jpg") == "blocklist_domain"
    assert blocklist.row_reason("http://[::1]:8791/a.jpg") == "blocklist_domain"
    assert blocklist.row_reason("http://img.bad.example/a.jpg") == "blocklist_domain"
    assert blocklist.row_reason("http://127.0.0.2/a.jpg") is None


@pytest.mark.parametrize("what", ["missing", "folder"])
def test_blocklist_apply_names_the_list_option_in_one_line(tmp_path, what):
    (tmp_path / "config.yaml").write_text("download:\n  enabled: true\n")
    listed = tmp_path / "lists"
    if what == "folder":
        listed.mkdir()
        (listed / "list.txt").write_text("domain example.org\n")
    result = invoke(apply_command, ["--run", str(tmp_path), "--list", str(listed)])
    assert result.exit_code == 1, result.output
    expected = "is a folder: name a list file" if what == "folder" else "does not exist"
    assert result.output.strip().splitlines() == [f"Error: --list: {listed} {expected}"]
