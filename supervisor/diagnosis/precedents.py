"""What a diagnosis recalls of its function's past: the earlier incidents of its pattern (the same primary
fault and trigger's event) as ``get_incident_history`` answered at the start of the run, each with the fix
its plan held and how that ended, and, from the third in 30 days, the pattern as a recurrence with a lasting
fix as advice. Built by code from the answer, after the diagnosis verified: history corroborates, it never
supports a fault (``corroboration.history_problem``), and nothing here is applied."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from mcp_server.contract.history import (
    GET_INCIDENT_HISTORY,
    RECURRING_COUNT,
    RECURRING_DAYS,
    FixVerdict,
    IncidentHistoryResponse,
    PastCall,
)

HISTORY_TOOL: Final[str] = GET_INCIDENT_HISTORY.name
MAX_PRECEDENTS: Final[int] = 3  # the newest
MAX_SHOWN: Final[int] = 5  # past incidents shown to the model, the newest: about 900 tokens at most
HISTORY_HEADING: Final[str] = (
    "The function's past incidents, from this toolkit's records: corroboration only. A past incident never "
    "shows what fails now: cite none for a fault type."
)


class Precedent(BaseModel):
    """An earlier incident of the same pattern, as the history answer states it."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    field: str = Field(description="Where it is in the run's history answer, e.g. 'incidents.2'.")
    observed_at: str
    status: str
    fix: list[PastCall] = Field(description="The calls of the plan made for it.")
    fix_verdict: FixVerdict | None
    seconds_to_recover: float | None


class Recurrence(BaseModel):
    """The pattern seen at least ``RECURRING_COUNT`` times in ``RECURRING_DAYS`` days, this one included."""

    model_config = ConfigDict(extra="forbid")

    fault_type: str
    trigger_event: str | None
    in_last_30_days: int = Field(ge=RECURRING_COUNT, description="With this incident.")
    fixes_held: int
    field: str = Field(description="The pattern in the run's get_incident_history answer: 'patterns.N'.")
    advice: str = Field(description="A lasting fix, as advice: never planned, never applied.")


def shown_history(answer: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the model is shown of a history answer: its newest ``MAX_SHOWN`` incidents (each where the
    answer has it, so a pointer into either is the same) and every pattern; None when it holds none."""
    incidents = answer.get("incidents") or []
    return {**answer, "incidents": incidents[:MAX_SHOWN]} if incidents else None


def recall(
    answer: Mapping[str, Any], incident_id: str, fault_types: list[str], trigger_event: str | None
) -> tuple[list[Precedent], Recurrence | None]:
    """The precedents of the pattern (primary fault, trigger) in a validated history ``answer``, newest
    first, and its recurrence; none for an unknown fault."""
    if not fault_types or fault_types[0] == "unknown":
        return [], None
    history = IncidentHistoryResponse.model_validate(answer)
    primary = fault_types[0]
    precedents = [
        Precedent(
            incident_id=past.incident_id,
            field=f"incidents.{n}",
            observed_at=past.observed_at,
            status=past.status,
            fix=past.fix,
            fix_verdict=past.fix_verdict,
            seconds_to_recover=past.seconds_to_recover,
        )
        for n, past in enumerate(history.incidents)
        if past.incident_id != incident_id
        and past.fault_types[:1] == [primary]
        and past.trigger_event == trigger_event
    ]
    precedents.sort(key=lambda p: p.observed_at, reverse=True)
    return precedents[:MAX_PRECEDENTS], _recurrence(history, incident_id, primary, trigger_event)


def _recurrence(
    history: IncidentHistoryResponse, incident_id: str, primary: str, trigger: str | None
) -> Recurrence | None:
    # This incident counts once: read as ended already when a later look re-diagnoses it.
    this = 0 if any(past.incident_id == incident_id for past in history.incidents) else 1
    for n, pattern in enumerate(history.patterns):
        if pattern.fault_type != primary or pattern.trigger_event != trigger:
            continue
        count = pattern.in_last_30_days + this
        if count < RECURRING_COUNT:
            return None
        after = f"after {trigger}" if trigger else "with no change found before it"
        return Recurrence(
            fault_type=primary,
            trigger_event=trigger,
            in_last_30_days=count,
            fixes_held=pattern.fixes_held,
            field=f"patterns.{n}",
            advice=f"{primary} {after} {count} times in {RECURRING_DAYS} days: make the fix last (an alarm "
            f"on the change that keeps causing it, a test that fails before it ships); advice, never applied",
        )
    return None
