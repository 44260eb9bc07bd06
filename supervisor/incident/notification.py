"""The notification of an incident's outcome, as a message: a subject, a plain-text body for email, the
JSON of an Amazon Q Developer in chat applications (formerly AWS Chatbot) custom notification, and message
attributes for subscription filters.

The message is built only from an allowlist: the incident item's own fields (function, status, times,
reason) and the stored diagnosis's fields (root cause, fault types, severity, trigger, timeline, resolved
faults, evidence, remediation, gaps). Nothing else reaches it: no settings, no environment, no raw tool
answers. Text is also passed through ``redact`` (evidence values may quote log lines, which whoever calls
the function can shape), and every long field is cut with a visible marker.

Schema of the chat JSON: https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html
Per-protocol messages (MessageStructure=json): https://docs.aws.amazon.com/sns/latest/api/API_Publish.html
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

from mcp_server.redaction import redact_text
from supervisor.incident.outgoing_text import chat_markdown, shown_controls

SUBJECT_MAX: Final[int] = 99  # SNS: "less than 100 characters", ASCII, no line breaks
TOP_EVIDENCE: Final[int] = 5
RECALL_HEADING: Final[str] = "Before (this toolkit's records of the function: corroboration, not evidence)"
MAX_LISTED: Final[int] = 5  # remediation steps, resolved faults, gaps and next steps shown
LIMITS: Final[dict[str, int]] = {
    "root_cause": 600,
    "reason": 500,
    "value": 160,
    "interpretation": 200,
    "command": 2_000,
    "line": 300,
    "description": 3_500,
    "resource": 256,
}
EVENT_TYPES: Final[dict[str, str]] = {
    "DIAGNOSED": "IncidentDiagnosed",
    "FAILED": "IncidentFailed",
    "ERROR": "IncidentErrored",
}
NO_CONSOLE: Final[str] = "no console link: SUPERVISOR_ (WATCHDOG_, EXECUTOR_) CONSOLE_URL is not set"


def redact(text: str) -> str:
    """``text`` through the product's one redactor (``mcp_server.redaction``): each secret a typed
    placeholder."""
    return redact_text(text, Counter())


def cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters long; a cut one ends with a marker saying how much went."""
    if len(text) <= limit:
        return text
    dropped = len(text) - limit
    while True:  # the marker's length depends on the count it shows
        marker = f" [... {dropped} more characters cut]"
        kept = max(0, limit - len(marker))
        if len(text) - kept == dropped:
            return text[:kept] + marker
        dropped = len(text) - kept


def clean(value: object, limit_key: str) -> str:
    return cut(shown_controls(" ".join(redact(str(value)).split())), LIMITS[limit_key])


def subject_line(function: str, status: str, detail: str) -> str:
    """ASCII, one line, under 100 characters, as SNS requires."""
    text = f"[{status}] {function}: {detail}"
    text = text.encode("ascii", "replace").decode("ascii")
    text = " ".join(text.split())
    if len(text) > SUBJECT_MAX:
        text = text[: SUBJECT_MAX - 3] + "..."
    return text


@dataclass(frozen=True)
class Notification:
    """One incident's message, in every form it is published in."""

    incident_id: str
    subject: str
    text: str  # the plain-text body, for email
    chat: dict[str, Any]  # the custom notification of Amazon Q Developer in chat applications
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)  # SNS MessageAttributes

    def publish_arguments(self, topic_arn: str) -> dict[str, Any]:
        """The SNS Publish request. With MessageStructure=json, each protocol gets its own key and any
        other falls back to "default": email subscribers read "email", and the chat integration (an HTTPS
        subscriber, with no "https" key here) and SQS read "default", the chat JSON."""
        message = {"default": json.dumps(self.chat), "email": self.text}
        return {
            "TopicArn": topic_arn,
            "Subject": self.subject,
            "Message": json.dumps(message),
            "MessageStructure": "json",
            "MessageAttributes": self.attributes,
        }


def console_link(console_url: str | None, incident_id: str) -> str | None:
    return f"{console_url.rstrip('/')}/incidents/{quote(incident_id, safe='')}" if console_url else None


