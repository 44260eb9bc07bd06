"""What the function's own history says of a plan (``mcp_server.history``, over the supervisor's own
incident-state table): among the past incidents of the same pattern (the function, the diagnosis's primary
fault and its trigger's event), those where the same calls were proven to hold (``precedents``, cited in
the plan) and those where they were applied and proven not to help (``failed_before``: flagged, and never
applied without a person). History is corroboration: it neither adds nor removes a step."""

from __future__ import annotations

import json
from typing import Final

from mcp_server.contract.history import GetIncidentHistoryArgs
from mcp_server.history import read_history
from supervisor.incident.store import IncidentStore
from supervisor.remediation.plan import Plan
from supervisor.schemas import Diagnosis

MAX_CITED: Final[int] = 5  # of each kind, the newest
HELD: Final[str] = "held"
FAILED: Final[frozenset[str]] = frozenset({"did_not_help"})


def with_precedents(store: IncidentStore, plan: Plan, diagnosis: Diagnosis) -> Plan:
    """``plan`` citing the past incidents of its pattern whose same calls held, and flagging those whose
    same calls did not help; raises what the Query raises."""
    if not diagnosis.fault_types:
        return plan
    trigger = diagnosis.trigger.event_name if diagnosis.trigger else None
    asked = GetIncidentHistoryArgs(
        lambda_name=plan.function, fault_type=diagnosis.fault_types[0], trigger_event=trigger or None
    )
    history = read_history(store.dynamodb, store.state_table, plan.function, asked, store.clock())
    calls = _canonical([(s.call.service, s.call.operation, s.call.params) for s in plan.steps])
    same = [
        past
        for past in history.past  # the newest first
        if past.incident_id != plan.incident_id
        and past.trigger_event == (trigger or None)
        and _canonical([(c.service, c.operation, c.parameters) for c in past.fix]) == calls
    ]
    held = tuple(p.incident_id for p in same if p.fix_verdict == HELD)[:MAX_CITED]
    failed = tuple(p.incident_id for p in same if p.fix_verdict in FAILED)[:MAX_CITED]
    return plan.model_copy(update={"precedents": held, "failed_before": failed})


def _canonical(calls: list[tuple[str, str, object]]) -> list[str]:
    return sorted(json.dumps(call, sort_keys=True) for call in calls)
