"""The broken builds ``deploy-bad-code`` deploys: the function's own zip package with its handler's source
rewritten to fail one way, for the Python and the Node.js runtimes.

The handler's source file is found as each runtime finds it:

- Python (``module.function``): ``module/path.py``, else ``module/path/__init__.py``. The broken code is
  appended to the module: the later ``def`` replaces the handler, an appended ``import`` fails at import,
  an appended ``sleep`` (``slow-init``) holds the load 12 s, past Lambda's 10-second init phase.
- Node.js: as ``_tryRequire`` in aws/aws-lambda-nodejs-runtime-interface-client ``src/UserFunction.js``
  does for ``dir/module.function``: the extensionless file, ``module.js`` (CommonJS unless the nearest
  ``package.json`` says ``"type": "module"``; a ``node_modules`` folder ends the search), ``module.mjs``
  (ES module), ``module.cjs`` (CommonJS). A CommonJS file gets the broken code appended
  (``require`` of a package that is not there; ``module.exports.<function> = ...`` replaces the handler).
  An ES module gets an appended ``import`` of a package that is not there; for the other kinds, whose
  handler an ES module cannot export twice, the original file is kept beside it as
  ``<module>.chaos-original<ext>`` and the handler file becomes a module that imports it (its init runs as
  before) and exports the broken handler.

Every other entry of the package, and every entry's zip metadata, stays as it was.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import zipfile
from dataclasses import dataclass
from typing import Literal

from chaos.faults.errors import ChaosRefused

KINDS = ("import-error", "exception", "slow", "memory-hog", "malformed-response", "slow-init", "tmp-leak")
NODE_KINDS = ("import-error", "exception", "slow", "memory-hog", "slow-init", "tmp-leak")  # Node.js too
INIT_SECONDS = 12  # past Lambda's 10-second limit for an on-demand function's init phase
VERSION_MARKER = "incident-chaos deploy-bad-code"
MISSING_MODULE = "chaos_missing_dependency"
EXCEPTION_MESSAGE = "injected by incident-chaos (deploy-bad-code exception)"
ORIGINAL_SUFFIX = ".chaos-original"
CHUNK_MB = 16
LEAK_MB = 320  # spooled to the temporary directory by each invocation and never deleted: 512 MB hold one

Flavour = Literal["python", "commonjs", "esm"]

_PYTHON = {
    "import-error": f"import {MISSING_MODULE}  # noqa\n",
    "slow-init": "import time as _chaos_time\n_chaos_time.sleep({seconds})  # at load\n",
    "exception": "def {handler}(event, context):\n    raise RuntimeError({message!r})\n",
    "slow": (
        "def {handler}(event, context):\n"
        "    import time\n"
        "    time.sleep(max(context.get_remaining_time_in_millis(), 0) / 1000 + 2)\n"
    ),
    "memory-hog": (
        "def {handler}(event, context):\n"
        "    import time\n"
        "    held = []\n"
        f"    for _ in range(int(context.memory_limit_in_mb) // {CHUNK_MB} + 8):\n"
        f"        held.append(b'\\x01' * ({CHUNK_MB} << 20))\n"
        "    time.sleep(max(context.get_remaining_time_in_millis(), 0) / 1000 + 2)  # held until killed\n"
        "    return len(held)\n"
    ),
    # The build's own handler does its work; its answer's body is then an object, not the JSON text a
    # Lambda proxy integration requires (a json.dumps forgotten): the function succeeds, API Gateway
    # cannot use the answer.
    "malformed-response": (
        "_chaos_built_handler = {handler}\n"
        "def {handler}(event, context):\n"
        "    import json\n"
        "    response = _chaos_built_handler(event, context)\n"
        "    return dict(response, body=json.loads(response['body']))\n"
    ),
    # The build's own handler does its work after spooling its input to the temporary directory, and the
    # spool is never deleted: an environment's /tmp fills, and its next write fails (ENOSPC).
    "tmp-leak": (
        "_chaos_built_handler = {handler}\n"
        "def {handler}(event, context):\n"
        "    import os, tempfile\n"
        f"    chunk = b'\\x02' * ({CHUNK_MB} << 20)\n"
        "    spooled = os.path.join(tempfile.gettempdir(), context.aws_request_id + '.spool')\n"
        "    with open(spooled, 'wb') as spool:\n"
        "        for _ in range({chunks}):\n"
        "            spool.write(chunk)\n"
        "    return _chaos_built_handler(event, context)\n"
    ),
}
# At least 2 s past the deadline, also when the work before it ran past the deadline already (a slow host).
_PAST_THE_DEADLINE = (
    "await new Promise((resolve) => "
    "setTimeout(resolve, Math.max(context.getRemainingTimeInMillis(), 0) + 2000));"
)
# The bodies of the Node.js handler: an async function of (event, context), as Lambda calls it.
_NODE_BODIES = {
    "exception": f"throw new Error({json.dumps(EXCEPTION_MESSAGE)});",
    "slow": _PAST_THE_DEADLINE,
    "memory-hog": (
        "const held = [];\n"
        f"  for (let i = 0; i < Math.floor(Number(context.memoryLimitInMB) / {CHUNK_MB}) + 8; i++) {{\n"
        f"    held.push(Buffer.alloc({CHUNK_MB} << 20, 1)); // filled: resident, not only reserved\n"
        "  }\n"
        f"  {_PAST_THE_DEADLINE} // held until it is killed\n"
        "  return held.length;"
    ),
    "tmp-leak": (
        'const { openSync, writeSync, closeSync } = await import("node:fs");\n'
        '  const { tmpdir } = await import("node:os");\n'
        '  const spool = openSync(`${tmpdir()}/${context.awsRequestId}.spool`, "w");\n'
        f"  const chunk = Buffer.alloc({CHUNK_MB} << 20, 2);\n"
        "  try {\n"
        "    for (let i = 0; i < {chunks}; i++) writeSync(spool, chunk);\n"
        "  } finally {\n"
        "    closeSync(spool);\n"
        "  }\n"
        "  return __chaosBuilt(event, context); // the build's own handler, after the spool it never deletes"
    ),
}
_WRAPPING = frozenset({"tmp-leak"})  # Node.js bodies that call the build's own handler, as __chaosBuilt
_NODE_FUNCTION = re.compile(r"^([^.]*)\.(.*)$")  # UserFunction.js's FUNCTION_EXPR
_JS_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


@dataclass(frozen=True)
class HandlerSource:
    """The handler's source file in the package, the name of the handler function, and how it is loaded."""

    path: str
    function: str
    flavour: Flavour


