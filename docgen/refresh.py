"""Rewrite the marked blocks of the pages, and check the pages against the code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from docgen import commands, links
from docgen.blocks import Block, as_body, digest, parse, rewrite
from docgen.commands import Problem
from docgen.outputs import (
    DRILL_VIEWS,
    VIEWS,
    Marker,
    Unavailable,
    generated,
    measured_from_drill_report,
    measured_from_run,
    not_measured,
    reads_drill_report,
)
from docgen.pages import pages, relative


@dataclass
class Outcome:
    """What a refresh did, block by block."""

    rewritten: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # measured blocks left as they are, and why


def _body(block: Block, *, bench: bool | str, drill_report: Path | None, kept: list[str]) -> str | None:
    marker = Marker.parse(block.command)
    if block.kind == "generated":
        return as_body(generated(marker))
    try:
        if reads_drill_report(marker):
            return as_body(measured_from_drill_report(marker, drill_report))
        if bench is True or (isinstance(bench, str) and bench in marker.command):
            return as_body(measured_from_run(marker))
        kept.append(f"{block.where}: `{marker.command}` is measured; `make docs BENCH=1` measures it again")
    except Unavailable as reason:
        kept.append(f"{block.where}: {reason}")
    # A new block (no digest yet) says that it is not measured; a measured one keeps its figures.
    return as_body(not_measured(marker)) if block.digest is None else None


def refresh(
    paths: Sequence[Path] | None = None,
    *,
    bench: bool | str = False,
    drill_report: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Outcome:
    """Regenerate every block that can be regenerated now, and write the pages that changed. ``bench``:
    also run the measured commands again (all of them, or those whose command contains the string)."""
    outcome = Outcome()
    for path in paths or pages():
        text = path.read_text()
        bodies = []
        for block in parse(path, text):
            progress(f"{block.where}: {block.command}")
            body = _body(block, bench=bench, drill_report=drill_report, kept=outcome.kept)
            if body is None:
                continue
            (outcome.unchanged if body == block.body else outcome.rewritten).append(block.where)
            bodies.append((block, body))
        new = rewrite(text, bodies)
        if new != text:
            path.write_text(new)
    return outcome


def stale_blocks(paths: Sequence[Path] | None = None) -> list[Problem]:
    """Generated blocks that differ from what their command prints now."""
    problems = []
    for path in paths or pages():
        for block in parse(path, path.read_text()):
            if block.kind == "generated" and as_body(generated(Marker.parse(block.command))) != block.body:
                problems.append(
                    Problem(f"{relative(path)}:{block.line}", f"`{block.command}` prints something else now")
                )
    return problems


def measured_problems(block: Block) -> list[str]:
    """What is wrong with a measured block, without running it: the command must exist and parse, the
    view must be one the generator has, and the body must be what the generator wrote."""
    marker = Marker.parse(block.command)
    problems = commands.check_command(list(marker.argv))
    views = DRILL_VIEWS if reads_drill_report(marker) else {**VIEWS, "after": None}
    if marker.view and marker.view[0] not in views:
        problems.append(f"no view {marker.view[0]!r}; choose from {', '.join(views)}")
    if block.digest is None:
        problems.append("its end marker carries no digest: regenerate it with `make docs`")
    elif block.digest != digest(block.body):
        problems.append("its body was edited by hand: regenerate it (`make docs BENCH=1`, or `make drill`)")
    return problems


def check(paths: Sequence[Path] | None = None, *, stale: bool = True) -> list[Problem]:
    """Everything a page must satisfy: fresh generated blocks, untouched measured blocks, commands that
    exist, links that resolve."""
    problems: list[Problem] = []
    for path in paths or pages():
        text = path.read_text()
        for block in parse(path, text):
            if block.kind == "measured":
                where = f"{relative(path)}:{block.line}"
                problems += [Problem(where, message) for message in measured_problems(block)]
        problems += commands.check_page(path, text)
        problems += links.check_page(path, text)
    if stale:
        problems += stale_blocks(paths)
    return problems
