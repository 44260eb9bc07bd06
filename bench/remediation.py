"""What remediation proves on the drill: how long from the alarm to ``REMEDIATED`` a fix the executor may
apply on its own (low risk: an alias, a setting, concurrency) takes, the recovery check included, and how
many of the drill's incidents with a fix command the executor brings to ``REMEDIATED``.

One drill run (rules model) with the executor's auto-apply on for low risk (``DRILL_AUTO_APPLY=low``); a
high-risk plan still waits for the drill's person. The baseline measured in the same run is the
diagnosis: from the alarm to ``DIAGNOSED`` of the same incidents; the ratio says what applying and proving
the fix adds to it.

    python -m bench.remediation [--scenario NAME ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.drill import drill_report
from chaos.drill.checks import APPLIED, COMMAND, FIXED_FIRST
from chaos.drill.remediation import FOUND_IN_PLACE, WORLD_AS_BEFORE, remediated

GOAL_MEDIAN_SECONDS = 60.0


@dataclass
class RemediationCost:
    passed: bool
    with_command: int  # incidents expected to carry a fix command
    remediated: int  # of those, brought to REMEDIATED by the executor
    in_place: int = 0  # of those, REMEDIATED with the fix an earlier incident applied found in place
    guarded: int = 0  # of those, staged so that a guard keeps the fix from standing (scenarios.Twist)
    auto: list[tuple[str, float]] = field(default_factory=list)  # low risk, no person: alarm to REMEDIATED
    approved: list[tuple[str, float]] = field(default_factory=list)  # a person approved first
    diagnosed: list[float] = field(default_factory=list)  # the same incidents' alarm to DIAGNOSED

    @property
    def share(self) -> float:
        """REMEDIATED among the incidents with a fix command that no guard was staged to stop."""
        fixable = self.with_command - self.guarded
        return self.remediated / fixable if fixable else 0.0


def run(scenarios: list[str] | None = None) -> RemediationCost:
    env = os.environ | {"DRILL_AUTO_APPLY": "low", "DRILL_REMEDIATE": "true"}
    report, _, _ = drill_report(scenarios, env)
    return cost(report)


def cost(report: dict[str, Any]) -> RemediationCost:
    """The figures of a drill report (its JSON): each incident's ``remediation applied`` check, or, for one
    a later act of its scenario needed fixed first (a recurrence), its ``fixed before the next act``."""
    result = RemediationCost(bool(report["passed"]), 0, 0)
    for scenario in report["scenarios"]:
        checks = scenario["checks"]
        result.with_command += sum(1 for check in checks if check["name"] == COMMAND)
        seconds = {str(i["incident_id"]): float(i["seconds"]) for i in scenario["incidents"]}
        for applied in (c for c in checks if c["name"] in (APPLIED, FIXED_FIRST) and c["ok"]):
            detail = str(applied["detail"])
            if detail.endswith(WORLD_AS_BEFORE):  # a guard kept the fix out
                result.guarded += 1
            found = remediated(detail)
            if found is None:
                continue
            result.remediated += 1
            by, since_alarm = found
            if by == FOUND_IN_PLACE:  # the same fix an earlier incident applied: no timing
                result.in_place += 1
                continue
            bucket = result.auto if "auto-applied, " in detail else result.approved
            bucket.append((scenario["name"], since_alarm))
            result.diagnosed += [seconds[i] for i in seconds if detail.startswith(f"{i}: ")]
    return result


def render(figures: RemediationCost) -> str:
    auto = [seconds for _, seconds in figures.auto]
    lines = [
        f"remediation on the drill ({'all passed' if figures.passed else 'SOME FAILED'})",
        f"  REMEDIATED           {figures.remediated} of {figures.with_command - figures.guarded} incidents "
        f"with a fix command ({figures.share:.0%}; {figures.in_place} of them found the fix an earlier "
        f"incident applied in place; {figures.guarded} more staged for a guard to stop it)",
    ]
    if auto:
        median, worst = statistics.median(auto), max(auto)
        lines.append(
            f"  low risk, no person  median {median:.1f} s, worst {worst:.1f} s from the alarm to REMEDIATED "
            f"({len(auto)} fixes; goal: median <= {GOAL_MEDIAN_SECONDS:.0f} s)"
        )
    if figures.diagnosed and auto:
        base = statistics.median(figures.diagnosed)
        lines.append(
            f"  baseline             median {base:.1f} s the supervisor spent diagnosing them: applying and "
            f"proving the fix takes {statistics.median(auto) / base:.1f}x that"
        )
    if figures.approved:
        approved = [seconds for _, seconds in figures.approved]
        lines.append(
            f"  approved by a person median {statistics.median(approved):.1f} s, worst {max(approved):.1f} s "
            f"from the alarm to REMEDIATED ({len(approved)} fixes, the person's approval included)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.remediation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", metavar="NAME", help="only these (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = run(args.scenario)
    print(json.dumps(asdict(figures) | {"share": figures.share}, indent=1) if args.json else render(figures))
    return 0 if figures.passed else 1


if __name__ == "__main__":
    sys.exit(main())
