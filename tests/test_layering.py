"""The layers hold: `imagenot.wordnet` at the bottom, `imagenot.filters` above it, then
`imagenot.pipeline`. The lower layers are plain functions over plain data: no Beam, no command
line, no plotting, no reaching up into a layer above. Within the pipeline, a stage imports only
the stages before it (in the registry's order) and shared modules; shared modules import no
stage; and no module imports itself round a circle. Read from the source's imports."""

import ast
from pathlib import Path

import pytest

from imagenot.pipeline.stage_order import STAGE_NAMES

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "imagenot": {"apache_beam", "click", "matplotlib", "imagenot.pipeline", "imagenot.filters", "imagenot.wordnet"},
    "wordnet": {"apache_beam", "click", "matplotlib", "imagenot.pipeline", "imagenot.filters"},
    "filters": {"apache_beam", "click", "matplotlib", "imagenot.pipeline"},
}
OUR_FOLDERS = ("imagenot", "wordnet", "filters", "pipeline", "tests", "benchmarks")


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
        if _within(module, {"pipeline", "wordnet", "filters"})
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
        for folder in ("imagenot", "wordnet", "filters", "pipeline")
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, module in _imports(path)
        if module.split(".")[0] in OPTIONAL
        and not any(path.relative_to(REPO).as_posix().startswith(p) for p in OPTIONAL[module.split(".")[0]])
    ]
    assert not strays, "\n".join(strays)


# Pipeline modules that sit above every stage: commands over several stages' outputs.
ABOVE_STAGES = {
    "imagenot.pipeline.amend",  # drop and backfill (reruns the download stage, rewrites the export), blocklists
    "imagenot.pipeline.audit",  # the audits of a finished dataset
    "imagenot.pipeline.commands.build",
    "imagenot.pipeline.commands.why",
    "imagenot.pipeline.plan",  # the sample through the tag and select stages' functions
    "imagenot.pipeline.review",  # human review of a finished dataset
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts if parts[0] == "imagenot" else ("imagenot", *parts))


def _pipeline_modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((REPO / "pipeline").rglob("*.py"))}


def _stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 and parts[:2] == ["imagenot", "pipeline"] and parts[2] in STAGE_NAMES else None


def test_each_stage_imports_only_the_stages_before_it():
    breaches = [
        f"{path.relative_to(REPO)}:{line} ({stage}) imports {module}"
        for name, path in _pipeline_modules().items()
        if (stage := _stage_of(name))
        for line, module in _imports(path, with_names=True)
        if (other := _stage_of(module)) and STAGE_NAMES.index(other) > STAGE_NAMES.index(stage)
    ]
    assert not breaches, "\n".join(breaches)


# Shared modules' imports of a stage, each with its reason.
ALLOWED: set[tuple[str, str]] = set()  # none: a stage's checks reach commands through its declaration


def test_shared_modules_import_no_stage():
    breaches = [
        f"{path.relative_to(REPO)}:{line} imports {module}"
        for name, path in _pipeline_modules().items()
        if _stage_of(name) is None and not _within(name, ABOVE_STAGES)
        for line, module in _imports(path, with_names=True)
        if _stage_of(module) and not any(name == a and _within(module, {b}) for a, b in ALLOWED)
    ]
    assert not breaches, "\n".join(breaches)


def _import_graph() -> dict[str, set[str]]:
    folders = ("imagenot", "wordnet", "filters", "pipeline")
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
