"""The rules brain on asynchronous invocation paths, through the real graph and its verification, on canned
answers valid under the tools' contracts (tests/event_worlds.py): a poison event the code failed on,
discarded by Lambda and sent to the dead-letter queue, while other events succeed (bad_input), and what is
not one.

What AWS counts (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#async-invocation-metrics):
``AsyncEventsDropped`` "the number of events that are dropped without successfully executing the function. If
you configure a dead-letter queue (DLQ) or OnFailure destination, then events are sent there before they're
dropped"; ``DeadLetterErrors`` the events Lambda could not send to the dead-letter queue.
"""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.schemas import Diagnosis
from tests.agent_support import FUNCTION, diagnose_with
from tests.event_worlds import ASYNC_DLQ, FUNCTION_ARN, event_sources, event_world, queue
from tests.runtime_worlds import (
    ACCOUNT,
    DEPLOYMENT,
    LOG_GROUP,
    RECORDS,
    REGION,
    ROLE,
    Change,
    Run,
    at,
    responses,
)

POISON = "node_text_undefined_read"  # TypeError: the code cannot read what the event carries


def async_config(
    *, dropped: float = 0, dead_letter_errors: float = 0, dlq_depth: int | None = 0, retries: int = 0
) -> dict[str, Any]:
    """order-notifier's asynchronous configuration: ``retries``, one hour's maximum age, a dead-letter queue
    (none when ``dlq_depth`` is None) holding ``dlq_depth`` messages, and the window's metrics."""
    destinations = (
        []
        if dlq_depth is None
        else [
            {
                "kind": "dead_letter_queue",
                "Destination": ASYNC_DLQ,
                "queue": queue(ASYNC_DLQ, depth=dlq_depth),
            }
        ]
    )
    return {
        "configured": True,
        "MaximumRetryAttempts": retries,
        "MaximumEventAgeInSeconds": 3600,
        "destinations": destinations,
        "metrics": {
            "AsyncEventsReceived": 3,
            "AsyncEventsDropped": dropped,
            "DeadLetterErrors": dead_letter_errors,
            "DestinationDeliveryFailures": 0,
        },
    }


async def _diagnosis(answers: dict[str, Any]) -> Diagnosis:
    run = await diagnose_with(RulesChatModel(), responses(answers), max_tool_calls_per_turn=len(answers))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed, diagnosis.verification
    return diagnosis


def _impact(diagnosis: Diagnosis) -> list[tuple[str, str, float]]:
    return [(f.kind, f.resource, f.value) for f in diagnosis.impact]


SUCCESSES_THEN_POISON = (Run(5), Run(10), Run(15, POISON))


async def test_a_discarded_event_the_code_failed_on_beside_successes_is_bad_input() -> None:
    sources = event_sources(async_config=async_config(dropped=1, dlq_depth=1))
    diagnosis = await _diagnosis(event_world(sources, runs=SUCCESSES_THEN_POISON))
    request = RECORDS[POISON]["request_id"]
    assert diagnosis.fault_types == ["bad_input"]
    assert diagnosis.trigger is None
    assert diagnosis.root_cause == (
        f"{FUNCTION} fails on 1 asynchronous event(s) it cannot read while other events of the same version "
        f'succeed: event {request} failed on each of its 1 attempt(s) with "TypeError: Cannot read '
        "properties of undefined (reading 'split')\" and was discarded; Lambda sent the discarded event(s) "
        f"to {ASYNC_DLQ}. The event, not the function, its configuration or its permissions, is the cause."
    )
    assert [s.command for s in diagnosis.remediation_plan] == [None]
    assert [(g.source, g.reason) for g in diagnosis.gaps] == [
        (
            "remediation",
            f"No command can fix this: {FUNCTION} fails on what was published to it (TypeError in event "
            f"{request}); Lambda sent the discarded event(s) to {ASYNC_DLQ}. The event must be inspected and "
            "fixed, and published again, by whoever owns it.",
        )
    ]
    assert diagnosis.affected_resources == [FUNCTION, ASYNC_DLQ]
    assert _impact(diagnosis) == [
        ("messages_in_dead_letter_queue", ASYNC_DLQ, 1.0),
        ("events_dropped", FUNCTION_ARN, 1.0),
    ]


async def test_a_failed_event_not_yet_discarded_is_not_bad_input() -> None:
    """Lambda has not given up on it (a retry is scheduled): the code's failure, as far as anything shows."""
    sources = event_sources(async_config=async_config(dropped=0, dlq_depth=0, retries=2))
    diagnosis = await _diagnosis(event_world(sources, runs=SUCCESSES_THEN_POISON))
    assert diagnosis.fault_types == ["code_error"]


async def test_events_that_all_fail_are_not_bad_input() -> None:
    sources = event_sources(async_config=async_config(dropped=2, dlq_depth=2))
    diagnosis = await _diagnosis(event_world(sources, runs=(Run(5, POISON), Run(10, POISON))))
    assert diagnosis.fault_types == ["code_error"]


async def test_successes_only_before_a_deployment_are_not_bad_input() -> None:
    """The code deployed since then has run only the failed event: a deployment's failure, not an event's."""
    sources = event_sources(async_config=async_config(dropped=1, dlq_depth=1))
    answers = event_world(sources, [(12, DEPLOYMENT)], runs=SUCCESSES_THEN_POISON)
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["code_error"]
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "UpdateFunctionCode20150331v2"


DENY_POLICY = "chaos-deny"
DENY_PUT: Change = (
    "PutRolePolicy",
    "iam.amazonaws.com",
    {"roleName": ROLE, "policyName": DENY_POLICY},
)


