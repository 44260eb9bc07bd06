"""Marked blocks in Markdown pages: what a command prints, kept between two HTML comments.

    <!-- generated: python -m docgen show tools -->
    (what the command prints)
    <!-- end generated -->

A *generated* block is deterministic: `make docs` rewrites it, and a test compares it with what its
command prints now, so a stale table fails CI. A *measured* block holds figures that vary from run to run
(benchmarks, a drill run): it is rewritten only from a new run (`make docs BENCH=1`, or the last drill
report), and its end marker carries a digest of the body, so an edit by hand shows.

Markers are only recognised outside fenced code, so a page can show one as an example.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from docgen.pages import relative

Kind = Literal["generated", "measured"]
KINDS: tuple[Kind, ...] = ("generated", "measured")

_START = re.compile(r"^<!-- (generated|measured): (.+?) -->$")
_END = re.compile(r"^<!-- end (generated|measured)(?:: sha256 ([0-9a-f]{12}))? -->$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class BlockError(ValueError):
    """A page whose markers do not pair up."""


@dataclass(frozen=True)
class Block:
    """One marked block of a page: its command, its body and where the body sits in the page's text."""

    path: Path
    line: int  # of the start marker, 1-based
    kind: Kind
    command: str  # what the marker names, e.g. "incident-drill --list" or "incident-drill | scorecard"
    body: str
    digest: str | None  # measured blocks: the digest their end marker records
    start: int  # offsets of the body in the page's text
    end: int

    @property
    def where(self) -> str:
        return f"{relative(self.path)}:{self.line}"


def digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def end_marker(kind: Kind, body: str) -> str:
    return f"<!-- end {kind}: sha256 {digest(body)} -->" if kind == "measured" else f"<!-- end {kind} -->"


def parse(path: Path, text: str) -> list[Block]:
    """Every marked block of a page, in order."""
    blocks: list[Block] = []
    in_fence = False
    opened: tuple[int, Kind, str, int] | None = None  # line, kind, command, body offset
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        bare = line.rstrip("\n")
        if opened is None:
            if _FENCE.match(bare):
                in_fence = not in_fence
            elif not in_fence and (start := _START.match(bare)):
                kind: Kind = "generated" if start.group(1) == "generated" else "measured"
                opened = (number, kind, start.group(2).strip(), offset + len(line))
        elif _START.match(bare):
            raise BlockError(f"{path}:{number}: a block starts inside the block of line {opened[0]}")
        elif end := _END.match(bare):
            first, kind, command, body_start = opened
            if end.group(1) != kind:
                raise BlockError(f"{path}:{number}: '{bare}' closes the {kind} block of line {first}")
            body = text[body_start:offset]
            blocks.append(Block(path, first, kind, command, body, end.group(2), body_start, offset))
            opened = None
        offset += len(line)
    if opened is not None:
        raise BlockError(f"{path}:{opened[0]}: the block is never closed")
    return blocks


def as_body(content: str) -> str:
    """What goes between the markers: the content between blank lines, so Markdown renders it on its own."""
    return "\n" + content.strip("\n") + "\n\n"


def rewrite(text: str, bodies: Iterable[tuple[Block, str]]) -> str:
    """The page with the given blocks' bodies replaced (and, for measured blocks, their digests)."""
    result = text
    for block, body in sorted(bodies, key=lambda pair: pair[0].start, reverse=True):
        marker_end = result.index("\n", block.end) + 1 if "\n" in result[block.end :] else len(result)
        result = result[: block.start] + body + end_marker(block.kind, body) + "\n" + result[marker_end:]
    return result