def handler_source(runtime: str, handler: str, package: zipfile.ZipFile) -> HandlerSource:
    """Where ``handler`` lives in ``package``, as ``runtime`` finds it; ChaosRefused when nowhere."""
    files = {name for name in package.namelist() if not name.endswith("/")}
    if runtime.startswith("python"):
        module, _, function = handler.rpartition(".")
        path = module.replace(".", "/")
        for candidate in (f"{path}.py", f"{path}/__init__.py"):
            if candidate in files:
                return HandlerSource(candidate, function, "python")
        raise ChaosRefused(
            f"the package has no source file for the handler {handler} (a Python zip package?)"
        )
    if runtime.startswith("nodejs"):
        return _node_source(handler, files, package)
    raise ChaosRefused(
        f"it builds bad code for Python and Node.js zip packages only, not {runtime or 'this'}"
    )


def _node_source(handler: str, files: set[str], package: zipfile.ZipFile) -> HandlerSource:
    base = posixpath.basename(handler)
    match = _NODE_FUNCTION.match(base)
    if not match or not _JS_IDENTIFIER.match(match[2]):
        raise ChaosRefused(f"the handler {handler} is not <file>.<function> with one function name")
    path = posixpath.normpath(posixpath.join(handler[: handler.index(base)], match[1]))
    if path.startswith(("/", "../")):
        raise ChaosRefused(f"the handler {handler} points outside the package")
    type_module = f"{path}.js" in files and _type_module(posixpath.dirname(path), files, package)
    candidates: tuple[tuple[str, Flavour], ...] = (
        (path, "commonjs"),
        (f"{path}.js", "esm" if type_module else "commonjs"),
        (f"{path}.mjs", "esm"),
        (f"{path}.cjs", "commonjs"),
    )
    for candidate, flavour in candidates:
        if candidate in files:
            if flavour == "esm" and _original_name(candidate) in files:
                raise ChaosRefused(f"the package already holds {_original_name(candidate)}")
            return HandlerSource(candidate, match[2], flavour)
    raise ChaosRefused(
        f"the package has no {path}, {path}.js, {path}.mjs or {path}.cjs for the handler {handler}"
    )


