"""Provisional diagnoses and their re-check (issue 41): a diagnosis made while CloudTrail may still be
delivering the change that started the failure is stored and published at once as provisional, re-checked
through the SQS re-check queue when the window has closed, and made final with a second notification.
DynamoDB, SQS and SNS are the sandbox's; the investigations are the rules model's, over the MCP server."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chaos.faults.iam import REVOKE_S3
from chaos.loopback import free_port
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from supervisor import orchestrator
from supervisor.incident.pipeline import IncidentsNotRecorded
from supervisor.incident.replay import load_recorded, replay
from supervisor.incident.signals import stamp
from supervisor.incident.stage import RECHECK_LEASE, claim_recheck, first_failure, send_recheck, sqs_client
from supervisor.incident.store import IncidentStore, from_item
from supervisor.settings import SupervisorSettings
from tests.agent_support import ScriptedChatModel, ai, call, pointer, submission
from tests.conftest import Inject, Undo
from tests.fault_scenarios import fresh_logs
from tests.pipeline_support import StorageFaults, direct_event, item_bytes, json_logs, load_event
from tests.recheck_support import (
    BOUND,
    Clock,
    Queue,
    create_queue,
    provisional_incident,
    recheck_at,
    recheck_record,
    state_of,
)

MakePipeline = Callable[..., Any]
Notified = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def queue(sandbox: Sandbox) -> Iterator[Queue]:
    """A re-check queue of this test's own."""
    created = create_queue(sandbox, f"incident-rechecks-{uuid.uuid4().hex[:8]}")
    yield created
    created.sqs.delete_queue(QueueUrl=created.url)


def _context(incidents: IncidentStore, incident_id: str) -> dict[str, Any]:
    item = incidents.get_context(incident_id)
    assert item is not None
    return from_item(item)


def _attribute(envelope: dict[str, Any], name: str) -> str:
    return str(envelope["MessageAttributes"][name]["Value"])


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _first_start(sandbox: Sandbox) -> datetime:
    """When the function's first invocation in its (fresh) log group started: its START line's time."""
    logs = sandbox.session(names.OPERATOR).client("logs")
    events = logs.filter_log_events(logGroupName=f"/aws/lambda/{names.FUNCTION_NAME}")["events"]
    starts = [e["timestamp"] for e in events if e["message"].startswith("START RequestId")]
    assert starts, "the failed invocation wrote no START line"
    return datetime.fromtimestamp(min(starts) / 1000, UTC)


def test_the_sandbox_s_sqs_holds_a_delayed_message_back(sandbox: Sandbox, queue: Queue) -> None:
    """moto's SQS honours DelaySeconds (what the re-check's schedule rests on): a message sent with a
    delay is counted as delayed and not received; one sent without is received at once."""
    supervisor_sqs = sqs_client(sandbox.session(names.SUPERVISOR))
    send_recheck(supervisor_sqs, queue.url, "fn-later@2026-11-21T10:00:00.000Z", 900)
    assert queue.attribute("ApproximateNumberOfMessagesDelayed") == 1
    assert queue.receive() == []
    send_recheck(supervisor_sqs, queue.url, "fn-now@2026-11-21T10:00:00.000Z", 0)
    (message,) = queue.receive()
    assert json.loads(message["Body"]) == {
        "incident_id": "fn-now@2026-11-21T10:00:00.000Z",
        "kind": "recheck",
    }


