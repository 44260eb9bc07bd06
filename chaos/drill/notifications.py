"""What the drill checks about the diagnoses topic: one notification per incident, and nothing else."""

from __future__ import annotations

import json
from typing import Any

from chaos.drill.checks import Check, Incident


def _attribute(envelope: dict[str, Any], name: str) -> str:
    return str(envelope.get("MessageAttributes", {}).get(name, {}).get("Value"))


def notified_once(incidents: list[Incident], envelopes: list[dict[str, Any]]) -> Check:
    """Each incident has exactly one notification per stage on the diagnoses topic (a provisional
    diagnosis, then its final one; or the final one alone), naming it, its function and its status, in the
    chat integration's custom-notification form; and nothing else was published."""
    wanted = {incident.incident_id: incident for incident in incidents}
    stages: dict[str, list[str]] = {}
    for envelope in envelopes:
        stages.setdefault(_attribute(envelope, "incident_id"), []).append(_attribute(envelope, "stage"))
    problems = [
        f"{incident_id}: notified {stages.get(incident_id, [])} (expected {_stages(incident)})"
        for incident_id, incident in wanted.items()
        if stages.get(incident_id, []) != _stages(incident)
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
        if not str(envelope.get("Subject")).startswith(f"[{incident.status}] {incident.function}"):
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
        else f"{len(incidents)} incident(s), one notification each per stage"
        if incidents
        else "no incident, no notification",
    )


def _stages(incident: Incident) -> list[str]:
    return ["provisional", "final"] if incident.provisional is not None else ["final"]
