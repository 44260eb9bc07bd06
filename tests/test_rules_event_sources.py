"""The rules brain on event-driven failures, through the real graph and its verification, on canned answers
valid under the tools' contracts (tests/event_worlds.py): a source that stopped delivering while its queue
backs up, with the change that stopped it and the command that resumes delivery; the impact figures, each
checked against the field that counts it; and what is not a fault."""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.evidence import describe_failures, verify
from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.incident.signals import AlarmedResource
from supervisor.schemas import Diagnosis, DiagnosisSubmission
from tests.agent_support import FUNCTION, diagnose_with
from tests.event_worlds import (
    DELETED,
    DISABLED,
    DLQ,
    FUNCTION_ARN,
    PERMISSION_REMOVED,
    QUEUE,
    QUEUE_URL,
    TOPIC,
    UNSUBSCRIBED,
    UUID,
    VISIBILITY_SET,
    event_sources,
    event_world,
    mapping,
    subscription,
)
from tests.runtime_worlds import at, responses

OPERATOR = "arn:aws:iam::123456789012:user/operator"
# What the pipeline tells the agent about the queue or topic whose alarm opened the incident.
ALARMED_QUEUE = AlarmedResource("AWS/SQS", "QueueName", "orders-queue", QUEUE).as_dict()
ALARMED_TOPIC = AlarmedResource("AWS/SNS", "TopicName", "order-events", TOPIC).as_dict()


async def _diagnosis(answers: dict[str, Any], incident: dict[str, Any] | None = None) -> Diagnosis:
    run = await diagnose_with(
        RulesChatModel(), responses(answers), incident=incident, max_tool_calls_per_turn=len(answers)
    )
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed, diagnosis.verification
    return diagnosis


def _impact(diagnosis: Diagnosis) -> list[tuple[str, str, float, str]]:
    return [(f.kind, f.resource, f.value, diagnosis.evidence[f.evidence[0]].field) for f in diagnosis.impact]


async def test_a_disabled_mapping_over_a_backlog_is_an_event_source_stopped_by_its_update() -> None:
    sources = event_sources([mapping("Disabled", depth=42, age=300.0, dlq_depth=3)])
    diagnosis = await _diagnosis(event_world(sources, [(20, DISABLED)]))
    assert diagnosis.fault_types == ["event_source_stopped"]
    assert diagnosis.root_cause == (
        f"The event source mapping {UUID} from {QUEUE} to {FUNCTION} is Disabled, and messages back up in "
        f"the queue: nothing delivers them to the function. It started after {OPERATOR} called "
        f"UpdateEventSourceMapping at {at(20)}."
    )
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == (
        "UpdateEventSourceMapping20150331",
        at(20),
    )
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws lambda update-event-source-mapping --uuid {UUID} --enabled --region ca-central-1"
    ]
    assert QUEUE in diagnosis.affected_resources
    assert _impact(diagnosis) == [
        ("messages_waiting", QUEUE, 42.0, "mappings.0.queue.ApproximateNumberOfMessages"),
        ("oldest_message_age_seconds", QUEUE, 300.0, "mappings.0.queue.oldest_message_age_seconds"),
        (
            "messages_in_dead_letter_queue",
            DLQ,
            3.0,
            "mappings.0.dead_letter_queue.ApproximateNumberOfMessages",
        ),
    ]
    assert diagnosis.confidence == 0.9


async def test_a_disabled_mapping_over_a_backlog_with_no_change_names_the_gap() -> None:
    diagnosis = await _diagnosis(event_world(event_sources([mapping("Disabled", depth=5)])))
    assert diagnosis.fault_types == ["event_source_stopped"]
    assert diagnosis.trigger is None
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws lambda update-event-source-mapping --uuid {UUID} --enabled --region ca-central-1"
    ]


async def test_a_disabled_mapping_over_an_empty_queue_is_no_fault() -> None:
    diagnosis = await _diagnosis(event_world(event_sources([mapping("Disabled")])))
    assert diagnosis.fault_types == ["unknown"]
    assert diagnosis.impact == []


