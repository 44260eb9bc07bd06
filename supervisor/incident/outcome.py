"""The outcome an investigation recorded in incident-context, so that whoever comes next can finish it.

The pipeline writes the investigation's terminal status (and reason) into its incident-context item before
it moves the incident there. When that move fails, the redelivery of the event (or, if none comes, the
watchdog) finds the incident still INVESTIGATING with its outcome stored, and moves it: a stored diagnosis
is never lost to a failed write, nor failed as stale.

boto3 and the standard library only: read on the orchestrator's cold path and by the watchdog.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from mcp_server.contract.history import HISTORY_KEY, MAX_RESOURCES, PRIMARY_FAULT, RESOURCES, TRIGGER_EVENT
from supervisor.incident.lifecycle import TERMINAL
from supervisor.incident.stage import FINAL, FIRST_FAILURE_AT, RECHECK_AT
from supervisor.incident.store import IncidentStore, from_item, to_item

OUTCOME_STATUS: Final[str] = "outcome_status"
OUTCOME_REASON: Final[str] = "outcome_reason"
STAGE_ATTRIBUTES: Final[tuple[str, ...]] = (FINAL, FIRST_FAILURE_AT, RECHECK_AT)


@dataclass(frozen=True)
class RecordedOutcome:
    """Where a recorded investigation ends: its status, why (without a diagnosis), and the headline of
    its diagnosis (fault types, severity, confidence, and its stage) that the incident item carries."""

    status: str
    reason: str | None
    headline: dict[str, object] | None


def outcome_attributes(status: str, reason: str | None) -> dict[str, dict[str, object]]:
    """The attributes of an incident-context item that record its outcome."""
    return to_item({OUTCOME_STATUS: status, OUTCOME_REASON: reason})


def headline_of(diagnosis: dict[str, object], function: str) -> dict[str, object]:
    """What ``function``'s incident item shows of a diagnosis (its fault types sorted), and what its
    history keeps of it (``mcp_server.contract.history``): the primary (first) fault type and the key that
    indexes it, the trigger's event name ("": none) and the resources it names."""
    fault_types = diagnosis.get("fault_types")
    faults = [str(f) for f in fault_types] if isinstance(fault_types, list) else []
    trigger = diagnosis.get("trigger")
    resources = diagnosis.get("affected_resources")
    headline: dict[str, object] = {
        "fault_types": sorted(faults),
        "severity": diagnosis.get("severity"),
        "confidence": diagnosis.get("confidence"),
        TRIGGER_EVENT: str(trigger.get("event_name") or "") if isinstance(trigger, dict) else "",
        RESOURCES: [str(r) for r in resources][:MAX_RESOURCES] if isinstance(resources, list) else [],
    }
    return headline | ({PRIMARY_FAULT: faults[0], HISTORY_KEY: f"{function}#{faults[0]}"} if faults else {})


def recorded_outcome(store: IncidentStore, incident_id: str) -> RecordedOutcome | None:
    """The outcome stored for ``incident_id``'s investigation, or None when none was recorded (no
    context item, or one written before outcomes were stored)."""
    item = store.get_context(incident_id)
    context = from_item(item) if item else {}
    status = context.get(OUTCOME_STATUS)
    if status not in TERMINAL:
        return None
    diagnosis = json.loads(context["diagnosis"]) if status == "DIAGNOSED" and "diagnosis" in context else None
    if status == "DIAGNOSED" and not isinstance(diagnosis, dict):
        return None
    reason = context.get(OUTCOME_REASON)
    stage = {key: context[key] for key in STAGE_ATTRIBUTES if key in context}  # a provisional one stays so
    function = str(context.get("function_name") or incident_id.rsplit("@", 1)[0])
    headline = headline_of(diagnosis, function) | stage if diagnosis else None
    return RecordedOutcome(str(status), str(reason) if reason else None, headline)
