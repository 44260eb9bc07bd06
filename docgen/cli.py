"""`python -m docgen`: write, check or show the documentation's generated blocks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from docgen.blocks import BlockError
from docgen.code_tables import SHOW, show
from docgen.refresh import check, refresh


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m docgen",
        description="Keep the generated blocks of README.md and docs/*.md equal to what the code and the "
        "project's commands print, and check every command and link the pages show.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    write = commands.add_parser("write", help="regenerate the blocks and rewrite the pages that changed")
    write.add_argument(
        "--bench", action="store_true", help="also run the measured commands (benchmarks) again: minutes"
    )
    write.add_argument(
        "--only", metavar="TEXT", help="with --bench: run only the measured commands that contain TEXT"
    )
    write.add_argument(
        "--drill-report", type=Path, help="the drill report to read (default: drill-report/ if present)"
    )
    commands.add_parser(
        "check", help="report stale blocks, hand-edited figures, unknown commands, broken links"
    )
    what = commands.add_parser("show", help="print one block derived from the code")
    what.add_argument("what", choices=sorted(SHOW))
    what.add_argument("args", nargs="*", help="e.g. the component of `settings`, the script of `flags`")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "show":
            print(show(args.what, *args.args))
            return 0
        if args.command == "write":
            outcome = refresh(
                bench=(args.only or True) if args.bench else False,
                drill_report=args.drill_report,
                progress=lambda line: print(f"... {line}", file=sys.stderr, flush=True),
            )
            for line in outcome.kept:
                print(f"kept {line}")
            print(f"{len(outcome.rewritten)} block(s) rewritten, {len(outcome.unchanged)} unchanged")
        problems = check(stale=args.command == "check")
    except (BlockError, KeyError, TypeError) as error:
        print(f"docgen: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0