def _evidence_lines(diagnosis: Mapping[str, Any]) -> list[str]:
    """The top pointers: those that support a fault first, verified before unverified, in their order."""
    evidence = list(diagnosis.get("evidence") or [])
    pointers = (diagnosis.get("verification") or {}).get("pointers", [])
    checks = {c.get("index"): c.get("verified") for c in pointers}
    ranked = sorted(
        range(len(evidence)),
        key=lambda i: (evidence[i].get("supports") is None, checks.get(i) is False, i),
    )
    lines = []
    for i in ranked[:TOP_EVIDENCE]:
        pointer = evidence[i]
        verified = checks.get(i)
        mark = "unchecked" if verified is None else "verified" if verified else "NOT verified"
        where = clean(f"{pointer.get('tool', '?')} {pointer.get('field', '?')}", "resource")
        value = clean(repr(str(pointer.get("value", ""))), "value")
        meaning = clean(pointer.get("interpretation", ""), "interpretation")
        lines.append(f"[{i}] {where} = {value} ({mark}): {meaning}")
    if len(evidence) > TOP_EVIDENCE:
        lines.append(f"... and {len(evidence) - TOP_EVIDENCE} more pointers")
    return lines


def _refused_lines(refused: list[Any]) -> list[str]:
    lines = [
        clean(f"{claim.get('claim', '?')}: {claim.get('reason', '')}", "line")
        for claim in refused[:TOP_EVIDENCE]
        if isinstance(claim, Mapping)
    ]
    if len(refused) > TOP_EVIDENCE:
        lines.append(f"... and {len(refused) - TOP_EVIDENCE} more")
    return lines


def _trigger_line(diagnosis: Mapping[str, Any]) -> str:
    trigger = diagnosis.get("trigger")
    if not trigger:
        return "none found"
    before = trigger.get("seconds_before_first_failure")
    when = f", {before:.1f} s before the first failure" if isinstance(before, int | float) else ""
    who = trigger.get("identity") or "an unknown identity"
    return clean(f"{trigger.get('event_name')} by {who} at {trigger.get('time')}{when}", "line")


def _first_failure_line(diagnosis: Mapping[str, Any]) -> str:
    for entry in diagnosis.get("timeline") or []:
        if entry.get("kind") == "first_failure":
            return clean(f"{entry.get('time')}: {entry.get('description')}", "line")
    return "not placed on the timeline"


def _remediation_lines(diagnosis: Mapping[str, Any]) -> list[str]:
    steps = list(diagnosis.get("remediation_plan") or [])
    lines = []
    for n, step in enumerate(steps[:MAX_LISTED], start=1):
        approval = ", needs approval" if step.get("requires_approval", True) else ""
        action = clean(step.get("action", ""), "line")
        lines.append(f"{n}. {action} (risk {step.get('risk_level')}{approval})")
        if step.get("command"):
            lines.append(f"   $ {clean(step['command'], 'command')}")
    if len(steps) > MAX_LISTED:
        lines.append(f"... and {len(steps) - MAX_LISTED} more steps")
    return lines


def _change(change: object) -> str:
    """``<event name> at <time>`` of a change a diagnosis names."""
    named = change if isinstance(change, Mapping) else {}
    return f"{named.get('event_name', '?')} at {named.get('time', '?')}"


def _resolved_lines(diagnosis: Mapping[str, Any]) -> list[str]:
    """Each fault a later change undid: what caused it, what undid it, and why it is over."""
    resolved = list(diagnosis.get("resolved") or [])
    lines = [
        clean(
            f"- {entry.get('fault_type')}: caused by {_change(entry.get('caused_by'))}, undone by "
            f"{_change(entry.get('undone_by'))}.",
            "line",
        )
        + f" {clean(entry.get('reason', ''), 'reason')}"
        for entry in resolved[:MAX_LISTED]
    ]
    if len(resolved) > MAX_LISTED:
        lines.append(f"... and {len(resolved) - MAX_LISTED} more resolved faults")
    return lines


def _gap_lines(diagnosis: Mapping[str, Any]) -> list[str]:
    gaps = list(diagnosis.get("gaps") or [])
    lines = [
        f"- {clean(gap.get('source', ''), 'resource')}: {clean(gap.get('reason', ''), 'line')}"
        for gap in gaps[:MAX_LISTED]
    ]
    if len(gaps) > MAX_LISTED:
        lines.append(f"... and {len(gaps) - MAX_LISTED} more gaps")
    return lines


def stage_label(incident: Mapping[str, Any]) -> str:
    """ "provisional" for a provisional diagnosis, "final" for one that was provisional before, and ""
    for an outcome that was final at once."""
    if incident.get("final") is False:
        return "provisional"
    return "final" if "recheck_at" in incident else ""


