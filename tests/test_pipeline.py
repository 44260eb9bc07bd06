"""The incident pipeline end to end: SNS events into orchestrator pipelines, state and audit in the
sandbox's DynamoDB, the agent over the real MCP server."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chaos.bedrock_fake import FakeConverse, aws_error
from chaos.faults.iam import REVOKE_S3
from chaos.loopback import free_port
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.contract.registry import TOOL_NAMES
from supervisor.diagnosis.precedents import HISTORY_HEADING
from supervisor.incident.audit import REPLAY_HASH_VERSION
from supervisor.incident.pipeline import (
    BREAKER_REASON,
    IncidentPipeline,
    NotificationsNotSent,
)
from supervisor.incident.runs import NO_DIAGNOSIS_REASON
from supervisor.incident.signals import Signal, stamp
from supervisor.incident.store import IncidentStore, from_item
from tests.agent_support import ScriptedChatModel, ai, call, pointer, submission
from tests.conftest import Inject
from tests.fault_scenarios import fresh_logs
from tests.pipeline_support import (
    deny_publish,
    direct_event,
    emitted,
    item_bytes,
    json_logs,
    load_event,
    outcomes,
    stuck_incident,
    with_records,
)

MakePipeline = Callable[..., IncidentPipeline]


def _context(incidents: IncidentStore, incident_id: str) -> dict[str, Any]:
    item = incidents.get_context(incident_id)
    assert item is not None, f"no incident-context item for {incident_id}"
    return from_item(item)


def _only(response: dict[str, Any]) -> dict[str, Any]:
    (outcome,) = outcomes(response)
    return outcome


def _handled(pipeline: IncidentPipeline, incidents: IncidentStore) -> tuple[dict[str, Any], dict[str, Any]]:
    """Deliver one new direct incident; its outcome and its item in incident-state afterwards."""
    outcome = _only(pipeline.handle(direct_event(), None))
    state = incidents.get(outcome["incident_id"])
    assert state is not None
    return outcome, state


def test_an_alarm_from_a_real_fault_ends_diagnosed_with_its_audit_trail(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fresh_logs(sandbox, names.FUNCTION_NAME)  # this test's lines only: one answer of the logs tool holds them
    inject(REVOKE_S3)
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "failed"
    (event,) = alarm_events(wait_seconds=2)  # CloudWatch alarm -> SNS -> the trigger queue

    caplog.set_level("INFO")
    outcome = _only(make_pipeline().handle(event, None))

    assert outcome["action"] == "investigated"
    assert outcome["status"] == "DIAGNOSED"
    incident_id = outcome["incident_id"]
    state = incidents.get(incident_id)
    assert state is not None
    assert state["status"] == "DIAGNOSED"
    assert state["investigations"] == 1
    assert state["function_name"] == names.FUNCTION_NAME
    assert state["error_type"] == "Errors"
    assert state["created_at"] <= state["updated_at"]

    context = _context(incidents, incident_id)
    diagnosis = json.loads(context["diagnosis"])
    assert diagnosis["fault_types"] == ["permission_loss"]
    evidence, checks = diagnosis["evidence"], diagnosis["verification"]
    assert evidence
    assert [check["verified"] for check in checks["pointers"]] == [True] * len(evidence)  # one per pointer
    entries = {check["entry"]: check["verified"] for check in checks["entries"]}
    assert {"trigger", "remediation_plan.0"} <= entries.keys()
    assert list(entries.values()) == [True] * len(entries)
    assert diagnosis["verification"]["unsupported_fault_types"] == []
    assert any(p["tool"] == "get_iam_state" for p in diagnosis["evidence"])
    assert (diagnosis["trigger"]["event_name"], diagnosis["trigger"]["identity"]) == (
        "DeleteRolePolicy",
        f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.OPERATOR}",
    )  # the injector's change, as CloudTrail recorded it
    chain = json.loads(context["reasoning_chain"])
    assert chain[0]["type"] == "system"
    assert [m["type"] for m in chain[1:3]] == ["human", "ai"]
    assert sorted(c["name"] for c in chain[2]["tool_calls"]) == sorted(TOOL_NAMES)  # all six at once
    assert context["truncated"] is False
    # The function's history first, read by the graph before the model's first turn, and shown with the
    # incident only when it holds past incidents (this module's sandbox may have ended some already).
    assert context["tools_called"][0] == "get_incident_history"
    assert context["tools_called"][-1] == "submit_diagnosis"
    assert sorted(context["tools_called"][1:-1]) == sorted(TOOL_NAMES)
    results = json.loads(gzip.decompress(context["tool_results"]))
    assert {r["tool"] for r in results} == {*TOOL_NAMES, "get_incident_history"}
    (history,) = [r["result"] for r in results if r["tool"] == "get_incident_history"]
    assert (HISTORY_HEADING in chain[1]["content"]) == bool(history["incidents"])
    past = {p["incident_id"] for p in history["incidents"]}
    assert {p["incident_id"] for p in diagnosis["precedents"]} <= past - {outcome["incident_id"]}
    assert len(context["replay_hash"]) == 64
    assert context["replay_hash_version"] == REPLAY_HASH_VERSION

    (metrics_log,) = json_logs(caplog, "agent_metrics")
    assert metrics_log["event"] == "agent_metrics"
    assert metrics_log["incident_id"] == incident_id
    assert metrics_log["llm_calls"] == context["llm_calls"] == 2  # every tool, then the diagnosis
    assert metrics_log["total_tokens"] == 0  # the rules model is not an LLM
    assert metrics_log["budget_remaining"] == 100_000
    (summary,) = json_logs(caplog, "agent_reasoning_summary")
    assert summary["fault_types"] == ["permission_loss"]
    assert summary["tools_called"] == context["tools_called"]
    assert summary["steps"] == metrics_log["llm_calls"]
    assert summary["severity"] == diagnosis["severity"]
    assert names.ROLE_NAME in summary["root_cause"]

    metrics = emitted(capsys.readouterr().out)
    assert metrics["IncidentsReceived"] == 1
    assert metrics["IncidentsDiagnosed"] == 1
    assert metrics["LlmCalls"] == metrics_log["llm_calls"]


def test_a_redelivered_message_and_a_refired_alarm_are_the_same_incident(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    pipeline = make_pipeline()
    first = direct_event()
    opened = _only(pipeline.handle(first, None))
    assert opened["action"] == "investigated"

    again = _only(pipeline.handle(first, None))  # SNS delivered the same message twice
    now = datetime.now(UTC)
    pipeline.store.clock = lambda: now + timedelta(minutes=5)  # the supervisor's clock moves with SNS's
    refired = direct_event(at=now + timedelta(minutes=5), error_type="Throttles")
    joined = _only(pipeline.handle(refired, None))

    for duplicate in (again, joined):
        assert duplicate["action"] == "duplicate"
        assert duplicate["incident_id"] == opened["incident_id"]
        assert duplicate["reason"] == "already DIAGNOSED"
    pipeline.store.clock = lambda: now + timedelta(hours=2)
    later = direct_event(at=now + timedelta(hours=2))  # a new failure after the window
    assert _only(pipeline.handle(later, None))["incident_id"] != opened["incident_id"]


def test_fifty_concurrent_deliveries_start_exactly_one_investigation(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    pipeline = make_pipeline()
    event = direct_event()
    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(lambda _: _only(pipeline.handle(event, None)), range(50)))
    actions = sorted(r["action"] for r in results)
    assert actions.count("investigated") == 1, actions
    assert actions.count("duplicate") == 49
    assert len({r["incident_id"] for r in results}) == 1
    state = incidents.get(results[0]["incident_id"])
    assert state is not None
    assert state["investigations"] == 1
    assert state["status"] == "DIAGNOSED"


def _redelivery_of(incident_id: str) -> dict[str, Any]:
    at = datetime.fromisoformat(incident_id.split("@", 1)[1].replace("Z", "+00:00"))
    return direct_event(message_id="m-stuck", at=at)


@pytest.mark.open_incidents
def test_a_fresh_investigation_is_left_alone(make_pipeline: MakePipeline, incidents: IncidentStore) -> None:
    incident_id = stuck_incident(incidents, minutes_ago=2)
    outcome = _only(make_pipeline().handle(_redelivery_of(incident_id), None))
    assert outcome["action"] == "duplicate"
    assert outcome["reason"].startswith("INVESTIGATING since")
    state = incidents.get(incident_id)
    assert state is not None
    assert (state["status"], state["investigations"]) == ("INVESTIGATING", 1)


@pytest.mark.parametrize("status", ["INVESTIGATING", "RECEIVED"])
def test_a_stale_incident_is_reentered_and_finished(
    make_pipeline: MakePipeline, incidents: IncidentStore, status: str, capsys: pytest.CaptureFixture[str]
) -> None:
    incident_id = stuck_incident(incidents, minutes_ago=11, status=status)
    outcome = _only(make_pipeline().handle(_redelivery_of(incident_id), None))
    assert (outcome["action"], outcome["status"]) == ("investigated", "DIAGNOSED")
    state = incidents.get(incident_id)
    assert state is not None
    assert state["investigations"] == (2 if status == "INVESTIGATING" else 1)
    assert emitted(capsys.readouterr().out)["StaleIncidentsReentered"] == 1


def test_the_twenty_first_incident_in_an_hour_trips_the_breaker(
    make_pipeline: MakePipeline, incidents: IncidentStore, capsys: pytest.CaptureFixture[str]
) -> None:
    now = datetime.now(UTC)
    for n in range(19):  # 19 incidents of other functions this hour, already finished
        signal = Signal(f"m{n}", "direct", f"fn-{n}", "Errors", "", now - timedelta(minutes=n))
        item, _ = incidents.claim(signal, window_seconds=0)
        incidents.transition(str(item["incident_id"]), "RECEIVED", "FAILED", reason="seeded")
    old = Signal("m-old", "direct", "fn-old", "Errors", "", now - timedelta(hours=2))
    two_hours_ago = IncidentStore(
        incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: now - timedelta(hours=2)
    )
    item, _ = two_hours_ago.claim(old, window_seconds=0)  # outside the window: not counted
    two_hours_ago.transition(str(item["incident_id"]), "RECEIVED", "FAILED", reason="seeded")

    pipeline = make_pipeline()
    twentieth = _only(pipeline.handle(direct_event(), None))
    assert (twentieth["action"], twentieth["status"]) == ("investigated", "DIAGNOSED")
    capsys.readouterr()

    twenty_first = _only(pipeline.handle(direct_event(names.ORDERS_FUNCTION), None))
    assert twenty_first["action"] == "circuit_open"
    state = incidents.get(twenty_first["incident_id"])
    assert state is not None
    assert (state["status"], state["error_reason"]) == ("FAILED", BREAKER_REASON)
    assert state["investigations"] == 0
    assert incidents.get_context(twenty_first["incident_id"]) is None  # the agent never ran
    assert emitted(capsys.readouterr().out)["CircuitBreakerTripped"] == 1


def test_mcp_server_down_ends_in_error_mcp_connection(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    pipeline = make_pipeline(mcp_server_url=f"http://127.0.0.1:{free_port()}/sse")
    _, state = _handled(pipeline, incidents)
    assert (state["status"], state["error_category"]) == ("ERROR", "mcp_connection")
    assert len(state["error_reason"]) <= 500


def test_bedrock_access_denied_ends_in_error_bedrock_auth_without_retry(
    make_pipeline: MakePipeline, incidents: IncidentStore, bedrock: FakeConverse
) -> None:
    bedrock.script += [
        aws_error(403, "AccessDeniedException", "not authorized to perform bedrock:InvokeModel")
    ]
    pipeline = make_pipeline(supervisor_model="bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    _, state = _handled(pipeline, incidents)
    assert (state["status"], state["error_category"]) == ("ERROR", "bedrock_auth")
    assert "bedrock:InvokeModel" in state["error_reason"]
    assert len(bedrock.requests) == 1


def test_a_missing_mcp_key_parameter_fails_closed_with_error_config(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    pipeline = make_pipeline(mcp_api_key_ssm_parameter="/incident-response/no-such-key")
    _, state = _handled(pipeline, incidents)
    assert (state["status"], state["error_category"]) == ("ERROR", "config")
    assert "/incident-response/no-such-key" in state["error_reason"]


def test_an_agent_that_never_submits_ends_failed(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    looping = ScriptedChatModel([ai(call("get_lambda_config", call_id=f"c{n}")) for n in range(10)])
    pipeline = make_pipeline(model=looping, recursion_limit=4)
    outcome, state = _handled(pipeline, incidents)
    assert (state["status"], state["error_reason"]) == ("FAILED", NO_DIAGNOSIS_REASON)
    context = _context(incidents, outcome["incident_id"])  # the failed run is kept for audit too
    assert "diagnosis" not in context
    assert context["stop_reason"] == "recursion_limit"


def test_a_crash_inside_the_agent_ends_in_error_unknown(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    def explode(_: object) -> Any:
        raise RuntimeError("model backend fell over")

    _, state = _handled(make_pipeline(model=ScriptedChatModel([explode])), incidents)
    assert (state["status"], state["error_category"]) == ("ERROR", "unknown")
    assert "model backend fell over" in state["error_reason"]


def test_a_megabyte_reasoning_chain_is_stored_under_400_kb(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    musing = "the function keeps failing; " * 9_000  # ~250 KB of model text per turn
    script = [ai(call("get_lambda_config", call_id=f"c{n}"), text=musing) for n in range(4)]
    healthy = submission(
        fault_types=["unknown"],
        evidence=[pointer("get_lambda_config", "FunctionName", names.FUNCTION_NAME, supports=None)],
        remediation_plan=[],
    )
    script.append(ai(call("submit_diagnosis", healthy, call_id="done")))
    outcome = _only(make_pipeline(model=ScriptedChatModel(script)).handle(direct_event(), None))
    assert outcome["status"] == "DIAGNOSED"
    item = incidents.get_context(outcome["incident_id"])
    assert item is not None
    assert item_bytes(item) < 400 * 1024
    context = from_item(item)
    assert context["truncated"] is True
    chain = json.loads(context["reasoning_chain"])
    assert chain[0]["type"] == "system"
    assert chain[1]["type"] == "human"  # the incident
    assert [m["type"] for m in chain[2:]].count("ai") == 3  # the last three turns
    assert chain[-2]["tool_calls"][0]["name"] == "submit_diagnosis"
    assert context["omitted_messages"] == 4  # two earlier turns: an ai message and its tool result each


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (load_event("sns_alarm_ok.json"), "went to 'OK'; only ALARM opens an incident"),
        (
            load_event("sns_alarm_not_lambda.json"),  # an alarm on a queue that does not exist
            "alarmed resource: arn:aws:sqs:ca-central-1:123456789012:orders does not exist (Error "
            "executing tool get_source_consumers: AWS error AWS.SimpleQueueService.NonExistentQueue while "
            "reading queue orders (the server's account) in region ca-central-1: ",
        ),
        (load_event("sns_message_not_json.json"), "SNS Message is not JSON"),
        (
            {
                "Records": [
                    {"Sns": {"MessageId": "m1", "Timestamp": "2026-11-21T10:00:00Z", "Message": "[1]"}}
                ]
            },
            "JSON list, not an object",
        ),
        (
            {"Records": [{"Sns": {"MessageId": "m1", "Timestamp": "2026-11-21T10:00:00Z", "Message": "{}"}}]},
            "neither a CloudWatch alarm",
        ),
        (
            {"Records": [{"Sns": {"MessageId": "m1", "Timestamp": "yesterday", "Message": "{}"}}]},
            "SNS Timestamp 'yesterday' is not an ISO 8601 time",
        ),
        ({"Records": [{"Sns": None, "body": "{}"}]}, "record has no Sns object"),
        ({"Records": [{"eventSource": "aws:sqs", "body": "{}"}]}, "not a re-check: kind is None"),
        ({"detail-type": "Scheduled Event"}, "event has no Records"),
    ],
)
def test_malformed_messages_are_rejected_with_nothing_written(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    event: dict[str, Any],
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcome = _only(make_pipeline().handle(event, None))
    assert outcome["action"] == "rejected"
    assert reason in outcome["reason"]
    (logged,) = json_logs(caplog, "rejected_message")
    assert reason in logged["reason"]
    operator = sandbox.session(names.OPERATOR).client("dynamodb")  # the supervisor may not scan
    for table in (incidents.state_table, str(incidents.context_table)):
        assert operator.scan(TableName=table)["Count"] == 0


def test_each_record_of_an_event_gets_its_own_outcome(
    make_pipeline: MakePipeline, incidents: IncidentStore
) -> None:
    first = direct_event()
    event = with_records(first, load_event("sns_message_not_json.json"), first)
    actions = [(o["action"], o["reason"]) for o in outcomes(make_pipeline().handle(event, None))]
    assert actions[0] == ("investigated", None)
    assert actions[1][0] == "rejected"
    assert actions[2] == ("duplicate", "already DIAGNOSED")


def test_a_transition_the_lifecycle_does_not_have_is_refused(incidents: IncidentStore) -> None:
    from supervisor.incident.store import IllegalTransition, TransitionConflict

    signal = Signal("m1", "direct", names.FUNCTION_NAME, "Errors", "", datetime.now(UTC))
    item, _ = incidents.claim(signal, window_seconds=0)
    incident_id = str(item["incident_id"])
    with pytest.raises(IllegalTransition, match="RECEIVED -> DIAGNOSED is not a transition"):
        incidents.transition(incident_id, "RECEIVED", "DIAGNOSED")
    with pytest.raises(TransitionConflict, match="expected to be INVESTIGATING, but it is RECEIVED"):
        incidents.transition(incident_id, "INVESTIGATING", "FAILED")
    incidents.transition(incident_id, "RECEIVED", "ERROR", reason="x" * 900, category="unknown")
    with pytest.raises(IllegalTransition):
        incidents.transition(incident_id, "ERROR", "INVESTIGATING")
    state = incidents.get(incident_id)
    assert state is not None
    assert (state["status"], len(state["error_reason"])) == ("ERROR", 500)


def test_incident_ids_are_deterministic() -> None:
    from supervisor.incident.store import incident_id_for

    at = datetime(2026, 11, 21, 10, 0, 0, 917_000, tzinfo=UTC)
    signal = Signal("m1", "cloudwatch_alarm", "data-processor", "Errors", "", at)
    assert incident_id_for(signal) == "data-processor@2026-11-21T10:00:00.917Z"
    assert stamp(at) < stamp(at + timedelta(milliseconds=1))


def _attribute(envelope: dict[str, Any], name: str) -> str:
    return str(envelope["MessageAttributes"][name]["Value"])


def test_a_diagnosed_incident_is_notified_once_and_a_redelivery_sends_nothing(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline = make_pipeline(diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn)
    event = direct_event()
    outcome = _only(pipeline.handle(event, None))
    assert (outcome["status"], outcome["notification"]) == ("DIAGNOSED", "published")
    incident_id = outcome["incident_id"]

    (envelope,) = notified()
    assert envelope["TopicArn"] == sandbox.world.diagnoses_topic_arn
    assert envelope["Subject"].startswith("[DIAGNOSED] data-processor: ")
    assert len(envelope["Subject"]) < 100
    assert _attribute(envelope, "incident_id") == incident_id
    assert (_attribute(envelope, "status"), _attribute(envelope, "function_name")) == (
        "DIAGNOSED",
        "data-processor",
    )
    chat = json.loads(envelope["Message"])  # the "default" message: the chat integration's JSON
    diagnosis = json.loads(_context(incidents, incident_id)["diagnosis"])
    assert json.loads(_attribute(envelope, "fault_types")) == diagnosis["fault_types"]
    assert (chat["version"], chat["source"]) == ("1.0", "custom")
    assert chat["metadata"]["threadId"] == incident_id
    assert chat["content"]["title"] == envelope["Subject"]
    assert "no console link" in chat["content"]["description"]
    state = incidents.get(incident_id)
    assert state is not None
    assert state["notification_message_id"] == envelope["MessageId"]
    assert "notify_claim" not in state

    again = _only(pipeline.handle(event, None))  # SNS delivered the same message twice
    refired = _only(pipeline.handle(direct_event(at=datetime.now(UTC) + timedelta(minutes=5)), None))
    assert again["notification"] == refired["notification"] == "sent before"
    assert notified() == []
    metrics = emitted(capsys.readouterr().out)
    assert metrics["NotificationsPublished"] == 1
    assert "NotificationPublishFailed" not in metrics


def test_an_errored_incident_is_notified_with_its_reason(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
) -> None:
    pipeline = make_pipeline(
        diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn,
        mcp_server_url=f"http://127.0.0.1:{free_port()}/sse",
    )
    _outcome, state = _handled(pipeline, incidents)
    (envelope,) = notified()
    assert envelope["Subject"] == "[ERROR] data-processor: mcp_connection"
    chat = json.loads(envelope["Message"])
    assert chat["metadata"]["eventType"] == "IncidentErrored"
    assert state["error_reason"][:40] in chat["content"]["description"]


def test_a_denied_publish_leaves_the_incident_diagnosed_and_the_next_delivery_sends_it(
    sandbox: Sandbox,
    make_pipeline: MakePipeline,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
    undo: Callable[[Callable[[], object]], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    lift = deny_publish(sandbox, names.SUPERVISOR, undo)
    pipeline = make_pipeline(diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn)
    event = direct_event()
    with pytest.raises(NotificationsNotSent, match="not authorized to perform: sns:Publish") as raised:
        pipeline.handle(event, None)  # fails, so that Lambda delivers the event again
    (incident_id,) = raised.value.incident_ids
    state = incidents.get(incident_id)
    assert state is not None
    assert state["status"] == "DIAGNOSED"  # the outcome stands
    assert "notified_at" not in state
    assert "notify_claim" not in state
    assert "sns:Publish" in state["notify_error"]
    assert notified() == []
    metrics = emitted(capsys.readouterr().out)
    assert metrics["NotificationPublishFailed"] == 1
    assert metrics["IncidentsDiagnosed"] == 1

    lift()  # the permission is back; Lambda's retry of the same event
    retried = _only(pipeline.handle(event, None))
    assert (retried["action"], retried["status"], retried["notification"]) == (
        "duplicate",
        "DIAGNOSED",
        "published",
    )
    (envelope,) = notified()
    assert _attribute(envelope, "incident_id") == incident_id
    assert _only(pipeline.handle(event, None))["notification"] == "sent before"
    assert notified() == []
    assert emitted(capsys.readouterr().out)["NotificationsPublished"] == 1
