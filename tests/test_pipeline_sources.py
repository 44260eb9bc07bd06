"""Alarms on a queue, a dead-letter queue or a topic, through the pipeline: the real MCP server's
``get_source_consumers`` names the functions tied to the resource (wired by the operator in the sandbox),
and each function's incident is opened with the alarmed resource kept."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from chaos.loopback import free_port
from chaos.sandbox import names
from supervisor.incident.consumers import TOOL
from supervisor.incident.pipeline import IncidentPipeline, IncidentsNotRecorded
from supervisor.incident.runs import NO_DIAGNOSIS_REASON
from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStore, from_item
from tests.agent_support import ScriptedChatModel, ai
from tests.conftest import Undo
from tests.pipeline_support import direct_event, emitted, json_logs, load_event, outcomes
from tests.source_wiring import Wiring, wire_sources

MakePipeline = Callable[..., IncidentPipeline]
TURNS = 10  # more than the graph asks a model that never calls a tool for


@pytest.fixture
def wiring(operator: boto3.Session, undo: Undo) -> Wiring:
    return wire_sources(operator, undo)


def _alarm(sample: str, resource_name: str) -> dict[str, Any]:
    """A sample alarm on a queue or topic, as a new message naming ``resource_name`` and dated now."""
    event = load_event(sample)
    sns = event["Records"][0]["Sns"]
    now = datetime.now(UTC)
    sns["MessageId"] = str(uuid.uuid4())
    sns["Timestamp"] = stamp(now)
    message = json.loads(sns["Message"])
    message["StateChangeTime"] = now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"
    (dimension,) = message["Trigger"]["Dimensions"]
    message["Trigger"]["Dimensions"] = [dimension | {"value": resource_name}]
    sns["Message"] = json.dumps(message)
    return event


def _stopping(investigations: int) -> ScriptedChatModel:
    """A model that never calls a tool, so each investigation ends FAILED at the recursion limit: these
    tests are about which incidents open, not what they find."""
    return ScriptedChatModel([ai(text="nothing to add") for _ in range(investigations * TURNS)])


def _opened(incidents: IncidentStore, outcome: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    state = incidents.get(outcome["incident_id"])
    context = incidents.get_context(outcome["incident_id"])
    assert state is not None
    assert context is not None
    return state, json.loads(from_item(context)["incident"])


def test_a_queue_alarm_opens_the_incident_of_the_function_polling_it(
    wiring: Wiring, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    (outcome,) = outcomes(
        make_pipeline(_stopping(1)).handle(_alarm("sns_alarm_queue_age.json", wiring.queue), None)
    )
    assert (outcome["action"], outcome["status"], outcome["reason"]) == (
        "investigated",
        "FAILED",
        NO_DIAGNOSIS_REASON,
    )
    state, told = _opened(incidents, outcome)
    assert (state["function_name"], state["source"], state["error_type"]) == (
        names.FUNCTION_NAME,
        "cloudwatch_alarm",
        "ApproximateAgeOfOldestMessage",
    )
    assert state["alarmed_resource"] == wiring.queue_arn
    assert told["function_name"] == names.FUNCTION_NAME
    assert told["alarmed_resource"] == {
        "namespace": "AWS/SQS",
        "dimension": "QueueName",
        "value": wiring.queue,
        "arn": wiring.queue_arn,
    }


def test_a_dead_letter_queue_alarm_opens_an_incident_for_each_function_tied_to_it(
    wiring: Wiring, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    """The DLQ of the queue data-processor polls (redrive), and orders-api's on-failure destination."""
    dlq = wiring.dlq_arn.rsplit(":", 1)[1]
    event = _alarm("sns_alarm_dlq_depth.json", dlq)
    results = outcomes(make_pipeline(_stopping(2)).handle(event, None))
    assert [(o["action"], o["status"]) for o in results] == [("investigated", "FAILED")] * 2
    opened = [_opened(incidents, o)[0] for o in results]
    assert [(s["function_name"], s["alarmed_resource"]) for s in opened] == [
        (names.FUNCTION_NAME, wiring.dlq_arn),
        (names.ORDERS_FUNCTION, wiring.dlq_arn),
    ]
    assert {s["message_id"] for s in opened} == {event["Records"][0]["Sns"]["MessageId"]}

    again = outcomes(make_pipeline(_stopping(0)).handle(event, None))  # SNS delivered it twice
    assert [(o["action"], o["incident_id"]) for o in again] == [
        ("duplicate", o["incident_id"]) for o in results
    ]


