"""Check that every relative link of a page reaches a file, and its anchor a heading of that file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from docgen.commands import Problem
from docgen.pages import prose_lines, relative

_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_INLINE_CODE = re.compile(r"`[^`]*`")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_EXTERNAL = ("http://", "https://", "mailto:")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(text):
        if match := _HEADING.match(line):
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> Iterator[tuple[int, str]]:
    for number, line in prose_lines(text):
        for match in _LINK.finditer(_INLINE_CODE.sub("", line)):
            yield number, match.group(1)


def check_page(path: Path, text: str) -> list[Problem]:
    problems = []
    for number, target in links(text):
        if target.startswith(_EXTERNAL):
            continue
        where = f"{relative(path)}:{number}"
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not destination.exists():
            problems.append(Problem(where, f"link to {target}: {file_part} does not exist"))
            continue
        if not anchor:
            continue
        if destination.is_dir() or destination.suffix != ".md":
            problems.append(Problem(where, f"link to {target}: an anchor into a file that is not Markdown"))
        elif anchor not in anchors(destination.read_text()):
            problems.append(
                Problem(where, f"link to {target}: no heading of {file_part or 'this page'} has it")
            )
    return problems