async def test_an_enabled_mapping_over_a_backlog_is_not_a_stopped_source() -> None:
    """Thin evidence: the queue backs up, but nothing says why (the mapping polls, the role allows it)."""
    diagnosis = await _diagnosis(event_world(event_sources([mapping(depth=7)]), [(20, DISABLED)]))
    assert diagnosis.fault_types == ["unknown"]
    assert diagnosis.confidence == 0.2
    assert _impact(diagnosis) == [
        ("messages_waiting", QUEUE, 7.0, "mappings.0.queue.ApproximateNumberOfMessages")
    ]


async def test_a_deleted_mapping_of_the_alarmed_queue_is_created_again() -> None:
    diagnosis = await _diagnosis(
        event_world(event_sources([]), [(20, DELETED)]), {"AlarmName": "q", "alarmed_resource": ALARMED_QUEUE}
    )
    assert diagnosis.fault_types == ["event_source_stopped"]
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "DeleteEventSourceMapping20150331"
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws lambda create-event-source-mapping --event-source-arn {QUEUE} --function-name {FUNCTION} "
        "--region ca-central-1"
    ]


async def test_a_deleted_mapping_of_another_queue_is_no_fault_of_the_alarmed_one() -> None:
    """The dead-letter queue alarmed; the mapping deleted earlier read orders-queue, not it."""
    dlq = f"{QUEUE}-dlq"
    alarmed = AlarmedResource("AWS/SQS", "QueueName", "orders-queue-dlq", dlq).as_dict()
    diagnosis = await _diagnosis(
        event_world(event_sources([]), [(20, DELETED)]), {"AlarmName": "d", "alarmed_resource": alarmed}
    )
    assert diagnosis.fault_types == ["unknown"]


async def test_a_deleted_mapping_is_no_fault_without_an_alarmed_queue() -> None:
    diagnosis = await _diagnosis(event_world(event_sources([]), [(20, DELETED)]))
    assert diagnosis.fault_types == ["unknown"]


async def test_a_removed_subscription_of_the_alarmed_topic_is_subscribed_again() -> None:
    diagnosis = await _diagnosis(
        event_world(event_sources([]), [(20, UNSUBSCRIBED)]),
        {"AlarmName": "t", "alarmed_resource": ALARMED_TOPIC},
    )
    assert diagnosis.fault_types == ["event_source_stopped"]
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "Unsubscribe"
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws sns subscribe --topic-arn {TOPIC} --protocol lambda --notification-endpoint {FUNCTION_ARN} "
        "--region ca-central-1"
    ]


# --------------------------------------------------------------------------- impact figures are verified


async def _submitted() -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The rules brain's submission on a disabled mapping over a backlog, and the answers it rests on."""
    answers = event_world(event_sources([mapping("Disabled", depth=42, age=300.0)]), [(20, DISABLED)])
    diagnosis = await _diagnosis(answers)
    payload = diagnosis.model_dump(exclude={"verification", "refused", "precedents", "recurrence"})
    return payload, {tool: [answer] for tool, answer in answers.items()}


async def test_the_figures_the_rules_brain_states_verify() -> None:
    payload, seen = await _submitted()
    verification = verify(DiagnosisSubmission.model_validate(payload), seen, 0, FUNCTION)
    checks = [(e.entry, e.verified, e.reason) for e in verification.entries if e.entry.startswith("impact")]
    assert checks == [("impact.0", True, ""), ("impact.1", True, "")]


