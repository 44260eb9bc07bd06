"""The scenarios split over lanes: each lane an ``incident-drill`` process of its own, with its own sandbox,
MCP server and supervisor, so that nothing one lane does (a fault, a metric, an alarm, a queued message)
can reach another's evidence. Their lines are shown as they come, prefixed with the lane; their reports
are merged in the order the scenarios were asked for.

Every lane is given every scenario and runs the next one no lane has claimed yet (a claim is a file
created exclusively in a directory the lanes share), so a lane that drew slow scenarios takes fewer and
the lanes end together; a lane that never starts leaves its share to the others. They claim the slowest
first, as the last report in the report directory timed them (a scenario it does not time counts as the
slowest), so that no lane is left running a long one alone at the end.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO

from chaos.drill.checks import Check
from chaos.drill.report import DrillRun, ScenarioResult, load
from chaos.drill.scenarios import Scenario

LANES_DIR = "lanes"  # under the report directory: each lane's own reports and logs
CLAIMS_DIR = "claims"  # under LANES_DIR: one empty file per scenario a lane has taken
ANSWER_LOG = "mcp-answers.jsonl"  # every answer the MCP server sent (MCP_ANSWER_LOG), for the judge
LOGS = ("supervisor.log", "mcp-server.log", ANSWER_LOG)  # merged into the report directory


def claimer(claims: Path) -> Callable[[str], bool]:
    """``claim(name)``: True for the one lane that takes scenario ``name`` first, False for every other."""

    def claim(name: str) -> bool:
        try:
            (claims / name).open("x").close()
        except FileExistsError:
            return False
        return True

    return claim


def slowest_first(scenarios: list[Scenario], report: Path) -> list[Scenario]:
    """The order the lanes claim ``scenarios`` in: by their seconds in ``report`` (an earlier run's JSON
    report), slowest first; with no readable report, those that fix an incident between acts first (each
    fix waits minutes for the function's alarms to clear), the others as given."""
    try:
        timed = {
            entry["name"]: float(entry["seconds"]) for entry in json.loads(report.read_text())["scenarios"]
        }
    except (OSError, ValueError, KeyError, TypeError):
        return sorted(scenarios, key=lambda scenario: -sum(act.fixed_first for act in scenario.acts))
    return sorted(scenarios, key=lambda scenario: -timed.get(scenario.name, math.inf))


def run_lanes(
    scenarios: list[Scenario], jobs: int, model: str, report_dir: Path, started_at: str
) -> DrillRun:
    """Run ``jobs`` lanes at once and wait for all; a lane that ends without a report fails a closing
    check naming it, and the scenarios it had claimed are missing from the results."""
    started = time.monotonic()
    claims = report_dir / LANES_DIR / CLAIMS_DIR
    shutil.rmtree(claims, ignore_errors=True)  # an earlier run's claims
    claims.mkdir(parents=True)
    lanes = max(1, min(jobs, len(scenarios)))
    printing = threading.Lock()
    children: list[tuple[subprocess.Popen[str], threading.Thread]] = []
    order = slowest_first(scenarios, report_dir / "drill-report.json")
    for number in range(1, lanes + 1):
        command = [sys.executable, "-m", "chaos.drill.cli", "--lane", str(number), "--model", model]
        command += ["--report-dir", str(_lane_dir(report_dir, number)), "--claims", str(claims)]
        for scenario in order:
            command += ["--scenario", scenario.name]
        child = subprocess.Popen(  # noqa: S603 - our own CLI, fixed arguments
            command,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,  # its errors go to our stderr
        )
        assert child.stdout is not None
        shown = threading.Thread(target=_show, args=(child.stdout, printing), daemon=True)
        shown.start()
        children.append((child, shown))
    exits = []
    for child, shown in children:
        exits.append(child.wait())
        shown.join()
        assert child.stdout is not None
        child.stdout.close()
    merged = _merged(scenarios, lanes, exits, report_dir)
    return replace(merged, model=model, started_at=started_at, seconds=time.monotonic() - started)


def _lane_dir(report_dir: Path, number: int) -> Path:
    return report_dir / LANES_DIR / str(number)


def _show(lines: IO[str], printing: threading.Lock) -> None:
    for line in lines:
        with printing:
            sys.stdout.write(line)
            sys.stdout.flush()


def _merged(scenarios: list[Scenario], lanes: int, exits: list[int], report_dir: Path) -> DrillRun:
    order = {scenario.name: index for index, scenario in enumerate(scenarios)}
    results: list[ScenarioResult] = []
    closing: list[Check] = []
    actions: dict[str, set[str]] = {}
    for number, code in enumerate(exits, start=1):
        path = _lane_dir(report_dir, number) / "drill-report.json"
        if not path.exists():
            closing.append(Check(f"lane {number}", False, f"incident-drill exited {code} without a report"))
            continue
        run = load(path.read_text())
        results += run.results
        closing += [Check(f"lane {number}: {c.name}", c.ok, c.detail) for c in run.closing_checks]
        for identity, used in run.aws_actions.items():
            actions.setdefault(identity, set()).update(used)
    for log in LOGS:
        with (report_dir / log).open("w") as merged:
            for number in range(1, lanes + 1):
                part = _lane_dir(report_dir, number) / log
                if part.exists():
                    merged.write(part.read_text())
    results.sort(key=lambda result: order[result.scenario.name])
    return DrillRun(
        results,
        model="",
        started_at="",
        seconds=0.0,
        closing_checks=closing,
        aws_actions={identity: sorted(used) for identity, used in sorted(actions.items())},
    )