def test_a_change_cloudtrail_delivers_late_is_found_by_the_recheck_and_each_stage_is_notified_once(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    undo: Undo,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Notified,
    queue: Queue,
) -> None:
    fresh_logs(sandbox, names.FUNCTION_NAME)
    undo(lambda: sandbox.set_cloudtrail_delay(0))
    sandbox.set_cloudtrail_delay(300)  # the role's change is not in the event history yet
    injected_at = datetime.now(UTC)  # earlier tests' permission changes may be in it: only this one counts
    inject(REVOKE_S3)
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "failed"
    (event,) = alarm_events(wait_seconds=2)
    # The supervisor's clock: 8 s before the first failure is BOUND old, whenever this machine gets there.
    clock = Clock(_first_start(sandbox) + timedelta(seconds=BOUND - 8))
    pipeline = make_pipeline(
        cloudtrail_delivery_bound_seconds=BOUND,
        recheck_queue_url=queue.url,
        diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn,
    )
    pipeline.store.clock = clock

    (outcome,) = pipeline.handle(event, None)["outcomes"]
    assert (outcome["status"], outcome["notification"]) == ("DIAGNOSED", "published")
    assert queue.attribute("ApproximateNumberOfMessagesDelayed") == 1  # held back until recheck_at
    assert queue.receive() == []
    incident_id = outcome["incident_id"]
    state = state_of(incidents, incident_id)
    provisional = json.loads(_context(incidents, incident_id)["diagnosis"])
    # The first failure on its timeline, else (none placed: the silence left it unknown) the alarm's time.
    firsts = [_at(e["time"]) for e in provisional["timeline"] if e["kind"] == "first_failure"]
    failed_at = firsts[0] if firsts else _at(state["observed_at"])
    due = stamp(failed_at + timedelta(seconds=BOUND))
    assert (state["final"], state["first_failure_at"], state["recheck_at"]) == (False, stamp(failed_at), due)
    missed = provisional["trigger"]
    assert missed is None or _at(missed["time"]) < injected_at  # this test's change is not delivered yet
    (gap,) = [g for g in provisional["gaps"] if g["reason"].startswith("provisional:")]
    assert gap["source"] == "get_recent_changes"
    assert f"a re-check at {due}" in gap["reason"]
    (first_notice,) = notified()
    assert first_notice["Subject"].startswith("[DIAGNOSED] data-processor (provisional): ")
    assert _attribute(first_notice, "stage") == "provisional"
    (redelivered,) = pipeline.handle(event, None)["outcomes"]  # SNS delivers the alarm again meanwhile
    assert (redelivered["action"], redelivered["notification"]) == ("duplicate", "sent before")
    assert queue.attribute("ApproximateNumberOfMessagesDelayed") == 1  # no second re-check

    sandbox.set_cloudtrail_delay(0)  # CloudTrail has delivered it by the re-check time
    (message,) = queue.receive(wait_seconds=30)
    assert json.loads(message["Body"]) == {"incident_id": incident_id, "kind": "recheck"}
    clock.now = _at(due) + timedelta(seconds=1)
    rechecked = pipeline.handle(queue.event([message]), None)

    assert rechecked["batchItemFailures"] == []
    (result,) = rechecked["outcomes"]
    assert (result["action"], result["notification"]) == ("finalised", "published")
    state = state_of(incidents, incident_id)
    assert (state["status"], state["final"], state["recheck_at"]) == ("DIAGNOSED", True, due)
    assert "recheck_claim" not in state
    context = _context(incidents, incident_id)
    final = json.loads(context["diagnosis"])
    assert final["trigger"]["event_name"] == "DeleteRolePolicy"  # the change the provisional one missed
    assert _at(final["trigger"]["time"]) >= injected_at
    assert not [g for g in final["gaps"] if g["reason"].startswith("provisional:")]
    assert json.loads(context["provisional_diagnosis"]) == provisional  # kept beside the final one
    changes = json.loads(context["recheck_changes"])
    assert changes["trigger"]["final"] == f"DeleteRolePolicy at {final['trigger']['time']}"
    assert any(
        line.startswith(("trigger found: DeleteRolePolicy", "trigger changed:"))
        for line in changes["summary"]
    )
    assert state["fault_types"] == sorted(final["fault_types"])
    (final_notice,) = notified()
    assert final_notice["Subject"].startswith("[DIAGNOSED] data-processor (final): ")
    assert _attribute(final_notice, "stage") == "final"
    chat = json.loads(final_notice["Message"])
    assert "Changed since the provisional diagnosis" in chat["content"]["description"]
    assert "DeleteRolePolicy" in chat["content"]["description"]

    # SQS delivers the re-check again, SNS the alarm: nothing is run, changed or sent again.
    again = pipeline.handle(queue.event([message]), None)
    assert [(o["action"], o["notification"]) for o in again["outcomes"]] == [("already_final", "sent before")]
    assert again["batchItemFailures"] == []
    (duplicate,) = pipeline.handle(event, None)["outcomes"]
    assert (duplicate["action"], duplicate["notification"]) == ("duplicate", "sent before")
    assert notified() == []
    assert json.loads(_context(incidents, incident_id)["diagnosis"]) == final