@dataclass(frozen=True)
class Facts:
    """What every form of an incident's notification states, cleaned."""

    incident_id: str
    function: str
    status: str
    stage: str  # stage_label
    severity: str
    fault_types: list[str]
    link: str | None
    diagnosis: Mapping[str, Any] | None
    kind: str = "diagnosis"  # or "remediation": a notice of a fix (supervisor.incident.remediation_notice)

    @classmethod
    def of(
        cls, incident: Mapping[str, Any], diagnosis: Mapping[str, Any] | None, console_url: str | None
    ) -> Facts:
        incident_id = str(incident["incident_id"])
        return cls(
            incident_id=incident_id,
            function=clean(incident.get("function_name") or incident_id.split("@", 1)[0], "resource"),
            status=str(incident["status"]),
            stage=stage_label(incident) if incident.get("status") == "DIAGNOSED" else "",
            severity=str((diagnosis or {}).get("severity") or "none"),
            fault_types=[str(f) for f in (diagnosis or {}).get("fault_types", [])],
            link=console_link(console_url, incident_id),
            diagnosis=diagnosis,
        )

    @property
    def labelled_status(self) -> str:
        return f"{self.status}, {self.stage}" if self.stage else self.status


@dataclass(frozen=True)
class Outline:
    """What the notification says of the outcome: its subject, header lines and titled sections."""

    subject: str
    header: list[str]
    sections: list[tuple[str, list[str]]]
    remediation: list[str]  # the remediation section's lines, which the chat lists as next steps


def _header(facts: Facts, incident: Mapping[str, Any]) -> list[str]:
    return [
        f"Incident {facts.incident_id}: {facts.labelled_status}",
        "",
        f"Function:    {facts.function}",
        f"Status:      {facts.labelled_status}",
        f"Alarm:       {clean(incident.get('error_type', '?'), 'resource')} "
        f"at {clean(incident.get('observed_at', '?'), 'resource')}",
    ]


def _stage_section(
    facts: Facts, incident: Mapping[str, Any], revision: Mapping[str, Any] | None
) -> tuple[str, list[str]] | None:
    """What the stage of a diagnosis means: the re-check to come, or what it changed."""
    recheck_at = clean(incident.get("recheck_at", "?"), "resource")
    if facts.stage == "provisional":
        return (
            "Provisional (the change history may not be complete yet)",
            [f"A re-check at {recheck_at} reads it again; the final diagnosis follows in another message."],
        )
    if facts.stage != "final":
        return None
    if incident.get("final_reason"):
        return ("Final (not re-checked)", [clean(incident["final_reason"], "reason")])
    lines = [clean(line, "line") for line in (revision or {}).get("summary") or []]
    return ("Changed since the provisional diagnosis", lines or ["not recorded"])


def _diagnosed(
    facts: Facts,
    diagnosis: Mapping[str, Any],
    stage: tuple[str, list[str]] | None = None,
    recall: list[str] | None = None,
) -> Outline:
    faults = "+".join(facts.fault_types) or "unknown"
    checks = (diagnosis.get("verification") or {}).get("pointers", [])
    verified = sum(bool(c.get("verified")) for c in checks)
    refused = list(diagnosis.get("refused") or [])
    header = [
        f"Fault types: {', '.join(facts.fault_types) or 'unknown'}",
        f"Severity:    {facts.severity}",
        f"Confidence:  {float(diagnosis.get('confidence', 0)):.2f} "
        f"({verified}/{len(checks)} evidence pointers verified, {len(refused)} claim(s) refused)",
    ]
    remediation = _remediation_lines(diagnosis) or ["none determined by the evidence"]
    sections = [
        ("Root cause", [clean(diagnosis.get("root_cause", ""), "root_cause")]),
        ("Trigger", [_trigger_line(diagnosis)]),
        ("First failure", [_first_failure_line(diagnosis)]),
        ("Top evidence", _evidence_lines(diagnosis) or ["none"]),
        ("Remediation (nothing is run; every step needs approval)", remediation),
        ("Gaps", _gap_lines(diagnosis) or ["none"]),
    ]
    if resolved := _resolved_lines(diagnosis):
        sections.insert(3, ("Resolved (undone by a later change; not current)", resolved))
    if recall:
        sections.insert(3, (RECALL_HEADING, [clean(line, "line") for line in recall]))
    if refused:
        sections.append(("Refused (did not verify; not part of the diagnosis)", _refused_lines(refused)))
    if stage is not None:
        sections.insert(0, stage)
    # The stage follows the function, so a subject still starts "[STATUS] function" for mail filters.
    function = f"{facts.function} ({facts.stage})" if facts.stage else facts.function
    subject = subject_line(function, facts.status, f"{faults} ({facts.severity})")
    return Outline(subject, header, sections, remediation)


