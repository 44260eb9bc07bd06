"""What `make drill` costs: the whole drill's wall time against its budget of 180 s on 2 cores (120 s until
the event-path scenarios), and where it goes (start-up, each scenario, the slowest ones), read from the
drill's own JSON report.

The baseline measured in the same run is the part no scenario can shorten: starting the sandbox and the
MCP server. The ratio says how many start-ups the scenarios cost.

    python -m bench.drill [--scenario NAME ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BUDGET_SECONDS = 180.0


@dataclass
class DrillCost:
    scenarios: int
    passed: bool
    wall_seconds: float  # the whole command, as a user waits for it
    start_up_seconds: float  # sandbox and MCP server ready (the baseline)
    scenario_seconds: float  # the scenarios themselves
    slowest: list[tuple[str, float]]

    @property
    def budget_ratio(self) -> float:
        return self.wall_seconds / BUDGET_SECONDS

    @property
    def start_up_ratio(self) -> float:
        return self.scenario_seconds / self.start_up_seconds if self.start_up_seconds else 0.0


def drill_report(
    scenarios: list[str] | None = None, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], str, float]:
    """Run ``incident-drill`` (only ``scenarios``, if named; ``env`` its environment): its JSON report,
    what it printed and its wall time."""
    with tempfile.TemporaryDirectory(prefix="bench-drill-") as work:
        args = [sys.executable, "-m", "chaos.drill.cli", "--report-dir", work]
        for name in scenarios or []:
            args += ["--scenario", name]
        started = time.perf_counter()
        ran = subprocess.run(  # noqa: S603
            args, env=env, capture_output=True, text=True, timeout=1200, check=False
        )
        wall = time.perf_counter() - started
        if ran.returncode not in (0, 1):
            raise RuntimeError(f"incident-drill exited {ran.returncode}: {ran.stderr[-2000:]}")
        report: dict[str, Any] = json.loads((Path(work) / "drill-report.json").read_text())
    return report, ran.stdout, wall


def run(scenarios: list[str] | None = None) -> DrillCost:
    report, stdout, wall = drill_report(scenarios)
    rows = [(s["name"], float(s["seconds"])) for s in report["scenarios"]]
    spent = sum(seconds for _, seconds in rows)
    return DrillCost(
        scenarios=len(rows),
        passed=bool(report["passed"]),
        wall_seconds=wall,
        start_up_seconds=_start_up(stdout),
        scenario_seconds=spent,
        slowest=sorted(rows, key=lambda row: -row[1])[:5],
    )


def _start_up(stdout: str) -> float:
    """The seconds the drill printed when the MCP server was ready: '... read-only ...) (4.2s)'."""
    for line in stdout.splitlines():
        if "MCP server ready" in line:
            return float(line.rsplit("(", 1)[1].rstrip("s)"))
    return 0.0


def render(cost: DrillCost) -> str:
    slowest = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in cost.slowest)
    each = cost.scenario_seconds / max(cost.scenarios, 1)
    return "\n".join(
        [
            f"incident-drill, {cost.scenarios} scenarios ({'all passed' if cost.passed else 'SOME FAILED'})",
            f"  wall time            {cost.wall_seconds:6.1f} s   {cost.budget_ratio:.2f}x the "
            f"{BUDGET_SECONDS:.0f} s budget",
            f"  start-up (baseline)  {cost.start_up_seconds:6.1f} s   sandbox and MCP server ready",
            f"  scenarios            {cost.scenario_seconds:6.1f} s   summed over the lanes, "
            f"{cost.start_up_ratio:.1f}x the start-up, {each:.1f} s each",
            f"  slowest              {slowest}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drill", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", metavar="NAME", help="only these (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    cost = run(args.scenario)
    figures = asdict(cost) | {"budget_ratio": cost.budget_ratio, "start_up_ratio": cost.start_up_ratio}
    print(json.dumps(figures, indent=1) if args.json else render(cost))
    return 0 if cost.passed else 1


if __name__ == "__main__":
    sys.exit(main())
