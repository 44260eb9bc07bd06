"""The whole live benchmark with a real local model: ``incident-eval run --model openai:gemma3`` on every
live case, Gemma 3 270M served by llama.cpp's OpenAI-compatible server on loopback (the one the tests start,
``evals.local_model``), on this machine's CPUs. Hours on 2 cores (a turn takes 10-70 s), so not in CI.

Each investigation gets the budget the CI case has: one turn to read and one forced turn to submit (a
token budget of 1,000, 200-token replies, tool answers cut at 3,000 bytes for the model's 8,192-token
context). The leaderboard it writes (``--out``) is what the README's row for the model shows.

    python -m bench.local_model [--out build/eval-gemma] [--case NAME ...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from evals import cli
from evals.local_model import ALIAS, llama_server

MODEL = f"openai:{ALIAS}"
SETTINGS = {
    "SUPERVISOR_MAX_TOKENS_PER_INCIDENT": "1000",  # the first turn spends more: the second must submit
    "SUPERVISOR_LLM_MAX_OUTPUT_TOKENS": "200",
    "SUPERVISOR_TOOL_RESPONSE_MAX_BYTES": "3000",
    "SUPERVISOR_LLM_TIMEOUT": "600",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.local_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/eval-gemma"), help="default build/eval-gemma")
    parser.add_argument("--case", action="append", default=[], metavar="NAME", help="only this live case")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-local-model-") as work:
        log = Path(work) / "server.log"
        with llama_server(log) as url:
            os.environ.update(SETTINGS, SUPERVISOR_OPENAI_BASE_URL=url)
            run = ["run", "--model", MODEL, "--jobs", "1", "--out", str(args.out)]
            return cli.main([*run, *(f"--case={name}" for name in args.case)])


if __name__ == "__main__":
    raise SystemExit(main())
