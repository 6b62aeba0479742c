import json

import pytest

from imagenot.pipeline.run.files import atomic_output, write_json


def test_write_json_is_sorted_and_replaces(tmp_path):
    path = tmp_path / "sub" / "out.json"
    write_json(path, {"b": 1, "a": [2, 1]})
    assert path.read_text() == '{\n  "a": [\n    2,\n    1\n  ],\n  "b": 1\n}\n'
    write_json(path, {"c": 3})
    assert json.loads(path.read_text()) == {"c": 3}
    assert [p.name for p in path.parent.iterdir()] == ["out.json"]


def test_failed_write_leaves_nothing(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_output(path) as stream:
            stream.write(b"half")
            raise RuntimeError("killed")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]
