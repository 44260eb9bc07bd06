"""Check that every command a page shows exists: console scripts and their options (parsed by the real
argparse parser), ``python -m`` modules of this repository, and make targets.

Shell blocks (```sh) may use a small synopsis notation, expanded before parsing:

- ``a|b|c`` in one word: each alternative is checked;
- ``[--flag VALUE]``: checked with and without the optional part;
- an upper-case placeholder (``NAME``, ``N``, ``ARN``, ...): replaced by an example value.

Anything else on a line is taken literally. Commands of other programs (``aws``, ``docker``, ``source``)
are not ours to check and are skipped.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from docgen.entry_points import (
    console_scripts,
    is_repo_module,
    make_targets,
    module_exists,
    module_main,
    parse,
    script_main,
)
from docgen.pages import fences, prose_lines, relative

SHELL_LANGUAGES = ("sh", "bash", "shell")
SEPARATORS = ("|", "||", "&&", ";", "&")
PLACEHOLDERS = {
    "N": "2",
    "NAME": "data-processor",
    "ARN": "arn:aws:s3:::other-bucket/*",
    "NAME=VALUE": "LOG_LEVEL=debug",
    "INCIDENT_ID": "data-processor@2026-01-01T00:00:00.000Z",
    "MODEL=IN,OUT": "bedrock:example=3,15",
}
_ALTERNATIVES = re.compile(r"^[\w.:/=-]+(\|[\w.:/=-]+)+$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(=[A-Z0-9_,]+)?$")
_INLINE_CODE = re.compile(r"`([^`]+)`")
_VENV = (".venv/bin/", "$(BIN)/", "./.venv/bin/")
MAX_VARIANTS = 64


@dataclass(frozen=True)
class Problem:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _logical_lines(lines: tuple[str, ...], first: int) -> Iterator[tuple[int, str]]:
    """Lines with backslash continuations joined, each with the number of its first line."""
    pending, start = "", first
    for number, line in enumerate(lines, start=first):
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""
    if pending:
        yield start, pending


def split_commands(line: str) -> list[list[str]]:
    """The simple commands of a shell line (comments dropped; split at |, ||, &&, ; and &)."""
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    for word in lexer:
        if word in SEPARATORS:
            commands.append([])
        elif word.endswith(";") and len(word) > 1:
            commands[-1].append(word[:-1])
            commands.append([])
        else:
            commands[-1].append(word)
    return [command for command in commands if command]


def _program(words: list[str]) -> list[str]:
    """The words from the program on: environment assignments dropped, .venv/bin/ stripped."""
    index = 0
    while index < len(words) and _ASSIGNMENT.match(words[index]):
        index += 1
    rest = words[index:]
    if rest:
        for prefix in _VENV:
            if rest[0].startswith(prefix):
                rest = [rest[0][len(prefix) :], *rest[1:]]
    return rest


def variants(words: list[str]) -> list[list[str]]:
    """The argument lists a synopsis stands for."""
    groups: list[list[list[str]]] = []  # each group: the alternatives for one position
    optional: list[str] | None = None
    for word in words:
        if optional is None and word.startswith("["):
            optional = []
            word = word[1:]
        if optional is not None:
            closing = word.endswith("]")
            optional.append(word[:-1] if closing else word)
            if closing:
                groups.append([optional, []])
                optional = None
            continue
        groups.append([[word]])
    if optional is not None:
        groups.append([optional, []])
    expanded: list[list[str]] = []
    for choice in itertools.product(*groups):
        flat = [word for part in choice for word in part]
        alternatives = [word.split("|") if _ALTERNATIVES.match(word) else [word] for word in flat]
        for combination in itertools.product(*alternatives):
            expanded.append([PLACEHOLDERS.get(word, word) for word in combination])
            if len(expanded) >= MAX_VARIANTS:
                return expanded
    return expanded


def check_command(words: list[str]) -> list[str]:
    """What is wrong with one simple command; empty when it exists (or is not ours to check)."""
    words = _program(words)
    if not words:
        return []
    program, args = words[0], words[1:]
    if program in console_scripts():
        main = script_main(program)
        return [
            f"`{shlex.join([program, *argv])}`: {result.message}"
            for argv in variants(args)
            if not (result := parse(main, argv)).ok
        ]
    if program.startswith("incident-"):
        return [f"`{program}` is not a console script of pyproject.toml"]
    if program in ("python", "python3") and args[:1] == ["-m"] and len(args) > 1:
        return _check_module(args[1], args[2:])
    if program == "make":
        unknown = [word for word in args if not _ASSIGNMENT.match(word) and word not in make_targets()]
        return [f"`make {word}`: no such target in the Makefile" for word in unknown]
    return []


def _check_module(module: str, args: list[str]) -> list[str]:
    if not is_repo_module(module):
        return []
    if not module_exists(module):
        return [f"`python -m {module}`: no such module"]
    main = module_main(module)
    if main is None:
        return []
    return [
        f"`python -m {shlex.join([module, *argv])}`: {result.message}"
        for argv in variants(args)
        if not (result := parse(main, argv)).ok
    ]


def check_line(line: str) -> list[str]:
    try:
        commands = split_commands(line)
    except ValueError as error:
        return [f"`{line.strip()}`: {error}"]
    return [message for words in commands for message in check_command(words)]


def runnable_span(span: str) -> bool:
    """Whether an inline code span of the prose is a whole command to check, rather than a name or a
    fragment: it starts the way a command is typed and has no ellipsis or angle-bracket placeholder."""
    if any(mark in span for mark in ("...", "…", "<")):
        return False
    if span.startswith((".venv/bin/", "source ", "make ", "python -m ")):
        return True
    program = span.split(" ", 1)[0]
    return program in console_scripts() and " --" in span


def check_page(path: Path, text: str) -> list[Problem]:
    """Every command line in the page's shell blocks, and every whole command quoted in its prose."""
    problems = []
    for fence in fences(text):
        if fence.language not in SHELL_LANGUAGES:
            continue
        for number, line in _logical_lines(fence.lines, fence.line):
            for message in check_line(line):
                problems.append(Problem(f"{relative(path)}:{number}", message))
    for number, line in prose_lines(text):
        for span in _INLINE_CODE.findall(line):
            if runnable_span(span):
                problems += [Problem(f"{relative(path)}:{number}", message) for message in check_line(span)]
    return problems


def shell_commands(text: str) -> Iterator[list[str]]:
    """The simple commands of a page's shell blocks, program first (for checks of what a page shows)."""
    for fence in fences(text):
        if fence.language in SHELL_LANGUAGES:
            for _, line in _logical_lines(fence.lines, fence.line):
                for words in split_commands(line):
                    if program := _program(words):
                        yield program