def test_a_diagnosis_whose_first_failure_is_older_than_the_bound_is_final_at_once(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore, queue: Queue
) -> None:
    pipeline = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND, recheck_queue_url=queue.url)
    clock = Clock(datetime.now(UTC))
    incident_id, _, alarm_at = provisional_incident(sandbox, pipeline, clock)  # a minute old: provisional
    assert state_of(incidents, incident_id)["final"] is False

    late = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND, recheck_queue_url=queue.url)
    late.store.clock = lambda: alarm_at + timedelta(hours=2, seconds=BOUND)  # a new episode, 15 min old
    event = {"Records": [dict(load_event("sns_direct_incident.json")["Records"][0])]}
    event["Records"][0]["Sns"] = event["Records"][0]["Sns"] | {
        "MessageId": str(uuid.uuid4()),
        "Timestamp": stamp(alarm_at + timedelta(hours=2)),
        "Message": json.dumps({"lambda_name": names.FUNCTION_NAME, "error_type": "Errors"}),
    }
    (outcome,) = late.handle(event, None)["outcomes"]
    state = state_of(incidents, outcome["incident_id"])
    assert (state["status"], state["final"]) == ("DIAGNOSED", True)
    assert "recheck_at" not in state
    diagnosis = json.loads(_context(incidents, outcome["incident_id"])["diagnosis"])
    assert not [g for g in diagnosis["gaps"] if g["reason"].startswith("provisional:")]
    assert queue.attribute("ApproximateNumberOfMessagesDelayed") == 1  # the first incident's only


def test_without_a_queue_no_recheck_is_sent_and_the_gap_says_the_watchdog_decides(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    pipeline = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND)
    incident_id, _, alarm_at = provisional_incident(sandbox, pipeline, Clock(datetime.now(UTC)))
    state = state_of(incidents, incident_id)
    assert (state["final"], state["recheck_at"]) == (False, recheck_at(alarm_at))
    diagnosis = json.loads(_context(incidents, incident_id)["diagnosis"])
    (gap,) = [g for g in diagnosis["gaps"] if g["reason"].startswith("provisional:")]
    assert "no re-check is scheduled (RECHECK_QUEUE_URL is not set)" in gap["reason"]
    (logged,) = json_logs(caplog, "recheck_not_scheduled")
    assert logged["incident_id"] == incident_id


def test_a_diagnosis_whose_investigation_began_inside_the_bound_stays_provisional_when_recorded_after(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    """Its reads of the change history are no later than its start: a slow investigation that ends past the
    bound may still have missed a change, so the stage is judged when it began, not when it ended."""
    pipeline = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND)
    clock = Clock(datetime.now(UTC))
    fresh_logs(sandbox, names.FUNCTION_NAME)
    sandbox.reset_cloudwatch()
    alarm_at = datetime.now(UTC)
    began = alarm_at + timedelta(seconds=BOUND - 5)  # 5 s of the window left when it begins
    clock.now = began
    pipeline.store.clock = clock
    calls: list[str] = []

    def slow(record: Any) -> None:  # each tool call takes the investigation a minute further
        calls.append(record.tool)
        clock.now += timedelta(minutes=1)

    pipeline.on_record = lambda record: slow(record) if hasattr(record, "tool") else None
    (outcome,) = pipeline.handle(direct_event(at=alarm_at), None)["outcomes"]
    assert outcome["status"] == "DIAGNOSED", outcome
    assert "get_recent_changes" in calls
    assert clock.now > alarm_at + timedelta(seconds=BOUND)  # recorded after the bound
    state = state_of(incidents, outcome["incident_id"])
    assert (state["final"], state["recheck_at"]) == (False, recheck_at(alarm_at))
    diagnosis = json.loads(_context(incidents, outcome["incident_id"])["diagnosis"])
    (gap,) = [g for g in diagnosis["gaps"] if g["reason"].startswith("provisional:")]
    window = f"changes made between {stamp(began - timedelta(seconds=BOUND))} and the first failure"
    assert window in gap["reason"]


