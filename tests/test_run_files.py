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


def test_local_reads_answer_as_beams_local_file_system(tmp_path):
    """`review status` reads a local run without Beam (`local_reads`): every read answers what
    Beam's local file system answers, hidden files, nested folders and missing paths included."""
    from apache_beam.io.filesystems import FileSystems as Beam

    from imagenot.pipeline.run.filesystems import UNCOMPRESSED, FileSystems, local_reads

    for name in ("a/x.parquet", "a/.x.parquet.1.partial", "a/b/z.parquet", "c.json", "d e/f?.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(name.encode())
    root = str(tmp_path)
    patterns = [f"{root}/a/*.parquet", f"{root}/**.partial", f"{root}/**", f"{root}/c.json", f"{root}/a/",
                f"{root}/gone/*.parquet", f"{root}/none.json", f"{root}/d e/f?.json", f"{root}/?.json"]  # fmt: skip

    def seen(fs) -> list:
        found = [sorted((m.path, m.size_in_bytes) for m in r.metadata_list) for r in fs.match(patterns)]
        with fs.open(fs.join(root, "c.json"), compression_type=UNCOMPRESSED) as f:
            read = f.read()
        return [found, read, fs.exists(f"{root}/a"), fs.exists(f"{root}/gone"), fs.split(f"{root}/a/x.parquet")]

    with local_reads():
        ours = seen(FileSystems)
    assert ours == seen(Beam) and ours[0][1] == [(f"{root}/a/.x.parquet.1.partial", 22)]