def _role(*, deny: bool, grant: bool = True) -> dict[str, Any]:
    """The execution role: may send to the dead-letter queue (``grant``), with or without an inline policy
    that denies sqs:SendMessage everywhere."""
    group = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{LOG_GROUP}"
    logs = {
        "Effect": "Allow",
        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": [f"{group}:*", f"{group}:log-stream:*"],
    }
    policies: dict[str, Any] = {"logs": {"Version": "2012-10-17", "Statement": [logs]}}
    if grant:
        allow = {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": ASYNC_DLQ}
        policies["send-failed-events"] = {"Version": "2012-10-17", "Statement": [allow]}
    if deny:
        refuse = {"Sid": "ChaosDeny", "Effect": "Deny", "Action": "sqs:SendMessage", "Resource": "*"}
        policies[DENY_POLICY] = {"Version": "2012-10-17", "Statement": [refuse]}
    return {"role_name": ROLE, "inline_policies": policies, "attached_policies": []}


async def test_a_dead_letter_queue_the_role_may_not_send_to_is_a_permission_loss_beside_the_poison() -> None:
    """The denial and the poison event are two faults: the Deny the change put, and the event itself."""
    sources = event_sources(async_config=async_config(dropped=1, dead_letter_errors=1, dlq_depth=0))
    answers = event_world(sources, [(3, DENY_PUT)], runs=SUCCESSES_THEN_POISON, iam=_role(deny=True))
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["permission_loss", "bad_input"]
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == ("PutRolePolicy", at(3))
    assert diagnosis.root_cause.startswith(
        f"The execution role {ROLE} does not allow sqs:SendMessage on {FUNCTION}'s dead-letter queue "
        f"{ASYNC_DLQ} (sqs:SendMessage on {ASYNC_DLQ} is explicitly denied by "
        f"inline_policies.{DENY_POLICY}.Statement.0): 1 failed event(s) could not be sent to {ASYNC_DLQ}, "
        "and Lambda dropped them."
    )
    assert (
        f"Lambda could not send them to {ASYNC_DLQ} (DeadLetterErrors): they are lost" in diagnosis.root_cause
    )
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws iam delete-role-policy --role-name {ROLE} --policy-name {DENY_POLICY} --region ca-central-1",
        None,
    ]
    assert diagnosis.affected_resources == [FUNCTION, ROLE, ASYNC_DLQ]
    assert _impact(diagnosis) == [
        ("events_dropped", FUNCTION_ARN, 1.0),
        ("deliveries_failed", FUNCTION_ARN, 1.0),
    ]


async def test_a_role_without_the_grant_gets_it_back() -> None:
    sources = event_sources(async_config=async_config(dropped=1, dead_letter_errors=1, dlq_depth=0))
    answers = event_world(sources, runs=SUCCESSES_THEN_POISON, iam=_role(deny=False, grant=False))
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["permission_loss", "bad_input"]
    statement = f'{{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"{ASYNC_DLQ}"}}'
    document = f'{{"Version":"2012-10-17","Statement":[{statement}]}}'
    assert diagnosis.remediation_plan[0].command == (
        f"aws iam put-role-policy --role-name {ROLE} --policy-name dead-letter-queue --policy-document "
        f"'{document}' --region ca-central-1"
    )


async def test_dead_letter_errors_while_the_role_may_send_are_no_permission_loss() -> None:
    sources = event_sources(async_config=async_config(dropped=1, dead_letter_errors=1, dlq_depth=0))
    answers = event_world(sources, runs=SUCCESSES_THEN_POISON, iam=_role(deny=False))
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["bad_input"]


DLQ_REMOVED: Change = (
    "UpdateFunctionConfiguration20150331v2",
    "lambda.amazonaws.com",
    {"changed_fields": ["deadLetterConfig"], "deadLetterConfig": {"targetArn": ""}},
)
CREATED: Change = (
    "CreateFunction20150331",
    "lambda.amazonaws.com",
    {"functionName": FUNCTION, "deadLetterConfig": {"targetArn": ASYNC_DLQ}},
)


async def test_a_removed_dead_letter_queue_is_a_configuration_error_set_back_from_the_history() -> None:
    sources = event_sources(async_config=async_config(dropped=1, dlq_depth=None))
    answers = event_world(sources, [(1, CREATED), (3, DLQ_REMOVED)], runs=SUCCESSES_THEN_POISON)
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["configuration_error", "bad_input"]
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == (
        "UpdateFunctionConfiguration20150331v2",
        at(3),
    )
    assert diagnosis.root_cause.startswith(
        f"{FUNCTION} has no dead-letter queue or on-failure destination: Lambda dropped 1 asynchronous "
        "event(s) that failed, and nothing kept them."
    )
    assert (
        "no dead-letter queue or on-failure destination keeps the discarded event(s)" in diagnosis.root_cause
    )
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws lambda update-function-configuration --function-name {FUNCTION} --dead-letter-config "
        f'\'{{"TargetArn":"{ASYNC_DLQ}"}}\' --region ca-central-1',
        None,
    ]
    assert _impact(diagnosis) == [("events_dropped", FUNCTION_ARN, 1.0)]


async def test_a_removed_dead_letter_queue_the_history_does_not_name_gets_no_command() -> None:
    sources = event_sources(async_config=async_config(dropped=1, dlq_depth=None))
    answers = event_world(sources, [(3, DLQ_REMOVED)], runs=SUCCESSES_THEN_POISON)
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["configuration_error", "bad_input"]
    assert [s.command for s in diagnosis.remediation_plan] == [None, None]


async def test_no_dead_letter_queue_and_no_change_is_no_configuration_error() -> None:
    sources = event_sources(async_config=async_config(dropped=1, dlq_depth=None))
    diagnosis = await _diagnosis(event_world(sources, runs=SUCCESSES_THEN_POISON))
    assert diagnosis.fault_types == ["bad_input"]