async def test_a_forged_figure_is_refused() -> None:
    payload, seen = await _submitted()
    payload["impact"][0]["value"] = 4200.0  # the field holds 42
    verification = verify(DiagnosisSubmission.model_validate(payload), seen, 0, FUNCTION)
    [check] = [e for e in verification.entries if e.entry == "impact.0"]
    assert (check.verified, check.reason) == (
        False,
        f"evidence {payload['impact'][0]['evidence'][0]} (mappings.0.queue.ApproximateNumberOfMessages) "
        "holds 42, not 4200",
    )
    assert not verification.passed  # refused: the model gets a refinement turn, told exactly why
    submission = DiagnosisSubmission.model_validate(payload)
    assert f"- impact.0: {check.reason}" in describe_failures(submission, verification).splitlines()


async def test_a_figure_of_another_resource_or_field_is_refused() -> None:
    payload, seen = await _submitted()
    wrong_resource = [dict(payload["impact"][0], resource=DLQ)]
    verification = verify(
        DiagnosisSubmission.model_validate(payload | {"impact": wrong_resource}), seen, 0, FUNCTION
    )
    [check] = [e for e in verification.entries if e.entry == "impact.0"]
    assert check.reason == (
        f"evidence {wrong_resource[0]['evidence'][0]} (mappings.0.queue.ApproximateNumberOfMessages) counts "
        f"{QUEUE}, not {DLQ}"
    )
    state = [i for i, p in enumerate(payload["evidence"]) if p["field"] == "mappings.0.State"]
    wrong_field = [dict(payload["impact"][0], evidence=state)]
    verification = verify(
        DiagnosisSubmission.model_validate(payload | {"impact": wrong_field}), seen, 0, FUNCTION
    )
    [check] = [e for e in verification.entries if e.entry == "impact.0"]
    assert check.reason == (
        "a messages_waiting figure must cite the get_event_sources field that counts it: "
        "mappings.<n>.queue.ApproximateNumberOfMessages"
    )


# --------------------------------------------------------------------------- existing classes on event paths


async def test_a_caller_whose_statement_was_removed_is_a_permission_loss_with_the_statement_to_add() -> None:
    sources = event_sources([], subscriptions=[subscription(allowed=False, failed=6)])
    diagnosis = await _diagnosis(event_world(sources, [(20, PERMISSION_REMOVED)]))
    assert diagnosis.fault_types == ["permission_loss"]
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == ("RemovePermission20150331v2", at(20))
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws lambda add-permission --function-name {FUNCTION} --statement-id order-events-invoke "
        f"--action lambda:InvokeFunction --principal sns.amazonaws.com --source-arn {TOPIC} "
        "--region ca-central-1"
    ]
    assert _impact(diagnosis) == [
        ("notifications_failed", TOPIC, 6.0, "subscriptions.0.notifications_failed")
    ]


def _api_stage(allowed: bool, server_errors: float) -> dict[str, Any]:
    return {
        "api_id": "a1b2c3",
        "api_name": "orders-rest-api",
        "stage": "prod",
        "logging_level": "INFO",
        "api_source_arn": "arn:aws:execute-api:ca-central-1:123456789012:a1b2c3/*",
        "routes": [
            {"route": "POST /orders", "qualifier": "live", "timeout_ms": 29000, "invoke_allowed": allowed}
        ],
        "requests": 6.0,
        "client_errors": 0.0,
        "server_errors": server_errors,
    }


API_PERMISSION_REMOVED = (
    "RemovePermission20150331v2",
    "lambda.amazonaws.com",
    {"functionName": FUNCTION, "statementId": "orders-rest-api-invoke", "qualifier": "live"},
)


async def test_an_api_route_the_alias_policy_refuses_is_a_permission_loss_with_the_statement_to_add() -> None:
    sources = event_sources([], apis=[_api_stage(allowed=False, server_errors=4)])
    diagnosis = await _diagnosis(event_world(sources, [(20, API_PERMISSION_REMOVED)]))
    assert diagnosis.fault_types == ["permission_loss"]
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == ("RemovePermission20150331v2", at(20))
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws lambda add-permission --function-name {FUNCTION} --statement-id orders-rest-api-invoke "
        "--action lambda:InvokeFunction --principal apigateway.amazonaws.com "
        "--source-arn 'arn:aws:execute-api:ca-central-1:123456789012:a1b2c3/*' --qualifier live "
        "--region ca-central-1"
    ]
    cited = {diagnosis.evidence[i].field for _, indices in diagnosis.citations() for i in indices}
    assert "apis.0.routes.0.invoke_allowed" in cited


