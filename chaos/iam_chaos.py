"""The design's spelling, ``python -m chaos.iam_chaos revoke --target s3``: `incident-chaos iam ...`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from chaos.cli import main as chaos_main


def main(argv: Sequence[str] | None = None) -> int:
    return chaos_main(["iam", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
