"""The house: the import contracts hold (pyproject.toml's ``[tool.importlinter]``, checked by import-linter:
the product never imports the stage, the sandbox and the drill decide without the diagnosis's or the MCP
tools' code), no module imports itself through others, and no room in the product is too big to live in.

Imports are read by import-linter's graph library, grimp, from the source: every ``import``, also inside a
function or under ``TYPE_CHECKING``, so an import hidden in a function body counts as much as one at the top.
Each check is shown to fail on a planted import or a planted size."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
# The product's folders (DESIGN.md principle 6).
PRODUCT = tuple(
    name
    for name in ("mcp_server", "supervisor", "watchdog", "console", "deploy", "executor")
    if (ROOT / name / "__init__.py").is_file()
)
STAGE = ("chaos", "evals", "bench", "docgen", "tests")
LINT_IMPORTS = Path(sys.executable).with_name(
    "lint-imports"
)  # the console script of the venv's import-linter
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450

# The contracts of pyproject.toml, by id, as their names print.
PRODUCT_STAGE = "Product never imports stage"
SANDBOX = "Sandbox and workload reach neither diagnosis nor MCP tools"
DRILL = "Drill imports neither diagnosis nor MCP tools directly"


def _config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return config


def lint_imports(root: Path) -> tuple[int, dict[str, str], str]:
    """``lint-imports`` run in ``root`` (its pyproject.toml, its packages): the exit status, each contract's
    verdict (KEPT or BROKEN) by name, and the whole output."""
    ran = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=os.environ | {"COLUMNS": "200", "NO_COLOR": "1"},  # one line per verdict
    )
    output = ran.stdout + ran.stderr
    verdicts = {}
    for line in output.splitlines():
        name, _, verdict = line.rpartition(" ")
        if verdict in ("KEPT", "BROKEN"):
            verdicts[name] = verdict
    return ran.returncode, verdicts, output


def _modules(packages: Iterable[str]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Every circle of imports between modules, each once, starting from its smallest module: for each
    direct import ``a -> b``, the shortest chain back from ``b`` to ``a``. A package's ``__init__`` that runs
    because a submodule of it is imported is not an edge (grimp records the submodule only): that is how
    Python loads packages, not a dependency the code chose. (import-linter's ``acyclic_siblings`` contract
    is about packages, not modules, and cannot span two top-level packages: so this stays a test.)"""
    found = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer) - {importer}:
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                circle = (importer, *back[:-1])
                start = circle.index(min(circle))
                found.add(circle[start:] + circle[:start])
    return sorted(found)


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


def test_the_import_contracts_hold() -> None:
    status, verdicts, output = lint_imports(ROOT)
    assert (status, verdicts) == (0, {PRODUCT_STAGE: "KEPT", SANDBOX: "KEPT", DRILL: "KEPT"}), output
    assert "Contracts: 3 kept, 0 broken." in output


def test_the_contracts_cover_every_product_and_stage_package() -> None:
    """A product folder added later (``executor``) is under the product's contract, or this fails."""
    config = _config()
    assert sorted(config["root_packages"]) == sorted([*PRODUCT, *STAGE])
    contracts = {contract["id"]: contract for contract in config["contracts"]}
    assert {key: contract["name"] for key, contract in contracts.items()} == {
        "product-stage": PRODUCT_STAGE,
        "sandbox-independent": SANDBOX,
        "drill-judges-alone": DRILL,
    }
    product = contracts["product-stage"]
    assert sorted(product["source_modules"]) == sorted(PRODUCT)
    assert sorted(product["forbidden_modules"]) == sorted(STAGE)
    assert contracts["sandbox-independent"]["source_modules"] == ["chaos.sandbox", "chaos.workload"]
    assert contracts["drill-judges-alone"]["source_modules"] == ["chaos.drill"]
    for key in ("sandbox-independent", "drill-judges-alone"):
        assert contracts[key]["forbidden_modules"] == ["supervisor.diagnosis", "mcp_server.tools"]
    # indirect imports are forbidden everywhere but from the drill, which runs the product's pipeline
    assert {key: contract.get("allow_indirect_imports", False) for key, contract in contracts.items()} == {
        "product-stage": False,
        "sandbox-independent": False,
        "drill-judges-alone": True,
    }


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(grimp.build_graph(*PRODUCT, *STAGE, cache_dir=None)) == []


