"""``deploy-bad-code``: deploy a broken build of the function's own package; restore redeploys the saved one.

``apply(chaos, target, prior, *, kind: str)``, ``kind`` one of :data:`KINDS`:

- ``import-error``: the handler module imports a module that is not in the package (Python
  ``Runtime.ImportModuleError``; in Node.js an ES module ``import`` or a CommonJS ``require``, as the file
  is loaded);
- ``exception``: the handler raises ``RuntimeError`` (Python) or throws an ``Error`` (Node.js), with
  :data:`EXCEPTION_MESSAGE`;
- ``slow``: the handler sleeps (awaits) past the function's remaining time;
- ``memory-hog``: the handler allocates more than the function's memory size and holds it (Lambda kills it
  at the limit; a runtime that checks memory now and then still sees it); in Node.js, filled Buffers, so
  resident memory grows and not only what V8 reserves;
- ``tmp-leak``: the handler spools ``bad_builds.LEAK_MB`` to the temporary directory, never deleted, then
  runs the build's own handler: an environment's /tmp (512 MB) fills, its next write fails (``ENOSPC``);
  refused where the sandbox cannot size /tmp (:mod:`chaos.workload.scratch`);
- ``malformed-response`` (Python only): the build's own handler runs, and its answer's ``body`` is handed
  back as an object instead of JSON text: the function succeeds, an API Gateway proxy integration cannot
  use the answer (``502``).

The package is fetched as Lambda does (``GetFunction`` → ``Code.Location``) and the handler's source file,
found as the function's runtime finds it, rewritten (a Python or Node.js zip package:
:mod:`chaos.faults.bad_builds`). When the function has aliases, a version of the bad code is
published (described with :data:`VERSION_MARKER`) and every alias moved to it. The saved state is the
package (base64), its CodeSha256, every alias's version and routing, and the versions there were; it must
fit the ledger (8192 bytes of JSON: a package of about 6 KB at most), else the fault is refused.
Restore redeploys the package, points every alias back and deletes the versions it published.
"""

from __future__ import annotations

import base64
import io
import zipfile
from typing import Any

from chaos.faults.bad_builds import (
    EXCEPTION_MESSAGE,
    KINDS,
    MISSING_MODULE,
    VERSION_MARKER,
    broken_package,
    handler_source,
)
from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.ledger import MAX_VALUE_BYTES
from chaos.faults.support import check_fits, download_package, give_up, shown_call, wait_until_updated
from chaos.workload import scratch

NAME = "deploy-bad-code"
__all__ = ("DEPLOY_BAD_CODE", "EXCEPTION_MESSAGE", "KINDS", "MISSING_MODULE", "NAME", "VERSION_MARKER")


