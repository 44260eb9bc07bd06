"""The pages the generator owns: the README and every page under docs/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def relative(path: Path, root: Path = ROOT) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Fence:
    """A fenced code block: its info string (language), first line number and lines."""

    language: str
    line: int  # the first line inside the fence, 1-based
    lines: tuple[str, ...]


def fences(text: str) -> Iterator[Fence]:
    opened: tuple[str, str, int] | None = None  # marker, language, first line
    lines: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if opened is None:
            if match:
                opened, lines = (match.group(1), match.group(2), number + 1), []
        elif match and line.strip() == opened[0]:
            yield Fence(opened[1], opened[2], tuple(lines))
            opened = None
        else:
            lines.append(line)


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines outside fenced code, with their numbers."""
    inside: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if inside is None and match:
            inside = match.group(1)
        elif inside is not None and line.strip() == inside:
            inside = None
        elif inside is None:
            yield number, line