def _type_module(folder: str, files: set[str], package: zipfile.ZipFile) -> bool:
    """Whether the nearest package.json above ``folder`` says ``"type": "module"`` (UserFunction.js's
    ``_hasFolderPackageJsonTypeModule``; the task root's parents hold none)."""
    while True:
        if folder.endswith("node_modules"):
            return False
        manifest = posixpath.join(folder, "package.json")
        if manifest in files:
            try:
                parsed = json.loads(package.read(manifest))
            except ValueError:
                return False
            if parsed not in (None, False, 0, ""):  # JavaScript's truthiness: {} counts
                return isinstance(parsed, dict) and parsed.get("type") == "module"
        if not folder:
            return False
        folder = posixpath.dirname(folder)


def _node_handler(function: str, body: str, flavour: Flavour) -> str:
    head = "export const" if flavour == "esm" else "module.exports."
    separator = " " if flavour == "esm" else ""
    return f"{head}{separator}{function} = async (event, context) => {{\n  {body}\n}};\n"


def _original_name(path: str) -> str:
    stem, extension = posixpath.splitext(path)
    return f"{stem}{ORIGINAL_SUFFIX}{extension}"


def _rewritten(source: str, found: HandlerSource, kind: str) -> tuple[str, str | None]:
    """The handler file's broken text, and (an ES module's other kinds) the original's new name."""
    marker = f"{VERSION_MARKER}: {kind}"
    if found.flavour == "python":
        appended = _PYTHON[kind].format(
            handler=found.function,
            message=EXCEPTION_MESSAGE,
            seconds=INIT_SECONDS,
            chunks=LEAK_MB // CHUNK_MB,
        )
        return f"{source}\n\n\n# {marker}\n{appended}", None
    if kind not in NODE_KINDS:
        raise ChaosRefused(f"the {kind} build is made for Python handlers only")
    if kind == "import-error":
        load = f'import "{MISSING_MODULE}";' if found.flavour == "esm" else f'require("{MISSING_MODULE}");'
        return f"{source}\n\n// {marker}\n{load}\n", None
    if kind == "slow-init":  # a blocking wait at load, in either module system
        wait = f"Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, {INIT_SECONDS * 1000});"
        return f"{source}\n\n// {marker}\n{wait}\n", None
    body = _NODE_BODIES[kind].replace("{chunks}", str(LEAK_MB // CHUNK_MB))
    broken = _node_handler(found.function, body, found.flavour)
    wraps = kind in _WRAPPING
    if found.flavour == "commonjs":
        built = f"const __chaosBuilt = module.exports.{found.function};\n" if wraps else ""
        return f"{source}\n\n// {marker}\n{built}{broken}", None
    original = _original_name(found.path)
    imported = f"{{ {found.function} as __chaosBuilt }} from " if wraps else ""
    module = posixpath.basename(original)
    loader = f'import {imported}"./{module}"; // the build\'s own module, loaded as before'
    return f"// {marker}\n{loader}\n\n{broken}", original


def broken_package(package: bytes, runtime: str, handler: str, kind: str) -> bytes:
    """``package`` with the handler's source rewritten so that it fails the ``kind`` way."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as original, zipfile.ZipFile(buffer, "w") as broken:
        found = handler_source(runtime, handler, original)
        for info in original.infolist():
            data = original.read(info)
            if info.filename == found.path:
                source, kept_as = _rewritten(data.decode("utf-8").rstrip("\n"), found, kind)
                if kept_as is not None:
                    broken.writestr(_renamed(info, kept_as), data)
                data = source.encode()
            broken.writestr(info, data)
    return buffer.getvalue()


def _renamed(info: zipfile.ZipInfo, name: str) -> zipfile.ZipInfo:
    copy = zipfile.ZipInfo(name, date_time=info.date_time)
    copy.compress_type, copy.external_attr, copy.create_system = (
        info.compress_type,
        info.external_attr,
        info.create_system,
    )
    return copy