def _pages(chaos: Chaos, method: str, key: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = chaos.read("lambda", method, **params)
        items += page[key]
        if not page.get("NextMarker"):
            return items
        params["Marker"] = page["NextMarker"]


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    config, name = target.configuration, target.function_name
    runtime = str(config.get("Runtime", ""))
    if config.get("PackageType", "Zip") != "Zip" or not runtime.startswith(("python", "nodejs")):
        raise ChaosRefused(
            f"refusing {NAME} on {name}: it builds bad code for Python and Node.js zip packages only"
        )
    limit = MAX_VALUE_BYTES * 3 // 4
    if int(config.get("CodeSize", 0)) > limit:
        raise ChaosRefused(
            f"refusing {NAME} on {name}: its package is {config['CodeSize']} bytes; the ledger keeps at most "
            f"{MAX_VALUE_BYTES} bytes per fault (one SSM parameter), about {limit} bytes of package in "
            "base64, so it could not be restored exactly. Nothing was changed"
        )
    package = download_package(chaos, NAME, config)
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        try:
            handler_source(runtime, config["Handler"], archive)
        except ChaosRefused as refusal:
            raise ChaosRefused(f"refusing {NAME} on {name}: {refusal}") from None
    aliases = {
        alias["Name"]: {"version": alias["FunctionVersion"], "routing": alias.get("RoutingConfig") or None}
        for alias in _pages(chaos, "list_aliases", "Aliases", FunctionName=name)
    }
    versions = [
        v["Version"] for v in _pages(chaos, "list_versions_by_function", "Versions", FunctionName=name)
    ]
    prior = {
        "function": name,
        "handler": config["Handler"],
        "runtime": runtime,
        "package": base64.b64encode(package).decode(),
        "code_sha256": config["CodeSha256"],
        "aliases": aliases,
        "versions": [v for v in versions if v != "$LATEST"],
    }
    check_fits(NAME, name, prior, f"a package of {len(package)} bytes")
    return prior


def _published(chaos: Chaos, prior: dict[str, Any]) -> list[str]:
    """The versions of bad code published since the state was saved."""
    versions = _pages(chaos, "list_versions_by_function", "Versions", FunctionName=prior["function"])
    return [
        v["Version"]
        for v in versions
        if v["Version"] not in (*prior["versions"], "$LATEST")
        and str(v.get("Description", "")).startswith(VERSION_MARKER)
    ]


def _aliases_as_saved(chaos: Chaos, prior: dict[str, Any]) -> bool:
    aliases = _pages(chaos, "list_aliases", "Aliases", FunctionName=prior["function"])
    now = {a["Name"]: a["FunctionVersion"] for a in aliases}
    return all(now.get(alias) == saved["version"] for alias, saved in prior["aliases"].items())


def _deploy(chaos: Chaos, function_name: str, package: bytes, what: str) -> None:
    wait_until_updated(chaos, function_name, check_failed=False)
    shown_call(
        chaos,
        "lambda",
        "update_function_code",
        {"FunctionName": function_name, "ZipFile": f"<{len(package)} bytes: {what}>"},
        FunctionName=function_name,
        ZipFile=package,
    )
    wait_until_updated(chaos, function_name)


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any], *, kind: str) -> None:
    name = prior["function"]
    problem = None if kind in KINDS else f"kind must be one of {', '.join(KINDS)}, not {kind!r}"
    if kind == "tmp-leak" and not scratch.enforced():
        problem = "this machine gives the sandbox no mount namespace, so no /tmp has a size to fill"
    if problem is not None:
        unchanged = (
            target.configuration["CodeSha256"] == prior["code_sha256"]
            and not _published(chaos, prior)
            and _aliases_as_saved(chaos, prior)
        )
        error = ChaosError(f"{NAME}: {problem}")
        give_up(chaos, NAME, name, error, unchanged=unchanged)
    runtime = prior.get("runtime", "python")  # a state saved before Node.js builds: Python
    bad = broken_package(base64.b64decode(prior["package"]), runtime, prior["handler"], kind)
    _deploy(chaos, name, bad, f"{kind} build of the package")
    if not prior["aliases"]:
        return
    published = chaos.call(
        "lambda", "publish_version", FunctionName=name, Description=f"{VERSION_MARKER}: {kind}"
    )
    version = published["Version"] if published else "<the version published>"
    for alias, saved in prior["aliases"].items():
        routing: dict[str, Any] = (
            {"RoutingConfig": {"AdditionalVersionWeights": {}}} if saved["routing"] else {}
        )
        chaos.call(
            "lambda", "update_alias", FunctionName=name, Name=alias, FunctionVersion=version, **routing
        )


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    name = prior["function"]
    current = chaos.read("lambda", "get_function_configuration", FunctionName=name)
    if current["CodeSha256"] != prior["code_sha256"]:
        _deploy(chaos, name, base64.b64decode(prior["package"]), "the saved package")
    for alias, saved in prior["aliases"].items():
        routing = {"RoutingConfig": saved["routing"]} if saved["routing"] else {}
        chaos.call(
            "lambda",
            "update_alias",
            FunctionName=name,
            Name=alias,
            FunctionVersion=saved["version"],
            **routing,
        )
    for version in _published(chaos, prior):
        chaos.call(
            "lambda",
            "delete_function",
            FunctionName=name,
            Qualifier=version,
            tolerate=("ResourceNotFoundException",),
        )


DEPLOY_BAD_CODE = Fault(NAME, "a broken build of the code deployed", _capture, _apply, _revert)