def test_a_failed_recheck_leaves_the_provisional_diagnosis_final_with_its_reason(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore, notified: Notified
) -> None:
    topic = sandbox.world.diagnoses_topic_arn
    clock = Clock(datetime.now(UTC))
    pipeline = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND, diagnoses_topic_arn=topic)
    incident_id, _, alarm_at = provisional_incident(sandbox, pipeline, clock)
    provisional = _context(incidents, incident_id)["diagnosis"]
    assert len(notified()) == 1

    down = make_pipeline(
        cloudtrail_delivery_bound_seconds=BOUND,
        diagnoses_topic_arn=topic,
        mcp_server_url=f"http://127.0.0.1:{free_port()}/sse",
    )
    down.store.clock = lambda: alarm_at + timedelta(seconds=BOUND + 1)
    response = down.handle({"Records": [recheck_record(incident_id)]}, None)

    assert response["batchItemFailures"] == []  # never retried: the incident is final, with the reason
    (outcome,) = response["outcomes"]
    assert (outcome["action"], outcome["notification"]) == ("stands", "published")
    state = state_of(incidents, incident_id)
    assert (state["status"], state["final"]) == ("DIAGNOSED", True)
    assert "mcp_connection" in state["final_reason"]
    assert state["final_reason"].endswith(": the provisional diagnosis stands")
    assert _context(incidents, incident_id)["diagnosis"] == provisional  # it stands, gap and all
    (envelope,) = notified()
    assert envelope["Subject"].startswith("[DIAGNOSED] data-processor (final): ")
    assert "Final (not re-checked)" in json.loads(envelope["Message"])["content"]["description"]


