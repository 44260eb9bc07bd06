"""The pipeline against hostile timestamps, storage faults and bad requests: nothing lost, nothing forged."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from supervisor.incident.pipeline import IncidentPipeline, IncidentsNotRecorded, NotificationsNotSent
from supervisor.incident.signals import Signal, stamp
from supervisor.incident.store import IncidentStore, from_item
from tests.pipeline_support import (
    StorageFaults,
    alarm_event,
    direct_event,
    json_logs,
    outcomes,
    with_records,
)
from watchdog.handler import build_watchdog

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


# One incident's DynamoDB writes, in order: (operation, what it writes).
INCIDENT_WRITES = [
    ("PutItem", "pointer"),  # the function's latest incident (the incident window)
    ("PutItem", "item"),  # the incident, RECEIVED
    ("UpdateItem", "-> INVESTIGATING"),
    ("PutItem", "item"),  # incident-context: the investigation and its outcome
    ("UpdateItem", "-> DIAGNOSED"),
    ("UpdateItem", "notify_claim"),
    ("UpdateItem", "notified_at"),
]


def _investigating(incidents: IncidentStore) -> str:
    """The one incident left INVESTIGATING."""
    (item,) = incidents.not_updated_since("INVESTIGATING", datetime(2999, 1, 1, tzinfo=UTC))
    return str(item["incident_id"])


def _deliver(pipeline: IncidentPipeline, event: dict[str, Any], attempts: int = 3) -> dict[str, Any]:
    """Lambda's asynchronous invocation of the SNS trigger: a failed handler gets the event again (two
    retries)."""
    for _ in range(attempts - 1):
        try:
            return pipeline.handle(event, None)
        except (IncidentsNotRecorded, NotificationsNotSent):
            continue
    return pipeline.handle(event, None)


def _notifying(sandbox: Sandbox, incidents: IncidentStore, make_pipeline: MakePipeline) -> IncidentPipeline:
    return make_pipeline(diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn)


def _sweep_later(sandbox: Sandbox, incidents: IncidentStore, minutes: float) -> dict[str, Any]:
    watchdog = build_watchdog(
        sandbox.session(names.WATCHDOG),
        incident_state_table=incidents.state_table,
        incident_context_table=incidents.context_table,
        diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn,
    )
    watchdog.store.clock = lambda: datetime.now(UTC) + timedelta(minutes=minutes)
    return watchdog.run().as_dict()


def _diagnosed_and_notified_once(
    incidents: IncidentStore, incident_id: str, notified: Callable[[], list[dict[str, Any]]]
) -> None:
    state = _state(incidents, incident_id)
    assert state["status"] == "DIAGNOSED"
    assert state["fault_types"]  # the headline came with the move
    assert state["severity"]
    context = incidents.get_context(incident_id)
    assert context is not None
    assert json.loads(from_item(context)["diagnosis"])["fault_types"] == state["fault_types"]
    (envelope,) = notified()
    assert envelope["MessageAttributes"]["incident_id"]["Value"] == incident_id
    assert envelope["MessageAttributes"]["status"]["Value"] == "DIAGNOSED"
    assert "notified_at" in state


def test_a_failed_write_to_diagnosed_fails_the_handler_and_the_redelivery_finishes_it(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
) -> None:
    pipeline = _notifying(sandbox, incidents, make_pipeline)
    faults = StorageFaults(pipeline.store.dynamodb, fail={5})
    event = direct_event()
    with pytest.raises(IncidentsNotRecorded, match="outcome not written") as raised:
        pipeline.handle(event, None)  # not a success it did not make: Lambda delivers the event again
    assert faults.writes[4] == ("UpdateItem", incidents.state_table, "-> DIAGNOSED")
    assert "InternalServerError" in str(raised.value)
    incident_id = _investigating(incidents)
    assert notified() == []

    again = _only(pipeline.handle(event, None))
    assert (again["incident_id"], again["status"], again["notification"]) == (
        incident_id,
        "DIAGNOSED",
        "published",
    )
    assert _state(incidents, incident_id)["investigations"] == 1  # finished from the stored outcome
    _diagnosed_and_notified_once(incidents, incident_id, notified)
    assert _sweep_later(sandbox, incidents, minutes=20)["failed"] == []


def test_the_watchdog_finishes_a_stored_diagnosis_whose_redelivery_never_came(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
) -> None:
    pipeline = _notifying(sandbox, incidents, make_pipeline)
    StorageFaults(pipeline.store.dynamodb, fail={5})
    with pytest.raises(IncidentsNotRecorded):
        pipeline.handle(direct_event(), None)
    incident_id = _investigating(incidents)
    report = _sweep_later(sandbox, incidents, minutes=11)
    assert (report["failed"], report["finished"], report["notified"]) == ([], [incident_id], [incident_id])
    _diagnosed_and_notified_once(incidents, incident_id, notified)


def test_another_message_leaves_a_stored_outcome_to_the_delivery_that_owns_it(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
) -> None:
    """Between storing its outcome and moving to it, an investigation is still its delivery's: a
    concurrent message must not finish it too (two deliveries would both report "investigated")."""
    pipeline = _notifying(sandbox, incidents, make_pipeline)
    faults = StorageFaults(pipeline.store.dynamodb, fail={5, 6})  # the move to DIAGNOSED, then the release
    with pytest.raises(IncidentsNotRecorded):
        pipeline.handle(direct_event(), None)
    assert [what for _, _, what in faults.writes[4:6]] == ["-> DIAGNOSED", "released_for"]
    incident_id = _investigating(incidents)
    other = _only(pipeline.handle(direct_event(message_id="m-other", at=datetime.now(UTC)), None))
    assert (other["action"], other["incident_id"], other["status"]) == (
        "duplicate",
        incident_id,
        "INVESTIGATING",
    )
    assert other["reason"].startswith("INVESTIGATING since ")
    assert _investigating(incidents) == incident_id
    assert notified() == []
    report = _sweep_later(sandbox, incidents, minutes=11)  # once stale, the stored outcome is finished
    assert (report["finished"], report["notified"]) == ([incident_id], [incident_id])
    _diagnosed_and_notified_once(incidents, incident_id, notified)


def test_a_failed_write_to_investigating_is_resumed_by_the_redelivery_of_the_message(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
) -> None:
    pipeline = _notifying(sandbox, incidents, make_pipeline)
    faults = StorageFaults(pipeline.store.dynamodb, fail={3})
    event = direct_event()
    with pytest.raises(IncidentsNotRecorded):
        pipeline.handle(event, None)
    assert faults.writes[2] == ("UpdateItem", incidents.state_table, "-> INVESTIGATING")
    again = _only(pipeline.handle(event, None))  # seconds later: far younger than the stale limit
    assert (again["action"], again["status"], again["notification"]) == (
        "investigated",
        "DIAGNOSED",
        "published",
    )
    _diagnosed_and_notified_once(incidents, again["incident_id"], notified)
    other = _only(pipeline.handle(direct_event(at=datetime.now(UTC)), None))  # another message: joined
    assert (other["action"], other["incident_id"]) == ("duplicate", again["incident_id"])


@pytest.mark.parametrize(
    "step",
    range(len(INCIDENT_WRITES) + 1),
    ids=["none", *(f"{n + 1}-{w[1]}" for n, w in enumerate(INCIDENT_WRITES))],
)
def test_every_write_of_an_incident_failing_once_still_ends_diagnosed_and_notified_once(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
    step: int,
) -> None:
    pipeline = _notifying(sandbox, incidents, make_pipeline)
    faults = StorageFaults(pipeline.store.dynamodb, fail={step} if step else set())
    event = direct_event()
    (outcome,) = outcomes(_deliver(pipeline, event))
    assert faults.failed == ([step] if step else [])
    if not step:
        assert [(operation, what) for operation, _, what in faults.writes] == INCIDENT_WRITES
    _diagnosed_and_notified_once(incidents, outcome["incident_id"], notified)
    later = _sweep_later(sandbox, incidents, minutes=20)  # stale limit and notification lease both past
    assert (later["failed"], later["finished"], later["notified"]) == ([], [], [])
    assert notified() == []


def test_a_direct_signal_for_a_function_that_does_not_exist_is_rejected_not_investigated(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    pipeline = _notifying(sandbox, incidents, make_pipeline)
    outcome = _only(pipeline.handle(direct_event("no-such-function"), None))
    assert (outcome["action"], outcome["incident_id"], outcome["notification"]) == ("rejected", None, None)
    assert outcome["reason"].startswith(
        "lambda_name 'no-such-function' names no function (ResourceNotFoundException while reading function "
        "no-such-function "
    )
    assert outcome["reason"].endswith("): not an incident")
    (logged,) = json_logs(caplog, "rejected_message")
    assert logged["reason"] == outcome["reason"]
    assert notified() == []
    operator = sandbox.session(names.OPERATOR).client("dynamodb")
    for table in (incidents.state_table, str(incidents.context_table)):
        assert operator.scan(TableName=table)["Count"] == 0  # nothing written: no incident, no pointer
