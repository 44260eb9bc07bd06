"""From the checks' verdicts to a submission: precedence, trigger, timeline, gaps and ruled-out hypotheses."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Rejection, Verdict
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


class _Report:
    """The diagnosis being written, one confirmed finding at a time."""

    def __init__(self, c: Conversation) -> None:
        self.c = c
        self.evidence = _Evidence()
        self.steps: list[dict[str, Any]] = []
        self.timeline: list[dict[str, Any]] = []
        self.causes: list[str] = []
        self.trigger: dict[str, Any] | None = None

    def add(self, finding: Finding) -> None:
        basis = self.evidence.add(finding.pointers)
        cause = finding.cause.rstrip(".") + "."
        change = trigger(self.c, finding)
        if change is not None:
            cited = self.evidence.add(change_pointers(change, finding))
            basis += cited
            cause += self._change(change, finding, cited)
        if finding.first_failure is not None:
            self._first_failure(finding, finding.first_failure, change)
        self.causes.append(cause)
        remedy = finding.remedy
        self.steps.append(
            {
                "action": remedy.action,
                "details": remedy.details,
                "command": remedy.command,
                "evidence_basis": basis,
                "risk_level": remedy.risk,
                "requires_approval": True,
            }
        )

    def _change(self, change: ChangeEvent, finding: Finding, cited: list[int]) -> str:
        """The change on the timeline (and as the trigger, if it is the first); what the cause says of it."""
        seconds = seconds_before_failure(change, finding)
        who = change.event.get("identity_arn") or "an unknown identity"
        lead = f", {seconds:g} s before the first failure" if seconds is not None else ""
        self.timeline.append(
            {
                "time": change.event["time"],
                "kind": "change",
                "description": f"{who} called {change.operation}",
                "evidence": cited,
            }
        )
        if self.trigger is None:
            self.trigger = {
                "event_name": change.event["event_name"],
                "identity": change.event.get("identity_arn"),
                "time": change.event["time"],
                "seconds_before_first_failure": seconds,
                "evidence": cited,
            }
        return f" It started after {who} called {change.operation} at {change.event['time']}{lead}."

    def _first_failure(
        self, finding: Finding, first: tuple[datetime, Pointer], change: ChangeEvent | None
    ) -> None:
        when, pointer = first
        description = f"{pointer.interpretation} ({finding.fault})"
        if pointer.tool == "get_function_metrics" and change is not None and change.time > when:
            when = change.time  # the metrics' minute began before the change: the failures came after it
            description += f", in the minute from {pointer.value}, after the change"
        self.timeline.append(
            {
                "time": when.isoformat(),
                "kind": "first_failure",
                "description": description,
                "evidence": self.evidence.add([pointer]),
            }
        )

    def ordered_timeline(self) -> list[dict[str, Any]]:
        """Oldest first, each (time, kind) once, a change before what happened at the same instant."""
        return sorted(
            {(e["time"], e["kind"]): e for e in self.timeline}.values(),
            key=lambda e: (instant(e["time"]), e["kind"] != "change"),
        )


def diagnose(c: Conversation) -> dict[str, Any]:
    """The submit_diagnosis arguments the evidence in the conversation supports."""
    results = verdicts(c)
    findings = [v for v in results if isinstance(v, Finding)]
    found = {f.fault for f in findings}
    subsumed = {fault for f in findings for fault in f.subsumes} & found  # explained by another finding
    findings = [f for f in findings if f.fault not in subsumed]
    report = _Report(c)
    for finding in findings:
        report.add(finding)
    ruled_out = [
        {"fault_type": r.fault, "reason": r.reason, "evidence": report.evidence.add(r.pointers)}
        for r in results
        if isinstance(r, Rejection) and r.fault not in found
    ]
    gaps = [
        *_stated_gaps(report.evidence, findings),
        *_gaps(c, report.evidence, findings, report.trigger is not None),
    ]
    if not findings:
        return _unknown(c, report, ruled_out, gaps)
    return {
        "root_cause": " ".join(report.causes),
        "fault_types": list(dict.fromkeys(f.fault for f in findings)),
        "affected_resources": list(
            dict.fromkeys(
                r
                for r in (c.name, c.role if "permission_loss" in found else None, *_implicated(findings))
                if r
            )
        ),
        "severity": max((f.severity for f in findings), key=_SEVERITY_ORDER.index),
        "evidence": report.evidence.pointers,
        "remediation_plan": report.steps,
        "confidence": CONFIDENCE,
        "trigger": report.trigger,
        "timeline": report.ordered_timeline(),
        "ruled_out": ruled_out,
        "gaps": gaps,
    }


def _unknown(
    c: Conversation, report: _Report, ruled_out: list[dict[str, Any]], gaps: list[dict[str, Any]]
) -> dict[str, Any]:
    tried = ", ".join(sorted(c.results)) or "no tool answered"
    return {
        "root_cause": f"No fault is confirmed by the evidence gathered ({tried}); the cause is unknown.",
        "fault_types": ["unknown"],
        "affected_resources": [c.name],
        "severity": "low",
        "evidence": report.evidence.pointers,
        "remediation_plan": [],
        "confidence": UNKNOWN_CONFIDENCE,
        "ruled_out": ruled_out,
        "gaps": gaps,
    }


def _implicated(findings: list[Finding]) -> list[str]:
    return [resource for finding in findings for resource in finding.resources]


def _stated_gaps(evidence: _Evidence, findings: list[Finding]) -> list[dict[str, Any]]:
    """The gaps the findings state themselves (e.g. no command can fix a bad input)."""
    return [
        {"source": gap.source, "reason": gap.reason, "evidence": evidence.add(list(gap.pointers))}
        for finding in findings
        for gap in finding.gaps
    ]


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
