"""The run folder's layout lives in pipeline/run/layout.py: the names of what one stage writes and
others read are spelled there only (read from the source), and one function says where a run's
dataset lies."""

import ast
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.pipeline.run import layout

REPO = Path(__file__).resolve().parent.parent
# Names only layout.py may spell: the shared run files, the score column and the audit folders.
SHARED_NAMES = {
    name: getattr(layout, name)
    for name in dir(layout)
    if name.endswith("_FILE") or name.startswith("AUDIT_") or name in {"SCORE_COLUMN", "RUN_CONFIG", "CORPUS_PARTS"}
}


def _spelled(tree: ast.AST, values: set[str]) -> list[tuple[int, str]]:
    """String constants equal to one of `values`, docstrings left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in values and id(node) not in docstrings
    ]


def test_shared_run_file_names_are_spelled_only_in_layout():
    values = set(SHARED_NAMES.values())
    assert {"classes.json", "ranking.tsv", "manifest.json", "gloss_similarity", "audit/embeddings"} <= values
    found = [
        f"{path.relative_to(REPO)}:{line} spells {value!r}"
        for path in sorted((REPO / "pipeline").rglob("*.py"))
        if path.name != "layout.py"
        for line, value in _spelled(ast.parse(path.read_text(encoding="utf-8")), values)
    ]
    assert found == [], "use the names in pipeline/run/layout.py:\n" + "\n".join(found)


def test_the_dataset_lies_with_the_download_when_it_runs_else_with_the_sample(tmp_path):
    for stage in ("sample", "download"):
        (tmp_path / stage / "dataset").mkdir(parents=True)
        pq.write_table(pa.table({"row_id": [stage]}), tmp_path / stage / "dataset" / "part-00000.parquet")
    for enabled, stage in ((True, "download"), (False, "sample")):
        assert layout.dataset_stage(enabled) == stage
        assert layout.dataset_shards(str(tmp_path), layout.dataset_stage(enabled)) == [
            str(tmp_path / stage / "dataset" / "part-00000.parquet")
        ]
    assert layout.DATASET_STAGES == ("download", "sample")