def test_a_recheck_another_delivery_holds_is_retried_and_runs_once_the_claim_has_lapsed(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    clock = Clock(datetime.now(UTC))
    pipeline = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND)
    incident_id, _, alarm_at = provisional_incident(sandbox, pipeline, clock)
    clock.now = alarm_at + timedelta(seconds=BOUND + 1)
    assert claim_recheck(pipeline.store, incident_id, "a-delivery-that-died") is not None

    held = pipeline.handle({"Records": [recheck_record(incident_id, message_id="m-1")]}, None)
    assert held["batchItemFailures"] == [{"itemIdentifier": "m-1"}]  # SQS delivers it again later
    assert held["outcomes"][0]["action"] == "in_progress"
    assert state_of(incidents, incident_id)["final"] is False

    clock.now += RECHECK_LEASE + timedelta(seconds=1)  # the holder is gone: its claim has lapsed
    taken = pipeline.handle({"Records": [recheck_record(incident_id, message_id="m-1")]}, None)
    assert (taken["batchItemFailures"], taken["outcomes"][0]["action"]) == ([], "finalised")
    state = state_of(incidents, incident_id)
    assert (state["final"], "recheck_claim" in state, "final_reason" in state) == (True, False, False)
    assert "recheck_changes" in _context(incidents, incident_id)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (None, "the message has no body"),
        ("not json", "the body is not JSON"),
        ("[1, 2]", "the body is a JSON list, not an object"),
        ('{"incident_id": "data-processor@2026-11-21T10:00:01.342Z"}', "kind is None, not 'recheck'"),
        ('{"incident_id": "data-processor@2026-11-21T10:00:01.342Z", "kind": "alarm"}', "kind is 'alarm'"),
        ('{"incident_id": "../../etc", "kind": "recheck"}', "is not an incident id"),
        (
            '{"incident_id": "data-processor@2026-11-21T10:00:01.342Z", "kind": "recheck", "run": "x"}',
            "unknown fields ['run']",
        ),
        (
            '{"incident_id": "data-processor@2026-11-21T10:00:01.342Z", "kind": "recheck"}',
            "no incident data-processor@2026-11-21T10:00:01.342Z in",
        ),
    ],
)
def test_a_malformed_recheck_is_rejected_with_its_reason_and_never_retried(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    body: str | None,
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    record = recheck_record("", body=body) if body is not None else recheck_record("") | {"body": None}
    response = make_pipeline().handle({"Records": [record]}, None)
    assert response["batchItemFailures"] == []  # deleted from the queue: retrying cannot help
    (outcome,) = response["outcomes"]
    assert outcome["action"] == "rejected"
    assert reason in outcome["reason"]
    (logged,) = json_logs(caplog, "rejected_message")
    assert reason in logged["reason"]
    operator = sandbox.session(names.OPERATOR).client("dynamodb")
    for table in (incidents.state_table, str(incidents.context_table)):
        assert operator.scan(TableName=table)["Count"] == 0


def test_the_lambda_handler_takes_an_sqs_event_of_rechecks(
    sandbox: Sandbox, incidents: IncidentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``supervisor.orchestrator.handler`` as Lambda calls it with the sample SQS event: a re-check of an
    incident this table does not hold is rejected, and the answer is the partial batch response."""
    environment = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {
        "AWS_PROFILE": names.SUPERVISOR,
        "INCIDENT_STATE_TABLE": incidents.state_table,
        "INCIDENT_CONTEXT_TABLE": str(incidents.context_table),
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    orchestrator._pipeline.cache_clear()
    try:
        response = orchestrator.handler(load_event("sqs_recheck.json"), None)
    finally:
        orchestrator._pipeline.cache_clear()
    assert response["batchItemFailures"] == []
    (outcome,) = response["outcomes"]
    assert (outcome["action"], outcome["message_id"]) == ("rejected", "059f36b4-87a3-44ab-83d2-661975830a7d")
    assert outcome["reason"].startswith(
        "no incident data-processor@2026-11-21T10:00:01.342Z in incident-state-"
    )


def test_a_recheck_with_a_megabyte_chain_keeps_both_diagnoses_under_400_kb(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    """The final record keeps the provisional diagnosis beside the final one: what the item may hold for
    the re-check's reasoning chain is what both diagnoses and the rest leave."""
    clock = Clock(datetime.now(UTC))
    incident_id, _, alarm_at = provisional_incident(
        sandbox, make_pipeline(cloudtrail_delivery_bound_seconds=BOUND), clock
    )
    recorded = incidents.get_context(incident_id)
    assert recorded is not None
    provisional = json.loads(recorded["diagnosis"]["S"]) | {
        "root_cause": "a long provisional story. " * 6_000
    }
    incidents.put_context(recorded | {"diagnosis": {"S": json.dumps(provisional)}})  # ~150 KB of it

    musing = "the function keeps failing; " * 9_000  # ~250 KB of model text per turn
    script = [ai(call("get_lambda_config", call_id=f"c{n}"), text=musing) for n in range(4)]
    healthy = submission(
        fault_types=["unknown"],
        evidence=[pointer("get_lambda_config", "FunctionName", names.FUNCTION_NAME, supports=None)],
        remediation_plan=[],
    )
    script.append(ai(call("submit_diagnosis", healthy, call_id="done")))
    rechecking = make_pipeline(model=ScriptedChatModel(script), cloudtrail_delivery_bound_seconds=BOUND)
    rechecking.store.clock = lambda: alarm_at + timedelta(seconds=BOUND + 1)
    response = rechecking.handle({"Records": [recheck_record(incident_id)]}, None)

    assert response["outcomes"][0]["action"] == "finalised", response
    item = incidents.get_context(incident_id)
    assert item is not None
    assert item_bytes(item) < 400 * 1024
    context = from_item(item)
    assert json.loads(context["provisional_diagnosis"]) == provisional  # whole
    assert json.loads(context["diagnosis"])["fault_types"] == ["unknown"]
    assert context["truncated"] is True
    assert json.loads(context["reasoning_chain"])[-2]["tool_calls"][0]["name"] == "submit_diagnosis"


async def test_a_provisional_diagnosis_replays_to_its_recorded_hash(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    """The stored provisional diagnosis carries the pipeline's gap; its replay hash is over the agent's own
    conclusion, which a replay of the recorded answers reproduces."""
    pipeline = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND)
    incident_id, _, _ = await asyncio.to_thread(
        provisional_incident, sandbox, pipeline, Clock(datetime.now(UTC))
    )
    recorded = load_recorded(incidents, incident_id)
    assert recorded.diagnosis is not None
    assert [g for g in recorded.diagnosis.gaps if g.reason.startswith("provisional:")]
    outcome = await replay(recorded, settings=SupervisorSettings())
    assert outcome.matches, (outcome.replay_hash, recorded.replay_hash)


def test_a_provisional_diagnosis_whose_move_failed_is_finished_provisional_by_the_redelivery(
    sandbox: Sandbox, make_pipeline: MakePipeline, incidents: IncidentStore, queue: Queue
) -> None:
    """The stored outcome keeps the stage: the redelivery that moves the incident to it makes it
    provisional with its re-check time, and schedules the re-check the failed delivery never sent."""
    pipeline = make_pipeline(cloudtrail_delivery_bound_seconds=BOUND, recheck_queue_url=queue.url)
    clock = Clock(datetime.now(UTC))
    pipeline.store.clock = clock
    fresh_logs(sandbox, names.FUNCTION_NAME)
    sandbox.reset_cloudwatch()
    alarm_at = clock.now
    clock.now += timedelta(minutes=1)
    faults = StorageFaults(pipeline.store.dynamodb, fail={5})
    event = direct_event(at=alarm_at)
    with pytest.raises(IncidentsNotRecorded, match="outcome not written"):
        pipeline.handle(event, None)
    assert faults.writes[4] == ("UpdateItem", incidents.state_table, "-> DIAGNOSED")
    assert queue.attribute("ApproximateNumberOfMessagesDelayed") == 0  # nothing sent for it yet

    (again,) = pipeline.handle(event, None)["outcomes"]
    state = state_of(incidents, again["incident_id"])
    assert (state["status"], state["final"], state["recheck_at"]) == (
        "DIAGNOSED",
        False,
        recheck_at(alarm_at),
    )
    assert state["investigations"] == 1  # moved to the stored outcome, not investigated again
    assert queue.attribute("ApproximateNumberOfMessagesDelayed") == 1


@pytest.mark.parametrize(
    ("tools", "alarm_after", "expected_after"),
    [
        (["get_recent_logs"], 90, 12),  # a log record's time is the failure's own
        (["get_function_metrics"], 90, 60),  # a metric's minute: the failures began somewhere in it
        (["get_function_metrics"], 30, 30),  # ... but never after the alarm that reported them
        (["get_function_metrics", "get_recent_logs"], 90, 12),  # a record beside the metric pins it down
    ],
)
def test_the_first_failure_of_a_metric_minute_counts_as_the_minute_s_end(
    tools: list[str], alarm_after: int, expected_after: int
) -> None:
    # Changes made up to the first failure may be undelivered: taking the minute's start as the first
    # failure would close the open window up to a minute early (the bound passed before it has).
    start = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    read = start + timedelta(seconds=12 if tools[-1] == "get_recent_logs" else 0)
    diagnosis = {
        "evidence": [{"tool": tool, "field": "x", "value": 1} for tool in tools],
        "timeline": [
            {
                "time": read.isoformat(),
                "kind": "first_failure",
                "description": "d",
                "evidence": [0, 1][: len(tools)],
            }
        ],
    }
    alarm = start + timedelta(seconds=alarm_after)
    assert first_failure(diagnosis, alarm) == start + timedelta(seconds=expected_after)
