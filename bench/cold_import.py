"""Cold-start cost of the orchestrator: ``import supervisor.orchestrator`` against ``import boto3``.

Every sample is a fresh interpreter that times one statement with perf_counter (interpreter start-up
excluded); the statements are interleaved run by run so both see the same machine. The target of
issue 5 is orchestrator/boto3 <= 1.5x. Two more rows show what the cold path avoids and what the first
event adds: building the pipeline (settings, clients) and importing the agent stack.

    python -m bench.cold_import [--runs 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

TARGET_RATIO = 1.5
BASELINE = "import boto3"
CASES: dict[str, str] = {
    BASELINE: "import boto3",
    "import supervisor.orchestrator": "import supervisor.orchestrator",
    "... + build_pipeline() (first event)": (
        "import supervisor.orchestrator; supervisor.orchestrator.build_pipeline()"
    ),
    "import supervisor.agent.run (agent stack)": "import supervisor.agent.run",
}


@dataclass
class Row:
    case: str
    median_ms: float
    p90_ms: float
    ratio: float


def _sample(statement: str) -> float:
    code = f"import time; s = time.perf_counter(); {statement}; print(time.perf_counter() - s)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_DEFAULT_REGION"] = "ca-central-1"  # build_pipeline creates clients; no credentials needed
    command = [sys.executable, "-c", code]  # our own fixed statements
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)  # noqa: S603
    return float(done.stdout.strip().splitlines()[-1]) * 1000


def run(runs: int, progress: Callable[[str], None] = lambda _: None) -> list[Row]:
    for statement in CASES.values():  # warm the file cache and the bytecode
        _sample(statement)
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    for number in range(runs):
        for case, statement in CASES.items():
            samples[case].append(_sample(statement))
        progress(f"run {number + 1}/{runs}")
    baseline = statistics.median(samples[BASELINE])
    rows = []
    for case, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else median
        rows.append(Row(case, round(median, 1), round(p90, 1), round(median / baseline, 2)))
    return rows


def render(rows: list[Row], runs: int) -> str:
    lines = [
        f"Cold import, fresh interpreter per sample, {runs} interleaved runs (median, p90):",
        "",
        f"| {'case':<40} | median | p90 | vs {BASELINE} |",
        f"| {'-' * 40} | ---: | ---: | ---: |",
    ]
    lines += [f"| {r.case:<40} | {r.median_ms:.1f} ms | {r.p90_ms:.1f} ms | {r.ratio:.2f}x |" for r in rows]
    orchestrator = next(r for r in rows if r.case == "import supervisor.orchestrator")
    verdict = "met" if orchestrator.ratio <= TARGET_RATIO else "MISSED"
    lines += ["", f"Target orchestrator/boto3 <= {TARGET_RATIO}x: {orchestrator.ratio:.2f}x, {verdict}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cold_import", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="interleaved samples per case (default 15)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    rows = run(args.runs, progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(json.dumps([asdict(r) for r in rows], indent=2) if args.json else render(rows, args.runs))
    orchestrator = next(r for r in rows if r.case == "import supervisor.orchestrator")
    return 0 if orchestrator.ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
