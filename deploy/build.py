"""`python -m deploy.build`: write the CloudFormation templates and the MCP server image's requirements
from their Python sources. ``--check`` fails (exit 1) if a committed file differs from what it writes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from deploy import mcp_service, template
from deploy.bundles import MCP_SERVER

DEPLOY = Path(__file__).resolve().parent


def _requirements() -> str:
    header = "# The MCP server image's distributions (versions: constraints.txt). Written by deploy.build.\n"
    return header + "".join(f"{name}\n" for name in MCP_SERVER.requirements)


def _json(build: Callable[[], dict[str, object]]) -> Callable[[], str]:
    return lambda: json.dumps(build(), indent=2) + "\n"


OUTPUTS: dict[str, Callable[[], str]] = {
    "incident-response.template.json": _json(template.build),
    "mcp-server.template.json": _json(mcp_service.build),
    "mcp-server.requirements.txt": _requirements,
}


def stale() -> list[str]:
    """The generated files whose committed content differs from their source."""
    return [
        name
        for name, render in OUTPUTS.items()
        if not (DEPLOY / name).exists() or (DEPLOY / name).read_text() != render()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.build", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        outdated = stale()
        for name in outdated:
            print(f"deploy/{name} is out of date: run python -m deploy.build", file=sys.stderr)
        return 1 if outdated else 0
    for name, render in OUTPUTS.items():
        (DEPLOY / name).write_text(render())
        print(f"wrote deploy/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
