"""The layers hold: `imagenot.wordnet` at the bottom, `imagenot.filters` above it, then
`imagenot.pipeline`. The lower layers are plain functions over plain data: no Beam, no command
line, no plotting, no reaching up into a layer above. Read from the source's imports."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "imagenot": {"apache_beam", "click", "matplotlib", "imagenot.pipeline", "imagenot.filters", "imagenot.wordnet"},
    "wordnet": {"apache_beam", "click", "matplotlib", "imagenot.pipeline", "imagenot.filters"},
    "filters": {"apache_beam", "click", "matplotlib", "imagenot.pipeline"},
}
OUR_FOLDERS = ("imagenot", "wordnet", "filters", "pipeline", "tests", "benchmarks")


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _within(module: str, packages: set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_lower_layers_import_nothing_from_above(folder):
    breaches = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, module in _imports(path)
        if _within(module, FORBIDDEN[folder])
    ]
    assert not breaches, "\n".join(breaches)


def test_our_modules_are_imported_through_the_imagenot_namespace():
    bare = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for folder in OUR_FOLDERS
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, module in _imports(path)
        if _within(module, {"pipeline", "wordnet", "filters"})
    ]
    assert not bare, "\n".join(bare)


# Packages of the optional extras, and the only modules that may import them.
OPTIONAL = {
    "faiss": ("pipeline/audit/",),
    "cleanlab": ("pipeline/audit/",),
    "skimage": ("pipeline/download/loopback.py",),
    "ahocorasick": (),  # dev only: the tests' reference matcher
    "flask": ("pipeline/review/app.py",),
    "waitress": ("pipeline/review/command.py",),
    "crowdkit": ("pipeline/review/aggregate.py",),
}


def test_optional_extras_are_imported_only_where_their_commands_live():
    strays = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for folder in ("imagenot", "wordnet", "filters", "pipeline")
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, module in _imports(path)
        if module.split(".")[0] in OPTIONAL
        and not any(path.relative_to(REPO).as_posix().startswith(p) for p in OPTIONAL[module.split(".")[0]])
    ]
    assert not strays, "\n".join(strays)
