"""The pipeline against hostile timestamps, storage faults and bad requests: nothing lost, nothing forged."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from chaos.sandbox import names
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.signals import Signal, stamp
from supervisor.incident.store import IncidentStore
from tests.pipeline_support import alarm_event, direct_event, outcomes, with_records

MakePipeline = Callable[..., IncidentPipeline]


def _only(response: dict[str, Any]) -> dict[str, Any]:
    (outcome,) = outcomes(response)
    return outcome


def _state(incidents: IncidentStore, incident_id: str) -> dict[str, Any]:
    state = incidents.get(incident_id)
    assert state is not None, f"no incident {incident_id}"
    return state


def test_an_alarm_dated_far_in_the_future_does_not_swallow_the_function_s_later_alarms(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    now = datetime.now(UTC)
    pipeline = make_pipeline()
    pipeline.store.clock = lambda: now
    forged = _only(pipeline.handle(alarm_event("2099-01-01T00:00:00.000+0000", at=now), None))
    assert forged["action"] == "investigated"
    state = _state(incidents, forged["incident_id"])
    assert state["observed_at"] == stamp(now)  # dated when SNS accepted it, not in 2099
    assert state["time_note"].startswith("StateChangeTime '2099-01-01T00:00:00.000+0000' lies 7")
    assert "in the future: the incident is dated when SNS accepted the alarm" in state["time_note"]

    later = now + timedelta(hours=2)  # after the incident window: a new failure, a new incident
    pipeline.store.clock = lambda: later
    real = _only(pipeline.handle(alarm_event(stamp(later).replace("Z", "+0000"), at=later), None))
    assert real["action"] == "investigated", real
    assert real["incident_id"] != forged["incident_id"]


def test_a_function_s_pointer_dated_in_the_future_is_not_joined(incidents: IncidentStore) -> None:
    """Tables written before times were checked may hold a pointer to an incident dated far ahead."""
    now = datetime.now(UTC)
    future = Signal(
        "m-2099", "cloudwatch_alarm", "data-processor", "Errors", "", datetime(2099, 1, 1, tzinfo=UTC)
    )
    misdated, _ = incidents.claim(future, window_seconds=3600)
    incidents.transition(str(misdated["incident_id"]), "RECEIVED", "FAILED", reason="seeded")
    item, created = incidents.claim(
        Signal("m-now", "cloudwatch_alarm", "data-processor", "Errors", "", now), 3600
    )
    assert created
    assert item["incident_id"] == f"data-processor@{stamp(now)}"
    incidents.transition(str(item["incident_id"]), "RECEIVED", "FAILED", reason="seeded")
    joined, created = incidents.claim(
        Signal("m-soon", "cloudwatch_alarm", "data-processor", "Errors", "", now + timedelta(minutes=1)), 3600
    )
    assert (joined["incident_id"], created) == (item["incident_id"], False)  # the pointer was repaired


def test_times_at_the_calendar_s_edge_neither_raise_nor_cost_the_other_records_their_turn(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    now = datetime.now(UTC)
    event = with_records(
        alarm_event("9999-12-31T23:30:00.000-0500", at=now),  # past the last instant UTC can hold
        direct_event(names.ORDERS_FUNCTION, sent="0001-01-01T00:10:00.000+01:00"),  # before the first
        direct_event(names.REPORT_FUNCTION, at=now),
    )
    pipeline = make_pipeline()
    pipeline.store.clock = lambda: now
    first, second, third = outcomes(pipeline.handle(event, None))
    assert [o["action"] for o in (first, second, third)] == ["investigated"] * 3
    alarm, direct, valid = (_state(incidents, o["incident_id"]) for o in (first, second, third))
    assert alarm["time_note"].startswith("StateChangeTime '9999-12-31T23:30:00.000-0500' lies beyond the")
    assert alarm["observed_at"] == stamp(now)
    assert direct["time_note"] == (
        "SNS Timestamp '0001-01-01T00:10:00.000+01:00' lies beyond the calendar in UTC: the incident is "
        "dated when the supervisor received it"
    )
    assert direct["observed_at"] == stamp(now)
    assert "time_note" not in valid
