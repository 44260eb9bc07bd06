"""The house: the product never imports the stage, no module imports itself through others, and no room in
the product is too big to live in. Imports are read from the source (every ``import``, also inside
functions), so an import hidden in a function body counts as much as one at the top."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("mcp_server", "supervisor", "watchdog", "console", "deploy")
STAGE = ("chaos", "evals", "bench", "docgen", "tests")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450


def _modules(packages: Iterable[str]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(module: str, source: str, is_package: bool) -> Iterator[str]:
    """Every name ``source`` imports, anywhere in it, relative imports made absolute; ``from a import b`` is
    ``a.b`` (the module ``a.b``, or the name ``b`` in the module ``a``: see ``import_graph``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (the nearest enclosing module of each imported name). A
    package's ``__init__`` that runs because a submodule of it is imported is not an edge: that is how
    Python loads packages, not a dependency the code chose."""
    graph = {}
    for name, path in modules.items():
        edges = set()
        for target in imported(name, path.read_text(), path.name == "__init__.py"):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def stage_imports(modules: Mapping[str, Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {target}"
        for name, path in modules.items()
        for target in sorted(set(imported(name, path.read_text(), path.name == "__init__.py")))
        if target.split(".")[0] in STAGE
    ]


def oversized(modules: Mapping[str, Path]) -> list[str]:
    too_big = []
    for path in modules.values():
        source = path.read_text()
        where = path.relative_to(ROOT)
        if len(source.splitlines()) > MAX_MODULE_LINES:
            too_big.append(f"{where}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_big.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return too_big


def test_the_product_imports_nothing_from_the_stage() -> None:
    assert stage_imports(_modules(PRODUCT)) == []


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(import_graph(_modules(PRODUCT + STAGE))) == []


def test_no_room_in_the_product_is_too_big_to_live_in() -> None:
    assert oversized(_modules(PRODUCT)) == []


# --------------------------------------------------------------------------- the checks can fail


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    modules = {}
    for name, source in files.items():
        path = tmp_path / f"{name.replace('.', '/')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        modules[name] = path
    return modules


def test_a_stage_import_inside_a_function_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    modules = _tree(tmp_path, {"console.page": "def render():\n    from evals.prices import price_of\n"})
    assert stage_imports(modules) == ["console/page.py imports evals.prices.price_of"]


def test_a_circle_through_a_package_and_a_function_body_is_found(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "chaos.sandbox.emulator": "from chaos.sandbox import extensions\n",
            "chaos.sandbox.extensions.__init__": "from .alarms import evaluate\n",
            "chaos.sandbox.extensions.alarms": "def evaluate():\n    from ..emulator import start\n",
            "chaos.sandbox.names": "import chaos.sandbox.emulator\n",
        },
    )
    modules = {name.removesuffix(".__init__"): path for name, path in modules.items()}
    assert cycles(import_graph(modules)) == [
        ["chaos.sandbox.emulator", "chaos.sandbox.extensions", "chaos.sandbox.extensions.alarms"]
    ]


def test_a_long_function_and_a_long_module_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    body = "".join(f"    x{n} = {n}\n" for n in range(MAX_FUNCTION_LINES))
    modules = _tree(tmp_path, {"deploy.big": f"def build():\n{body}\n" + "\n" * MAX_MODULE_LINES})
    assert oversized(modules) == [
        f"deploy/big.py: {MAX_FUNCTION_LINES + 2 + MAX_MODULE_LINES} lines",
        f"deploy/big.py:1 build: {MAX_FUNCTION_LINES + 1} lines",
    ]
