"""What the drill checks about the diagnoses topic: one notification per incident and stage, one notice per
remediation status, and nothing else."""

from __future__ import annotations

import json
from typing import Any

from chaos.drill.checks import Check, Incident
from supervisor.incident.lifecycle import NOTICED


def _attribute(envelope: dict[str, Any], name: str) -> str:
    return str(envelope.get("MessageAttributes", {}).get(name, {}).get("Value"))


def notified_once(
    incidents: list[Incident], envelopes: list[dict[str, Any]], statuses: dict[str, str] | None = None
) -> Check:
    """Each incident has exactly one notification per stage on the diagnoses topic (a provisional
    diagnosis, then its final one; or the final one alone), then one notice per remediation status it was
    in that people are told of (``statuses``: each incident's status now), in order, naming it, its
    function and its status, in the chat integration's custom-notification form; and nothing else was
    published."""
    wanted = {incident.incident_id: incident for incident in incidents}
    stages: dict[str, list[str]] = {}
    for envelope in envelopes:
        kind = _attribute(envelope, "kind")
        stage = _attribute(envelope, "status" if kind == "remediation" else "stage")
        stages.setdefault(_attribute(envelope, "incident_id"), []).append(stage)
    expected = {
        incident_id: _stages(incident) + _noticed((statuses or {}).get(incident_id))
        for incident_id, incident in wanted.items()
    }
    problems = [
        f"{incident_id}: notified {stages.get(incident_id, [])} (expected {expected[incident_id]})"
        for incident_id in wanted
        if stages.get(incident_id, []) != expected[incident_id]
    ]
    problems += [
        f"{incident_id}: not an incident of the scenario"
        for incident_id in stages
        if incident_id not in wanted
    ]
    for envelope in envelopes:
        incident = wanted.get(str(envelope.get("MessageAttributes", {}).get("incident_id", {}).get("Value")))
        if incident is None:
            continue
        chat = json.loads(envelope["Message"])
        status = _attribute(envelope, "status")
        if _attribute(envelope, "kind") != "remediation" and status != incident.status:
            problems.append(f"{incident.incident_id}: notified as {status}, not {incident.status}")
        if not str(envelope.get("Subject")).startswith(f"[{status}] {incident.function}"):
            problems.append(f"{incident.incident_id}: subject {envelope.get('Subject')!r}")
        if (chat.get("version"), chat.get("source"), chat.get("metadata", {}).get("threadId")) != (
            "1.0",
            "custom",
            incident.incident_id,
        ):
            problems.append(f"{incident.incident_id}: not a custom notification of it")
    return Check(
        "notified once",
        not problems,
        "; ".join(problems)
        if problems
        else f"{len(incidents)} incident(s), one notification each per stage and remediation status"
        if incidents
        else "no incident, no notification",
    )


def _stages(incident: Incident) -> list[str]:
    return ["provisional", "final"] if incident.provisional is not None else ["final"]


def _noticed(status: str | None) -> list[str]:
    """The remediation notices an incident now in ``status`` was sent: the plan's end (waiting for a person,
    or none), then the end of its run."""
    if status is None or status not in NOTICED:
        return []
    return [status] if status in ("AWAITING_APPROVAL", "NO_PLAN") else ["AWAITING_APPROVAL", status]