async def test_an_api_whose_route_is_allowed_or_that_answered_no_5xx_is_no_permission_loss() -> None:
    for stage in (_api_stage(allowed=True, server_errors=4), _api_stage(allowed=False, server_errors=0)):
        sources = event_sources([], apis=[stage])
        diagnosis = await _diagnosis(event_world(sources, [(20, API_PERMISSION_REMOVED)]))
        assert "permission_loss" not in diagnosis.fault_types, stage


async def test_a_caller_still_allowed_is_no_permission_loss() -> None:
    sources = event_sources([], subscriptions=[subscription(allowed=True, failed=6)])
    diagnosis = await _diagnosis(event_world(sources, [(20, PERMISSION_REMOVED)]))
    assert diagnosis.fault_types == ["unknown"]  # not permission_loss


READER = "arn:aws:iam::210987654321:user/report-reader"
URL_WRITTEN = (
    "AddPermission20150331v2",
    "lambda.amazonaws.com",
    {
        "functionName": FUNCTION,
        "statementId": "reader-url",
        "action": "lambda:InvokeFunctionUrl",
        "principal": READER,
        "functionUrlAuthType": "AWS_IAM",
    },
)
URL_REMOVED = (
    "RemovePermission20150331v2",
    "lambda.amazonaws.com",
    {"functionName": FUNCTION, "statementId": "reader-url"},
)


def _signed_url(granted: list[str], refused: float = 4) -> dict[str, Any]:
    return {
        "FunctionUrl": "https://abc.lambda-url.ca-central-1.on.aws/",
        "AuthType": "AWS_IAM",
        "invoke_allowed": None,
        "granted_callers": granted,
        "requests": 6.0,
        "client_errors": refused,
        "server_errors": 0.0,
    }


async def test_a_signed_caller_whose_url_statement_was_removed_gets_it_written_again_as_it_was() -> None:
    sources = event_sources([], function_url=_signed_url([]))
    diagnosis = await _diagnosis(event_world(sources, [(1, URL_WRITTEN), (20, URL_REMOVED)]))
    assert diagnosis.fault_types == ["permission_loss"]
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == ("RemovePermission20150331v2", at(20))
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws lambda add-permission --function-name {FUNCTION} --statement-id reader-url "
        f"--action lambda:InvokeFunctionUrl --principal {READER} --function-url-auth-type AWS_IAM "
        "--region ca-central-1"
    ]


async def test_a_signed_caller_is_not_called_refused_without_who_the_statement_let_in_or_while_let_in() -> (
    None
):
    for url, changes in (
        (_signed_url([]), [(20, URL_REMOVED)]),  # the AddPermission is older than the history
        (_signed_url([READER]), [(1, URL_WRITTEN), (20, URL_REMOVED)]),  # another statement lets it in
        (_signed_url([], refused=0), [(1, URL_WRITTEN), (20, URL_REMOVED)]),  # nobody was refused
    ):
        diagnosis = await _diagnosis(event_world(event_sources([], function_url=url), changes))
        assert "permission_loss" not in diagnosis.fault_types, (url, changes)


async def test_a_visibility_timeout_below_the_function_timeout_is_a_configuration_error() -> None:
    diagnosis = await _diagnosis(event_world(event_sources([mapping(visibility=2)]), [(20, VISIBILITY_SET)]))
    assert diagnosis.fault_types == ["configuration_error"]
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "SetQueueAttributes"
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws sqs set-queue-attributes --queue-url {QUEUE_URL} --attributes "
        '\'{"VisibilityTimeout":"18"}\' --region ca-central-1'
    ]