def test_a_topic_alarm_opens_the_incident_of_the_function_it_delivers_to(
    wiring: Wiring, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    topic = wiring.topic_arn.rsplit(":", 1)[1]
    (outcome,) = outcomes(
        make_pipeline(_stopping(1)).handle(_alarm("sns_alarm_topic_failed.json", topic), None)
    )
    state, told = _opened(incidents, outcome)
    assert (state["function_name"], state["error_type"], state["alarmed_resource"]) == (
        names.ORDERS_FUNCTION,
        "NumberOfNotificationsFailed",
        wiring.topic_arn,
    )
    assert told["alarmed_resource"]["arn"] == wiring.topic_arn


def test_a_queue_alarm_joins_the_open_incident_of_its_function(
    wiring: Wiring, make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    """Dedup as for any alarm: within the window, the consumer's latest incident is the alarm's."""
    (first,) = outcomes(make_pipeline(_stopping(1)).handle(direct_event(names.FUNCTION_NAME), None))
    (joined,) = outcomes(
        make_pipeline(_stopping(0)).handle(_alarm("sns_alarm_queue_age.json", wiring.queue), None)
    )
    assert (joined["action"], joined["incident_id"], joined["reason"]) == (
        "duplicate",
        first["incident_id"],
        "already FAILED",
    )
    state = incidents.get(first["incident_id"])
    assert state is not None
    assert (state["source"], state.get("alarmed_resource")) == ("direct", None)  # what it was opened with


def _nothing_written(operator: boto3.Session, incidents: IncidentStore) -> None:
    dynamodb = operator.client("dynamodb")  # the supervisor may not scan
    for table in (incidents.state_table, str(incidents.context_table)):
        assert dynamodb.scan(TableName=table)["Count"] == 0


def test_an_alarm_on_a_queue_that_does_not_exist_is_rejected_with_nothing_written(
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    operator: boto3.Session,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    queue = f"sig-{uuid.uuid4().hex[:8]}-gone"
    (outcome,) = outcomes(make_pipeline().handle(_alarm("sns_alarm_queue_age.json", queue), None))
    arn = f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:{queue}"
    assert outcome["action"] == "rejected"
    assert outcome["reason"].startswith(
        f"alarmed resource: {arn} does not exist (Error executing tool {TOOL}: AWS error "
        "AWS.SimpleQueueService.NonExistentQueue while reading queue "
    )
    (logged,) = json_logs(caplog, "rejected_message")
    assert logged["reason"] == outcome["reason"]
    assert emitted(capsys.readouterr().out)["RejectedMessages"] == 1
    _nothing_written(operator, incidents)


def test_an_alarm_on_a_queue_nothing_is_tied_to_is_rejected_with_nothing_written(
    make_pipeline: MakePipeline, incidents: IncidentStore, operator: boto3.Session, undo: Undo
) -> None:
    sqs = operator.client("sqs")
    queue = f"sig-{uuid.uuid4().hex[:8]}-idle"
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    undo(lambda: sqs.delete_queue(QueueUrl=url))
    functions = sum(
        len(page["Functions"])
        for page in operator.client("lambda").get_paginator("list_functions").paginate()
    )
    (outcome,) = outcomes(make_pipeline().handle(_alarm("sns_alarm_queue_age.json", queue), None))
    arn = f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:{queue}"
    assert (outcome["action"], outcome["reason"]) == (
        "rejected",
        f"alarmed resource: no Lambda function is tied to {arn}: no event source mapping polls it or a queue "
        "it is the dead-letter queue of, no subscription delivers to a function, and none of the "
        f"{functions} functions names it as dead-letter queue or destination",
    )
    _nothing_written(operator, incidents)


def test_an_alarm_the_mcp_server_cannot_resolve_is_redelivered_not_lost(
    wiring: Wiring,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    operator: boto3.Session,
    caplog: pytest.LogCaptureFixture,
) -> None:
    offline = make_pipeline(mcp_server_url=f"http://127.0.0.1:{free_port()}/sse")
    event = _alarm("sns_alarm_queue_age.json", wiring.queue)
    with pytest.raises(IncidentsNotRecorded) as failed:
        offline.handle(event, None)
    message_id = event["Records"][0]["Sns"]["MessageId"]
    assert str(failed.value).startswith(
        f"message {message_id}: functions of the alarmed resource: {TOOL} could not be asked: AgentError"
    )
    assert str(failed.value).endswith(" (the event will be redelivered)")
    (logged,) = json_logs(caplog, "consumers_unknown")
    assert logged["message_id"] == message_id
    _nothing_written(operator, incidents)

    (outcome,) = outcomes(make_pipeline(_stopping(1)).handle(event, None))  # the redelivery, server back
    assert incidents.get(outcome["incident_id"]) is not None
