"""The notice of a remediation status (``lifecycle.NOTICED``): the plan that awaits a person's approval, with
what to run to approve it, and each end (``NO_PLAN``, ``REJECTED``, ``EXPIRED``, ``REMEDIATED``,
``NOT_REMEDIATED``, ``UNDO_FAILED``), in the same forms as a diagnosis's notification
(``supervisor.incident.notification``), with the message attribute ``kind`` = ``remediation``.

Built only from the incident item (status, reason, digest, deadline) and what incident-context holds of
the fix: the plan's calls and undos, the review's refusals, the run's calls and checks; every text
redacted and cut like the diagnosis's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from supervisor.incident.lifecycle import APPROVAL_DEADLINE, EXECUTION, PLAN, PLAN_DIGEST, PLAN_REVIEW
from supervisor.incident.notification import (
    MAX_LISTED,
    Facts,
    Notification,
    Outline,
    assemble,
    clean,
    console_link,
    subject_line,
)

# What each status says in the subject, and how urgent it is: UNDO_FAILED needs a person now.
HEADLINES: Final[dict[str, tuple[str, str]]] = {
    "AWAITING_APPROVAL": ("a fix awaits a person's approval", "high"),
    "NO_PLAN": ("no safe fix: people must act", "medium"),
    "REJECTED": ("the fix was rejected: nothing applied", "low"),
    "EXPIRED": ("the fix was not approved in time: nothing applied", "medium"),
    "REMEDIATED": ("fix applied, recovery shown", "low"),
    "NOT_REMEDIATED": ("the fix did not stand: undone, or never applied", "high"),
    "UNDO_FAILED": ("ACT NOW: a fix could not be undone", "critical"),
}


def _json(context: Mapping[str, Any], name: str) -> Any:
    text = (context.get(name) or {}).get("S")
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _call(call: Mapping[str, Any]) -> str:
    params = json.dumps(call.get("params", {}), sort_keys=True)
    return clean(f"{call.get('service')} {call.get('operation')} {params}", "line")  # whole: the console


def _plan_lines(plan: Mapping[str, Any] | None) -> list[str]:
    steps = list((plan or {}).get("steps") or [])
    lines = []
    for n, step in enumerate(steps[:MAX_LISTED], start=1):
        lines += [
            f"{n}. {clean(step.get('action', ''), 'line')} (risk {clean(step.get('risk', '?'), 'resource')})",
            f"   call: {_call(step.get('call') or {})}",
            f"   undo: {_call(step.get('inverse') or {})}",
        ]
    if len(steps) > MAX_LISTED:
        lines.append(f"... {len(steps) - MAX_LISTED} more step(s) in the console")
    lines += [f"held before: {clean(p, 'resource')}" for p in list((plan or {}).get("precedents") or [])]
    failed = list((plan or {}).get("failed_before") or [])
    lines += [f"did not help before: {clean(p, 'resource')} (it waits for a person)" for p in failed]
    return lines or ["none"]


def _review_lines(review: Mapping[str, Any] | None) -> list[str]:
    unplanned = [clean(u, "line") for u in (review or {}).get("unplanned") or []]
    refused = [
        clean(f"step {r.get('step')}: {r.get('reason')}", "line") for r in (review or {}).get("refused") or []
    ]
    lines = [f"left out: {u}" for u in unplanned][:MAX_LISTED]
    return lines + [f"refused: {r}" for r in refused][:MAX_LISTED]


def _execution_lines(execution: Mapping[str, Any] | None) -> list[str]:
    record = execution or {}
    approval = record.get("approval") or {}
    lines = [f"approved by {clean(approval.get('approved_by'), 'resource')}"] if approval else []
    for call in list(record.get("calls") or [])[:MAX_LISTED]:
        lines.append(f"applied: {_call(call.get('call') or {})} (request {call.get('request_id') or '?'})")
    lines += [f"checked: {clean(line, 'line')}" for line in list(record.get("verification") or [])[-2:]]
    lines += [f"left by the undo: {clean(line, 'line')}" for line in record.get("undo") or []]
    return lines


def remediation_notice(
    incident: Mapping[str, Any], context: Mapping[str, Any], console_url: str | None
) -> Notification:
    """The notice of the remediation status ``incident`` is in; ``context`` its incident-context item (as
    DynamoDB returns it)."""
    incident_id, status = str(incident["incident_id"]), str(incident["status"])
    headline, severity = HEADLINES[status]
    function = clean(incident.get("function_name") or incident_id.split("@", 1)[0], "resource")
    facts = Facts(
        incident_id,
        function,
        status,
        "",
        severity,
        [],
        console_link(console_url, incident_id),
        None,
        kind="remediation",
    )
    plan, review = _json(context, PLAN), _json(context, PLAN_REVIEW)
    digest = clean(incident.get(PLAN_DIGEST) or "none", "resource")
    header = [f"Severity:    {severity}", f"Plan digest: {digest}"]
    sections = [("Why", [clean(incident.get("error_reason") or headline, "reason")])]
    if status == "AWAITING_APPROVAL":
        deadline = clean(incident.get(APPROVAL_DEADLINE) or "?", "resource")
        sections.append(
            (
                f"To approve (before {deadline}; an approval binds this digest, once)",
                [
                    f"incident-remediate show {incident_id}",
                    f"incident-remediate approve {incident_id} --digest {digest}",
                    f"incident-remediate reject {incident_id} --digest {digest}",
                ],
            )
        )
    if plan is not None:
        sections.append(("The plan (each call, and the call that undoes it)", _plan_lines(plan)))
    if review_lines := _review_lines(review):
        sections.append(("Left out or refused by the Critic", review_lines))
    if execution_lines := _execution_lines(_json(context, EXECUTION)):
        sections.append(("What the executor did", execution_lines))
    return assemble(facts, Outline(subject_line(function, status, headline), header, sections, []), incident)
