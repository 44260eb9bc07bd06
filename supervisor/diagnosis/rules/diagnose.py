"""From the checks' verdicts to a submission: precedence, trigger, timeline, gaps and ruled-out hypotheses."""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.findings import Finding, Pointer, Rejection, Verdict
from supervisor.diagnosis.rules.triggers import change_pointers, seconds_before_failure, trigger
from supervisor.faults.registry import BY_PRECEDENCE
from supervisor.schemas import Severity

_SEVERITY_ORDER: tuple[Severity, ...] = ("low", "medium", "high", "critical")
CONFIDENCE = 0.9  # what the rules claim for a confirmed finding; the code caps it by what checks out
UNKNOWN_CONFIDENCE = 0.2


def verdicts(c: Conversation) -> list[Verdict]:
    """Every fault class's verdict, in the classes' declared precedence (a setting that cannot work first,
    then what blocks the code from outside, then the code itself); a class whose ``unless`` names a class
    already confirmed is not checked."""
    found: list[Verdict] = []
    for fault in BY_PRECEDENCE:
        confirmed = {v.fault for v in found if isinstance(v, Finding)}
        if not confirmed & set(fault.unless):
            found.append(fault.checker()(c))
    return found


class _Evidence:
    """The evidence list being built: each pointer once, by its tool and field."""

    def __init__(self) -> None:
        self.pointers: list[dict[str, Any]] = []
        self._index: dict[tuple[str, str, str | None], int] = {}

    def add(self, pointers: list[Pointer]) -> list[int]:
        indices = []
        for pointer in pointers:
            key = (pointer.tool, pointer.field, pointer.supports)
            if key not in self._index:
                self._index[key] = len(self.pointers)
                self.pointers.append(pointer.as_dict())
            indices.append(self._index[key])
        return list(dict.fromkeys(indices))


def diagnose(c: Conversation) -> dict[str, Any]:
    """The submit_diagnosis arguments the evidence in the conversation supports."""
    results = verdicts(c)
    findings = [v for v in results if isinstance(v, Finding)]
    found = {f.fault for f in findings}
    subsumed = {fault for f in findings for fault in f.subsumes} & found  # explained by another finding
    findings = [f for f in findings if f.fault not in subsumed]
    evidence = _Evidence()
    steps, timeline, causes = [], [], []
    submitted_trigger: dict[str, Any] | None = None
    for finding in findings:
        basis = evidence.add(finding.pointers)
        cause = finding.cause.rstrip(".") + "."
        change = trigger(c, finding)
        if change is not None:
            cited = evidence.add(change_pointers(change, finding))
            basis += cited
            seconds = seconds_before_failure(change, finding)
            who = change.event.get("identity_arn") or "an unknown identity"
            lead = f", {seconds:g} s before the first failure" if seconds is not None else ""
            cause += f" It started after {who} called {change.operation} at {change.event['time']}{lead}."
            timeline.append(
                {
                    "time": change.event["time"],
                    "kind": "change",
                    "description": f"{who} called {change.operation}",
                    "evidence": cited,
                }
            )
            if submitted_trigger is None:
                submitted_trigger = {
                    "event_name": change.event["event_name"],
                    "identity": change.event.get("identity_arn"),
                    "time": change.event["time"],
                    "seconds_before_first_failure": seconds,
                    "evidence": cited,
                }
        if finding.first_failure is not None:
            when, pointer = finding.first_failure
            description = f"{pointer.interpretation} ({finding.fault})"
            if pointer.tool == "get_function_metrics" and change is not None and change.time > when:
                when = change.time  # the metrics' minute began before the change: the failures came after it
                description += f", in the minute from {pointer.value}, after the change"
            timeline.append(
                {
                    "time": when.isoformat(),
                    "kind": "first_failure",
                    "description": description,
                    "evidence": evidence.add([pointer]),
                }
            )
        causes.append(cause)
        steps.append(
            {
                "action": finding.remedy.action,
                "details": finding.remedy.details,
                "command": finding.remedy.command,
                "evidence_basis": basis,
                "risk_level": finding.remedy.risk,
                "requires_approval": True,
            }
        )
    ruled_out = [
        {"fault_type": r.fault, "reason": r.reason, "evidence": evidence.add(r.pointers)}
        for r in results
        if isinstance(r, Rejection) and r.fault not in found
    ]
    gaps = _gaps(c, evidence, findings, submitted_trigger is not None)
    timeline = sorted(
        {(e["time"], e["kind"]): e for e in timeline}.values(),
        key=lambda e: (instant(e["time"]), e["kind"] != "change"),
    )
    if not findings:
        tried = ", ".join(sorted(c.results)) or "no tool answered"
        return {
            "root_cause": f"No fault is confirmed by the evidence gathered ({tried}); the cause is unknown.",
            "fault_types": ["unknown"],
            "affected_resources": [c.name],
            "severity": "low",
            "evidence": evidence.pointers,
            "remediation_plan": [],
            "confidence": UNKNOWN_CONFIDENCE,
            "ruled_out": ruled_out,
            "gaps": gaps,
        }
    return {
        "root_cause": " ".join(causes),
        "fault_types": list(dict.fromkeys(f.fault for f in findings)),
        "affected_resources": list(
            dict.fromkeys(
                r
                for r in (c.name, c.role if "permission_loss" in found else None, *_implicated(findings))
                if r
            )
        ),
        "severity": max((f.severity for f in findings), key=_SEVERITY_ORDER.index),
        "evidence": evidence.pointers,
        "remediation_plan": steps,
        "confidence": CONFIDENCE,
        "trigger": submitted_trigger,
        "timeline": timeline,
        "ruled_out": ruled_out,
        "gaps": gaps,
    }


def _implicated(findings: list[Finding]) -> list[str]:
    return [resource for finding in findings for resource in finding.resources]


def _gaps(
    c: Conversation, evidence: _Evidence, findings: list[Finding], triggered: bool
) -> list[dict[str, Any]]:
    """What the rules could not settle (the code adds what the tools could not read)."""
    changes = c.changes
    if not findings or triggered or not changes:
        return []
    note = Pointer("get_recent_changes", "note", changes.get("note", ""), "CloudTrail's delivery delay", None)
    return [
        {
            "source": "change history",
            "reason": f"No change in the {len(changes.get('searched', []))} resources searched since "
            f"{changes.get('window_start')} explains the failure; CloudTrail may not have delivered the "
            "newest events yet, and changes to resources the function calls are not searched.",
            "evidence": evidence.add([note]) if changes.get("note") else [],
        }
    ]
