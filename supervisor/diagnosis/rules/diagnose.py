"""From the checks' verdicts to a submission: precedence, trigger, timeline, gaps and ruled-out hypotheses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from supervisor.diagnosis.rules import event_paths, timeline, trigger_remedy
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Rejection, Verdict
from supervisor.diagnosis.rules.triggers import change_pointers, seconds_before_failure
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
        confirmed = {
            v.fault for v in found if isinstance(v, Finding) and v.explains_invocations and not v.past
        }
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
        self.resolved: list[dict[str, Any]] = []
        self.gaps: list[dict[str, Any]] = []
        self.current: list[Finding] = []

    def settle(self, findings: list[Finding]) -> list[Finding]:
        """Record the faults a later change undid, oldest first, each one's undoing bounding the window of
        the faults that began after it; the others, still current, in their order (one undone and brought
        back by a change of its kind dated from its return)."""
        over: list[tuple[Finding, ChangeEvent]] = []
        for finding in sorted(findings, key=_began):
            began = finding.first_failure[0] if finding.first_failure else None
            finding.settled = max((u.time for _, u in over if began and u.time < began), default=None)
            change = timeline.trigger(self.c, finding) if finding.from_change else None
            undone = timeline.undoing(self.c, finding, change) if change is not None else None
            if change is not None and undone is not None:
                self._resolved(finding, change, undone)
                over.append((finding, undone))
            elif change is not None and (again := timeline.recurrence(self.c, finding, change)) is not None:
                undo, finding.first_failure = again  # the fault came back: only its return is current
                finding.settled = max(undo.time, finding.settled or undo.time)
        ended = {id(f) for f, _ in over}
        return [f for f in findings if id(f) not in ended and not f.past]

    def add(self, finding: Finding) -> None:
        """A current finding: its trigger, the cause, the timeline and the step that undoes it."""
        change = timeline.trigger(self.c, finding) if finding.from_change else None
        self.current.append(finding)
        basis = self.evidence.add(finding.pointers)
        cause = finding.cause.rstrip(".") + "."
        remedy, gap, cited = finding.remedy, None, []
        if change is None and finding.from_change:
            self._no_trigger(finding)
        elif change is not None:
            cited = self.evidence.add(change_pointers(change, finding.fault))
            basis += cited
            cause += self._change(change, finding, cited)
            following = None if finding.relevant_change(change) else trigger_remedy.undo(self.c, change)
            if following is not None:
                remedy, gap = following.remedy, following.gap
                basis += self.evidence.add(following.pointers)
        if finding.first_failure is not None:
            self._first_failure(finding, finding.first_failure, change)
        self.causes.append(cause)
        if gap is not None:
            self.gaps.append({"source": "remediation", "reason": gap, "evidence": cited})
        for stated in finding.gaps:  # what the finding leaves open itself (no command can fix a bad input)
            pointers = self.evidence.add(list(stated.pointers))
            self.gaps.append({"source": stated.source, "reason": stated.reason, "evidence": pointers})
        self.steps.append(
            {
                "action": remedy.action,
                "details": remedy.details,
                "command": remedy.command,
                "evidence_basis": list(dict.fromkeys(basis)),
                "risk_level": remedy.risk,
                "requires_approval": True,
            }
        )

    def _change(self, change: ChangeEvent, finding: Finding, cited: list[int]) -> str:
        """The change on the timeline (and as the trigger, if it is the first), the other candidates beside
        it, and what the cause says of them."""
        seconds = seconds_before_failure(change, finding)
        who = _who(change)
        lead = f", {seconds:g} s before the first failure" if seconds is not None else ""
        self._on_timeline(change, f"{who} called {change.operation}", change_pointers(change, finding.fault))
        others = [e for e in timeline.candidates(self.c, finding) if e.index != change.index]
        for other in others:
            described = f"{_who(other)} called {other.operation} (another candidate)"
            self._on_timeline(other, described, change_pointers(other, None))
        if self.trigger is None:
            self.trigger = {
                "event_name": change.event["event_name"],
                "identity": change.event.get("identity_arn"),
                "time": change.event["time"],
                "seconds_before_first_failure": seconds,
                "evidence": cited,
            }
        also = f" Also changed in that time: {', '.join(e.operation for e in others)}." if others else ""
        return f" It started after {who} called {change.operation} at {change.event['time']}{lead}.{also}"

    def _on_timeline(self, change: ChangeEvent, description: str, pointers: list[Pointer]) -> list[int]:
        cited = self.evidence.add(pointers)
        self.timeline.append(
            {"time": change.event["time"], "kind": "change", "description": description, "evidence": cited}
        )
        return cited

    def _resolved(self, finding: Finding, cause: ChangeEvent, undo: ChangeEvent) -> None:
        """A fault a later change undid, with no failure of its kind since: on the timeline, not current."""
        began, ended = f"({finding.fault} began)", f"({finding.fault} resolved)"
        caused = self._on_timeline(
            cause, f"{_who(cause)} called {cause.operation} {began}", change_pointers(cause, None)
        )
        undone = self._on_timeline(
            undo, f"{_who(undo)} called {undo.operation} {ended}", change_pointers(undo, None)
        )
        last = [finding.last_failure[1]] if finding.last_failure else []
        self.resolved.append(
            {
                "fault_type": finding.fault,
                "reason": f"{finding.cause.rstrip('.')}: {cause.operation} at {cause.event['time']} caused "
                f"it, {undo.operation} at {undo.event['time']} undid it, and no {finding.fault} failure "
                "started after that.",
                "caused_by": {
                    "event_name": cause.event["event_name"],
                    "time": cause.event["time"],
                    "evidence": caused,
                },
                "undone_by": {
                    "event_name": undo.event["event_name"],
                    "time": undo.event["time"],
                    "evidence": undone,
                },
                "evidence": list(dict.fromkeys(undone + self.evidence.add(last))),
            }
        )

    def _no_trigger(self, finding: Finding) -> None:
        """A gap that says no change could have started the finding's failures, and what was searched."""
        changes = self.c.changes
        if not changes:
            return
        bounds = timeline.window(self.c, finding)
        pointers = [p for p in (bounds.after_pointer,) if p is not None]
        if finding.first_failure is not None:
            pointers.append(finding.first_failure[1])
        if changes.get("note"):
            note = changes["note"]
            pointers.append(Pointer("get_recent_changes", "note", note, "CloudTrail's delivery delay", None))
        first = finding.first_failure[0].isoformat() if finding.first_failure else "the first failure"
        span = (
            f"between the last successful invocation ({bounds.after.isoformat()}) and the first "
            f"{finding.fault} failure ({first})"
            if bounds.after is not None
            else f"of a kind that causes {finding.fault} before the first failure ({first}); no successful "
            "invocation in the logs or metrics read bounds the search"
        )
        searched = changes.get("searched", [])
        self.gaps.append(
            {
                "source": "change history",
                "reason": f"No change was made {span}, among the {len(searched)} resources searched "
                f"({'; '.join(searched)}) since {changes.get('window_start')}. CloudTrail may not have "
                "delivered the newest events yet, and a resource the function calls that neither its role, "
                "its environment nor its errors name is not searched.",
                "evidence": self.evidence.add(pointers),
            }
        )

    def _first_failure(
        self, finding: Finding, first: tuple[datetime, Pointer], change: ChangeEvent | None
    ) -> None:
        when, pointer = first
        description = f"{pointer.interpretation} ({finding.fault})"
        if pointer.tool == "get_function_metrics" and change is not None and change.time > when:
            # the metrics' minute began before the change: the failures came after it
            description += f", in the minute from {when.isoformat()}, after the change"
            when = change.time
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