def _undiagnosed(facts: Facts, incident: Mapping[str, Any]) -> Outline:
    category = incident.get("error_category")
    reason = clean(incident.get("error_reason") or "no reason recorded", "reason")
    subject = subject_line(facts.function, facts.status, str(category) if category else "no diagnosis")
    header = [f"Category:    {clean(category, 'resource')}"] if category else []
    return Outline(subject, header, [("Why there is no diagnosis", [reason])], [])


def _plain_text(header: list[str], sections: list[tuple[str, list[str]]]) -> str:
    body = header + [line for title, lines in sections for line in ["", title, *(f"  {x}" for x in lines)]]
    return "\n".join(body) + "\n"


def _chat(facts: Facts, outline: Outline) -> dict[str, Any]:
    """The custom notification of Amazon Q Developer in chat applications. Every text is escaped with
    ``chat_markdown``; the only markup is ours: section titles in bold and the console link."""
    description_lines = [
        f"*{chat_markdown(title)}*\n" + "\n".join(chat_markdown(line) for line in lines)
        for title, lines in outline.sections
    ]
    description_lines.append(f"<{facts.link}|Open in the incident console>" if facts.link else NO_CONSOLE)
    diagnosis = facts.diagnosis or {}
    keywords = [facts.status, *([facts.stage] if facts.stage else []), facts.function, *facts.fault_types]
    keywords += [facts.severity] if facts.diagnosis is not None else []
    resources = [clean(r, "resource") for r in diagnosis.get("affected_resources", [])][:10]
    return {
        "version": "1.0",
        "source": "custom",
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"incident-response/{facts.incident_id}")),
        "content": {
            "textType": "client-markdown",
            "title": chat_markdown(outline.subject),
            "description": cut("\n\n".join(description_lines), LIMITS["description"]),
            "nextSteps": [
                chat_markdown(line.strip()) for line in outline.remediation if not line.startswith("...")
            ],
            "keywords": [chat_markdown(keyword) for keyword in keywords],
        },
        "metadata": {
            "threadId": facts.incident_id,
            "summary": chat_markdown(outline.subject),
            "eventType": EVENT_TYPES.get(facts.status) or f"Incident{facts.status.title().replace('_', '')}",
            "relatedResources": [chat_markdown(r) for r in resources or [facts.function]],
            "additionalContext": {
                "incident_id": facts.incident_id,
                "function_name": facts.function,
                "status": facts.status,
                "stage": facts.stage or "final",
                "kind": facts.kind,
                "severity": facts.severity,
                "gaps": str(len(diagnosis.get("gaps") or [])),
                "console": facts.link or "",
            },
        },
    }


def _attributes(facts: Facts) -> dict[str, dict[str, str]]:
    """The SNS message attributes that subscription filters can match."""
    return {
        "incident_id": {"DataType": "String", "StringValue": facts.incident_id},
        "function_name": {"DataType": "String", "StringValue": facts.function},
        "status": {"DataType": "String", "StringValue": facts.status},
        "stage": {"DataType": "String", "StringValue": facts.stage or "final"},
        "kind": {"DataType": "String", "StringValue": facts.kind},
        "severity": {"DataType": "String", "StringValue": facts.severity},
        "fault_types": {"DataType": "String.Array", "StringValue": json.dumps(facts.fault_types)},
    }


def build_notification(
    incident: Mapping[str, Any],
    diagnosis: Mapping[str, Any] | None,
    console_url: str | None,
    revision: Mapping[str, Any] | None = None,
    recall: list[str] | None = None,
) -> Notification:
    """The notification of a terminal incident: ``incident`` is its incident-state item, ``diagnosis`` the
    stored diagnosis (for DIAGNOSED), ``revision`` what a re-check changed from the provisional one,
    ``recall`` what the function's history says of its pattern (``supervisor.incident.recall``)."""
    facts = Facts.of(incident, diagnosis, console_url)
    if diagnosis is not None:
        outline = _diagnosed(facts, diagnosis, _stage_section(facts, incident, revision), recall)
    else:
        outline = _undiagnosed(facts, incident)
    return assemble(facts, outline, incident)


def assemble(facts: Facts, outline: Outline, incident: Mapping[str, Any]) -> Notification:
    """The message in every form, from what it states (``facts``) and says (``outline``)."""
    console = ("Console", [facts.link or NO_CONSOLE])
    text = _plain_text([*_header(facts, incident), *outline.header], [*outline.sections, console])
    return Notification(facts.incident_id, outline.subject, text, _chat(facts, outline), _attributes(facts))
