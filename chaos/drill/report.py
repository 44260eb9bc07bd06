"""The drill's scorecard (terminal and Markdown) and its JSON report."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from chaos.drill.checks import Check, DiagnosisStage, Incident
from chaos.drill.grounding import Finding, Grounding
from chaos.drill.scenarios import SCENARIOS, Scenario

HEADERS = (
    "scenario",
    "expected",
    "diagnosed",
    "grounded",
    "tools",
    "LLM calls",
    "tokens",
    "seconds",
    "result",
)


@dataclass
class ScenarioResult:
    scenario: Scenario
    incidents: list[Incident] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    traffic: dict[str, list[str]] = field(default_factory=dict)  # each function's invocation statuses

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def outcome(self) -> str:
        if not self.incidents:
            return "no alarm"
        counts = Counter(incident.outcome for incident in self.incidents)
        return ", ".join(f"{outcome} x{n}" if n > 1 else outcome for outcome, n in counts.items())


@dataclass(frozen=True)
class DrillRun:
    results: list[ScenarioResult]
    model: str
    started_at: str
    seconds: float
    closing_checks: list[Check] = field(default_factory=list)
    aws_actions: dict[str, list[str]] = field(default_factory=dict)  # identity -> IAM actions it used

    @property
    def passed(self) -> bool:
        return (
            bool(self.results)
            and all(result.passed for result in self.results)
            and all(check.ok for check in self.closing_checks)
        )

    @property
    def summary(self) -> str:
        passed = sum(result.passed for result in self.results)
        verdict = "passed" if self.passed else "FAILED"
        closing = [check.name for check in self.closing_checks if not check.ok]
        return (
            f"drill {verdict}: {passed}/{len(self.results)} scenarios in {self.seconds:.1f}s "
            f"(model {self.model}, {sum(len(r.incidents) for r in self.results)} incidents)"
            + (f"; failed after the scenarios: {', '.join(closing)}" if closing else "")
        )


def _row(result: ScenarioResult) -> tuple[str, ...]:
    judged = [incident.grounding for incident in result.incidents if incident.grounding is not None]
    found = sum(grounding.found for grounding in judged)
    total = sum(len(grounding.findings) for grounding in judged)
    tools = sum(len([t for t in incident.tools if t != "submit_diagnosis"]) for incident in result.incidents)
    return (
        result.scenario.name,
        result.scenario.expected_label,
        result.outcome,
        f"{found}/{total}" if total else "-",
        str(tools),
        str(sum(incident.llm_calls for incident in result.incidents)),
        str(sum(incident.tokens for incident in result.incidents)),
        f"{result.seconds:.1f}",
        "PASS" if result.passed else "FAIL",
    )


def scorecard(run: DrillRun) -> str:
    """A plain-text table for the terminal."""
    rows = [HEADERS, *(_row(result) for result in run.results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def markdown(run: DrillRun) -> str:
    lines = [
        f"# Drill report — {run.started_at}",
        "",
        run.summary,
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" for _ in HEADERS) + "|",
        *("| " + " | ".join(_row(result)) + " |" for result in run.results),
        "",
    ]
    lines += ["## After the scenarios", ""]
    lines += [_check(check) for check in run.closing_checks]
    lines += ["", "AWS actions used by the Lambda functions' identities:", ""]
    lines += [f"- `{identity}`: {', '.join(actions)}" for identity, actions in run.aws_actions.items()]
    lines.append("")
    for result in run.results:
        lines += [f"## {result.scenario.name}: {result.scenario.title}", ""]
        lines += [
            f"- {'✅' if check.ok else '❌'} **{check.name}** — {check.detail}" for check in result.checks
        ]
        for incident in result.incidents:
            if diagnosis := incident.diagnosis:
                lines += [
                    "",
                    f"`{incident.incident_id}` root cause: {diagnosis['root_cause']}",
                    *(
                        line
                        for fault in diagnosis.get("resolved") or []
                        for line in ("", _resolved(incident.incident_id, fault))
                    ),
                    "",
                    *(_step(n, step) for n, step in enumerate(diagnosis["remediation_plan"], start=1)),
                    *(
                        f"- refused `{claim['claim']}`: {claim['reason']}"
                        for claim in diagnosis.get("refused") or []
                    ),
                ]
        lines.append("")
    return "\n".join(lines)


def _check(check: Check) -> str:
    return f"- {'✅' if check.ok else '❌'} **{check.name}** — {check.detail}"


def _resolved(incident_id: str, fault: dict[str, Any]) -> str:
    caused, undone = fault["caused_by"], fault["undone_by"]
    return (
        f"`{incident_id}` resolved: {fault['fault_type']} — caused by {caused['event_name']} at "
        f"{caused['time']}, undone by {undone['event_name']} at {undone['time']}"
    )


def _step(number: int, step: dict[str, Any]) -> str:
    return f"{number}. {step['action']} (evidence {step['evidence_basis']}, {step['risk_level']} risk)"


def as_json(run: DrillRun) -> dict[str, Any]:
    return {
        "started_at": run.started_at,
        "model": run.model,
        "seconds": round(run.seconds, 2),
        "passed": run.passed,
        "closing_checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in run.closing_checks],
        "aws_actions": run.aws_actions,
        "scenarios": [
            {
                "name": result.scenario.name,
                "title": result.scenario.title,
                "injected": [injection.label for injection in result.scenario.injections],
                "infra": result.scenario.infra,
                "expected": result.scenario.expected_label,
                "outcome": result.outcome,
                "passed": result.passed,
                "seconds": round(result.seconds, 2),
                "traffic": result.traffic,
                "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in result.checks],
                "incidents": [
                    {
                        "incident_id": incident.incident_id,
                        "status": incident.status,
                        "error_category": incident.category,
                        "error_reason": incident.reason,
                        "fault_types": incident.fault_types,
                        "grounding": _grounding_json(incident.grounding),
                        "pointers_found": incident.grounding.found if incident.grounding else 0,
                        "pointers": len(incident.grounding.findings) if incident.grounding else 0,
                        "tools_called": incident.tools,
                        "llm_calls": incident.llm_calls,
                        "input_tokens": incident.input_tokens,
                        "output_tokens": incident.output_tokens,
                        "cache_read_tokens": incident.cache_read_tokens,
                        "cache_write_tokens": incident.cache_write_tokens,
                        "tokens": incident.tokens,
                        "seconds": round(incident.seconds, 2),
                        "failed_attempts": incident.failed_attempts,
                        "stage": asdict(incident.stage),
                        "diagnosis": incident.diagnosis,
                        "provisional_diagnosis": incident.provisional,
                    }
                    for incident in result.incidents
                ],
            }
            for result in run.results
        ],
    }


def dumps(run: DrillRun) -> str:
    return json.dumps(as_json(run), indent=2)


def load(text: str) -> DrillRun:
    """A run back from its JSON report (what ``dumps`` wrote): the report of a lane, to merge."""
    data = json.loads(text)
    scenarios = {scenario.name: scenario for scenario in SCENARIOS}
    return DrillRun(
        [
            ScenarioResult(
                scenarios[entry["name"]],
                incidents=[
                    Incident(
                        incident["incident_id"],
                        incident["incident_id"].split("@", 1)[0],
                        incident["status"],
                        category=incident["error_category"],
                        reason=incident["error_reason"],
                        diagnosis=incident["diagnosis"],
                        failed_attempts=incident["failed_attempts"],
                        tools=incident["tools_called"],
                        llm_calls=incident["llm_calls"],
                        input_tokens=incident["input_tokens"],
                        output_tokens=incident["output_tokens"],
                        cache_read_tokens=incident.get("cache_read_tokens", 0),
                        cache_write_tokens=incident.get("cache_write_tokens", 0),
                        seconds=incident["seconds"],
                        grounding=_loaded_grounding(incident["grounding"]),
                        stage=DiagnosisStage(**incident["stage"]),
                        provisional=incident["provisional_diagnosis"],
                    )
                    for incident in entry["incidents"]
                ],
                checks=[_loaded_check(check) for check in entry["checks"]],
                seconds=entry["seconds"],
                traffic=entry["traffic"],
            )
            for entry in data["scenarios"]
        ],
        data["model"],
        data["started_at"],
        data["seconds"],
        [_loaded_check(check) for check in data["closing_checks"]],
        data["aws_actions"],
    )


def _loaded_check(check: dict[str, Any]) -> Check:
    return Check(check["name"], check["ok"], check["detail"])


def _grounding_json(grounding: Grounding | None) -> dict[str, Any] | None:
    if grounding is None:
        return None
    return {
        "found": grounding.found,
        "total": len(grounding.findings),
        "grounded": grounding.grounded,
        "findings": [{"index": f.index, "found": f.found, "reason": f.reason} for f in grounding.findings],
        "ungrounded": grounding.ungrounded,
    }


def _loaded_grounding(data: dict[str, Any] | None) -> Grounding | None:
    if data is None:
        return None
    findings = [Finding(f["index"], f["found"], f["reason"]) for f in data["findings"]]
    return Grounding(findings, list(data["ungrounded"]))
