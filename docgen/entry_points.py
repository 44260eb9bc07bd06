"""The project's commands as the code defines them: console scripts from pyproject.toml, modules run with
``python -m``, make targets from the Makefile, and the argparse parser behind each.

A command line is checked with the real parser: its ``main(argv)`` runs until it parses, and stops there
(``parse_args`` is intercepted), so nothing runs and no option is matched by substring.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NoReturn
from unittest import mock

from docgen.pages import ROOT

Main = Callable[[list[str]], object]

# The packages of this repository; `python -m` of anything else is not ours to check.
_TARGET = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*:(?!=)")


@cache
def console_scripts(root: Path = ROOT) -> dict[str, str]:
    """Console script name -> "module:function", from [project.scripts]."""
    with (root / "pyproject.toml").open("rb") as file:
        scripts: dict[str, str] = tomllib.load(file)["project"]["scripts"]
    return dict(scripts)


@cache
def repo_packages(root: Path = ROOT) -> frozenset[str]:
    return frozenset(p.parent.name for p in root.glob("*/__init__.py"))


@cache
def make_targets(root: Path = ROOT) -> frozenset[str]:
    targets = set()
    for line in (root / "Makefile").read_text().splitlines():
        if match := _TARGET.match(line):
            targets.add(match.group(1))
    return frozenset(targets - {".PHONY"})


def _function(reference: str) -> Main:
    module, _, name = reference.partition(":")
    function: Main = getattr(importlib.import_module(module), name)
    return function


def script_main(name: str) -> Main:
    return _function(console_scripts()[name])


def module_main(module: str) -> Main | None:
    """The ``main`` of a module of ours run with ``python -m``; None if it has none."""
    found: Main | None = getattr(importlib.import_module(module), "main", None)
    return found


def is_repo_module(module: str) -> bool:
    return module.split(".", 1)[0] in repo_packages()


def module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


class _Parsed(Exception):
    """Raised once the parser has parsed: control flow, not an error."""

    def __init__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace) -> None:
        super().__init__(parser.prog)
        self.parser = parser
        self.namespace = namespace


class _Refused(Exception):
    """Raised instead of exiting when a parser refuses its arguments."""


@contextmanager
def _intercepted(capture_only: bool) -> Iterator[None]:
    """While active, the first top-level ``parse_args`` raises _Parsed (after parsing, unless
    ``capture_only``) and any parser's ``error`` raises _Refused instead of exiting."""
    original = argparse.ArgumentParser.parse_args

    def parse_args(
        self: argparse.ArgumentParser, args: Sequence[str] | None = None, namespace: Any = None
    ) -> Any:
        parsed = argparse.Namespace() if capture_only else original(self, args, namespace)
        raise _Parsed(self, parsed)

    def error(self: argparse.ArgumentParser, message: str) -> NoReturn:
        raise _Refused(f"{self.prog}: {message}")

    with (
        mock.patch.object(argparse.ArgumentParser, "parse_args", parse_args),
        mock.patch.object(argparse.ArgumentParser, "error", error),
    ):
        yield


@dataclass(frozen=True)
class Parsed:
    ok: bool
    message: str = ""


def parse(main: Main, argv: list[str]) -> Parsed:
    """Parse ``argv`` with the parser ``main`` builds, without running anything after it."""
    try:
        with _intercepted(capture_only=False):
            main(argv)
    except _Parsed:
        return Parsed(True)
    except _Refused as refused:
        return Parsed(False, str(refused))
    except SystemExit as exit_:
        return Parsed(exit_.code in (0, None), f"exited {exit_.code}")
    return Parsed(False, "returned without parsing its arguments (no argparse parser?)")


def parser_of(main: Main) -> argparse.ArgumentParser:
    """The parser ``main`` builds, captured before it parses anything."""
    try:
        with _intercepted(capture_only=True):
            main([])
    except _Parsed as parsed:
        return parsed.parser
    raise LookupError(f"{main.__module__}.main builds no argparse parser")