def _began(finding: Finding) -> datetime:
    return finding.first_failure[0] if finding.first_failure else datetime.max.replace(tzinfo=UTC)


def _who(change: ChangeEvent) -> str:
    return str(change.event.get("identity_arn") or "an unknown identity")


def diagnose(c: Conversation) -> dict[str, Any]:
    """The submit_diagnosis arguments the evidence in the conversation supports."""
    results = verdicts(c)
    findings = [v for v in results if isinstance(v, Finding)]
    found = {f.fault for f in findings}
    subsumed = {fault for f in findings for fault in f.subsumes} & found  # explained by another finding
    report = _Report(c)
    for finding in report.settle([f for f in findings if f.fault not in subsumed]):
        report.add(finding)
    current = report.current
    ruled_out = [
        {"fault_type": r.fault, "reason": r.reason, "evidence": report.evidence.add(r.pointers)}
        for r in results
        if isinstance(r, Rejection) and r.fault not in found
    ]
    impact = [
        figure | {"evidence": report.evidence.add([pointer])} for figure, pointer in event_paths.impact(c)
    ]
    if not current:
        return _unknown(c, report, ruled_out) | {"impact": impact}
    reported = {f.fault for f in current}
    return {
        "root_cause": " ".join(report.causes),
        "fault_types": list(dict.fromkeys(f.fault for f in current)),
        "affected_resources": list(
            dict.fromkeys(
                r
                for r in (c.name, c.role if "permission_loss" in reported else None, *_implicated(current))
                if r
            )
        ),
        "severity": max((f.severity for f in current), key=_SEVERITY_ORDER.index),
        "evidence": report.evidence.pointers,
        "remediation_plan": report.steps,
        "confidence": CONFIDENCE,
        "trigger": report.trigger,
        "timeline": report.ordered_timeline(),
        "ruled_out": ruled_out,
        "resolved": report.resolved,
        "gaps": report.gaps,
        "impact": impact,
    }


def _unknown(c: Conversation, report: _Report, ruled_out: list[dict[str, Any]]) -> dict[str, Any]:
    tried = ", ".join(sorted(c.results)) or "no tool answered"
    over = [entry["fault_type"] for entry in report.resolved]
    cause = (
        f"Nothing fails now that the evidence explains: {', '.join(over)} was undone by a later change."
        if over
        else f"No fault is confirmed by the evidence gathered ({tried}); the cause is unknown."
    )
    return {
        "root_cause": cause,
        "fault_types": ["unknown"],
        "affected_resources": [c.name],
        "severity": "low",
        "evidence": report.evidence.pointers,
        "remediation_plan": [],
        "confidence": UNKNOWN_CONFIDENCE,
        "timeline": report.ordered_timeline() if over else [],
        "ruled_out": ruled_out,
        "resolved": report.resolved,
        "gaps": report.gaps,
    }


def _implicated(findings: list[Finding]) -> list[str]:
    return [resource for finding in findings for resource in finding.resources]
