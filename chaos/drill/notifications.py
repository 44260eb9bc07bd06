"""What the drill checks about the diagnoses topic: one notification per incident, and nothing else."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from chaos.drill.checks import Check, Incident


def notified_once(incidents: list[Incident], envelopes: list[dict[str, Any]]) -> Check:
    """Each incident has exactly one notification on the diagnoses topic, naming it, its function and its
    status, in the chat integration's custom-notification form; and nothing else was published."""
    wanted = {incident.incident_id: incident for incident in incidents}
    counts = Counter(
        str(envelope.get("MessageAttributes", {}).get("incident_id", {}).get("Value"))
        for envelope in envelopes
    )
    problems = [
        f"{incident_id}: {counts[incident_id]} notifications"
        for incident_id in wanted
        if counts[incident_id] != 1
    ]
    problems += [
        f"{incident_id}: not an incident of the scenario"
        for incident_id in counts
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
        else f"{len(incidents)} incident(s), one notification each"
        if incidents
        else "no incident, no notification",
    )
