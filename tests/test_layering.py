"""The layers hold: `imagenot.wordnet` at the bottom, `imagenot.filters` above it, the label
decision (`imagenot.labels`) above that, then `imagenot.pipeline`. The lower layers are plain
functions over plain data: no Beam, no command line, no plotting, no reaching up into a layer
above. Within the pipeline, each folder stands on a floor (`FLOORS`) and imports only the floors
below it, a stage only the stages before it (in the registry's order); and no module imports
itself round a circle. Read from the source's imports."""

import ast
from pathlib import Path

import pytest

from imagenot.pipeline.frame.stage_order import STAGE_NAMES

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "imagenot": {
        "apache_beam",
        "click",
        "matplotlib",
        "imagenot.pipeline",
        "imagenot.labels",
        "imagenot.filters",
        "imagenot.wordnet",
    },
    "wordnet": {"apache_beam", "click", "matplotlib", "imagenot.pipeline", "imagenot.labels", "imagenot.filters"},
    "filters": {"apache_beam", "click", "matplotlib", "imagenot.pipeline", "imagenot.labels"},
    "labels": {"apache_beam", "click", "matplotlib", "imagenot.pipeline"},
}
OUR_FOLDERS = ("imagenot", "wordnet", "filters", "labels", "pipeline", "tests", "benchmarks")


def _imports(path: Path, with_names: bool = False) -> list[tuple[int, str]]:
    """(line, module) of each import, those inside functions included; `with_names`: also
    `module.name` of each name a `from` import takes (which may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.lineno, node.module))
            if with_names:
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
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
        if _within(module, {"pipeline", "wordnet", "filters", "labels"})
    ]
    assert not bare, "\n".join(bare)


# Packages of the optional extras, and the only modules that may import them.
OPTIONAL = {
    "faiss": ("pipeline/audit/",),
    "cleanlab": ("pipeline/audit/",),
    "skimage": ("pipeline/demo/image_server.py",),
    "ahocorasick": (),  # dev only: the tests' reference matcher
    "flask": ("pipeline/review/app.py", "pipeline/review/web.py", "pipeline/review/class_app.py"),
    "waitress": ("pipeline/review/serving.py",),
    "crowdkit": ("pipeline/review/aggregate.py",),
}


def test_optional_extras_are_imported_only_where_their_commands_live():
    strays = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for folder in ("imagenot", "wordnet", "filters", "labels", "pipeline")
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, module in _imports(path)
        if module.split(".")[0] in OPTIONAL
        and not any(path.relative_to(REPO).as_posix().startswith(p) for p in OPTIONAL[module.split(".")[0]])
    ]
    assert not strays, "\n".join(strays)


# The pipeline's folders floor by floor, from the bottom: what a folder is, docs/architecture.md.
FLOORS = (
    ("run",),  # the run folder: its layout, files, lock, stage folders, shards, summary
    ("config",),  # the config's schema and what its names resolve to
    ("dataset", "demo"),  # the exported dataset's formats; the demo's image server
    ("frame",),  # what every stage stands on: the registry, the stage command, preflight, the runner
    STAGE_NAMES,  # the stages, each above the stages before it
    ("amend", "plan"),  # drop and backfill, blocklists; `imagenot plan`
    ("audit",),  # audits of a finished dataset
    ("review",),  # human review of a finished dataset
    ("commands",),  # commands over the whole pipeline: build, why, stats
    ("",),  # the pipeline's root: the command line
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts if parts[0] == "imagenot" else ("imagenot", *parts))


def _pipeline_modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((REPO / "pipeline").rglob("*.py"))}


def _folder_of(module: str) -> str | None:
    """The pipeline folder a module lies in ("" for the pipeline's root); None outside the pipeline."""
    parts = module.split(".")
    if parts[:2] != ["imagenot", "pipeline"]:
        return None
    return parts[2] if len(parts) > 2 and (REPO / "pipeline" / parts[2]).is_dir() else ""


def _floor(folder: str) -> tuple[int, int]:
    """(floor, place among the stages): a stage stands on the stages before it too."""
    floor = next(i for i, folders in enumerate(FLOORS) if folder in folders)
    return floor, STAGE_NAMES.index(folder) if folder in STAGE_NAMES else 0


def test_every_pipeline_folder_has_a_floor():
    folders = {path.name for path in (REPO / "pipeline").iterdir() if (path / "__init__.py").exists()}
    folders |= {path.parent.name for path in (REPO / "pipeline").glob("*/*.py")}
    assert folders - {f for floor in FLOORS for f in floor} == set()


def test_each_folder_imports_only_the_floors_below_it():
    """So no folder imports a folder above it, and no two folders import each other."""
    breaches = [
        f"{path.relative_to(REPO)}:{line} ({own or 'root'}) imports {module}"
        for name, path in _pipeline_modules().items()
        for line, module in _imports(path)
        if (other := _folder_of(module)) is not None
        and other != (own := _folder_of(name))
        and _floor(other) >= _floor(own)
    ]
    assert not breaches, "\n".join(breaches)


def _import_graph() -> dict[str, set[str]]:
    folders = ("imagenot", "wordnet", "filters", "labels", "pipeline")
    modules = {_module_name(path): path for folder in folders for path in (REPO / folder).rglob("*.py")}
    return {
        name: {module for _, module in _imports(path, with_names=True) if module in modules and module != name}
        for name, path in modules.items()
    }


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_round_a_circle():
    assert _circles(_import_graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