def test_no_room_in_the_product_is_too_big_to_live_in() -> None:
    assert oversized(_modules(PRODUCT)) == []


# --------------------------------------------------------------------------- the checks can fail


def _house(tmp_path: Path) -> Path:
    """A copy of the repository's packages (their Python files) and of its pyproject.toml."""

    def not_python(folder: str, names: list[str]) -> set[str]:
        return {
            name
            for name in names
            if name in ("__pycache__", "node_modules")
            or (not name.endswith(".py") and not (Path(folder) / name).is_dir())
        }

    house = tmp_path / "house"
    for package in (*PRODUCT, *STAGE):
        shutil.copytree(ROOT / package, house / package, ignore=not_python)
    shutil.copy(ROOT / "pyproject.toml", house / "pyproject.toml")
    return house


@pytest.mark.parametrize(
    ("module", "source", "broken", "shown"),
    [
        pytest.param(
            "console/planted.py",
            "def page() -> None:\n    from evals.leaderboard import document\n",
            PRODUCT_STAGE,
            "console.planted -> evals.leaderboard (l.2)",
            id="the product imports the stage in a function body",
        ),
        pytest.param(
            "chaos/drill/planted.py",
            "from supervisor.diagnosis import evidence\n",
            DRILL,
            "chaos.drill.planted -> supervisor.diagnosis.evidence (l.1)",
            id="the drill imports the diagnosis",
        ),
        pytest.param(
            "chaos/sandbox/planted.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mcp_server.tools import logs\n",
            SANDBOX,
            "chaos.sandbox.planted -> mcp_server.tools.logs (l.3)",
            id="the sandbox imports a tool for its types",
        ),
        pytest.param(
            "chaos/workload/planted.py",
            "from supervisor.orchestrator import handler\n",
            SANDBOX,
            "chaos.workload.planted -> supervisor.orchestrator (l.1)",
            id="the workload reaches the diagnosis through the pipeline",
        ),
        pytest.param(
            "chaos/drill/planted.py",
            "from supervisor.orchestrator import handler\n",
            None,
            None,
            id="the drill may run the pipeline",
        ),
    ],
)
def test_a_planted_import_breaks_its_contract_and_no_other(
    tmp_path: Path, module: str, source: str, broken: str | None, shown: str | None
) -> None:
    house = _house(tmp_path)
    assert lint_imports(house)[:2] == (0, {PRODUCT_STAGE: "KEPT", SANDBOX: "KEPT", DRILL: "KEPT"})
    (house / module).write_text(source)
    status, verdicts, output = lint_imports(house)
    expected = {name: "BROKEN" if name == broken else "KEPT" for name in (PRODUCT_STAGE, SANDBOX, DRILL)}
    assert (status, verdicts) == (0 if broken is None else 1, expected), output
    if shown is not None:
        assert f"-   {shown}" in output.splitlines()


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, source in files.items():
        path = root / f"{name.replace('.', '/')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def test_a_circle_through_a_package_and_a_function_body_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(
        tmp_path,
        {
            "planted.__init__": "",
            "planted.sandbox.__init__": "",
            "planted.sandbox.emulator": "from planted.sandbox import extensions\n",
            "planted.sandbox.extensions.__init__": "from .alarms import evaluate\n",
            "planted.sandbox.extensions.alarms": "def evaluate():\n    from ..emulator import start\n",
            "planted.sandbox.names": "import planted.sandbox.emulator\n",  # runs sandbox/__init__: no circle
        },
    )
    monkeypatch.syspath_prepend(tmp_path)
    assert cycles(grimp.build_graph("planted", cache_dir=None)) == [
        ("planted.sandbox.emulator", "planted.sandbox.extensions", "planted.sandbox.extensions.alarms")
    ]


def test_a_long_function_and_a_long_module_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    body = "".join(f"    x{n} = {n}\n" for n in range(MAX_FUNCTION_LINES))
    _tree(tmp_path, {"deploy.big": f"def build():\n{body}\n" + "\n" * MAX_MODULE_LINES})
    assert oversized(_modules(["deploy"])) == [
        f"deploy/big.py: {MAX_FUNCTION_LINES + 2 + MAX_MODULE_LINES} lines",
        f"deploy/big.py:1 build: {MAX_FUNCTION_LINES + 1} lines",
    ]
