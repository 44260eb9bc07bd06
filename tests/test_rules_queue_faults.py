"""The rules brain on an SQS-fed function's queue faults (supervisor/diagnosis/rules/queue_faults.py),
through the real graph and its verification, on canned answers valid under the tools' contracts
(tests/event_worlds.py).

A poison record: the source queue's redrive policy moves a message to its dead-letter queue after
``maxReceiveCount`` receives (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/
sqs-dead-letter-queues.html), while with ``ReportBatchItemFailures`` Lambda deletes the batch's other
messages (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
"""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.schemas import Diagnosis
from tests.agent_support import FUNCTION, diagnose_with
from tests.event_worlds import DLQ, QUEUE, event_sources, event_world, mapping, with_lines
from tests.runtime_worlds import ACCOUNT, OPERATOR, REGION, ROLE, Change, Run, at, responses

MESSAGE = "189a9f10-01b1-4dc0-b329-a92cb059df2a"
OTHER = "2f1e7c4a-9b3d-4e8f-a1c2-3d4e5f6a7b8c"
WARNING = (
    f"[WARNING]\t2026-11-25T10:00:05.000Z\t{{request}}\tmessage {MESSAGE} is not an order: its body is not "
    "JSON"
)
RUNS = (Run(5), Run(10))


def _warnings(answers: dict[str, Any], *invocations: int, text: str = WARNING) -> dict[str, Any]:
    logs = answers["get_recent_logs"]["invocations"]
    return with_lines(answers, [(n, text.format(request=logs[n]["request_id"])) for n in invocations])


async def _diagnosis(answers: dict[str, Any]) -> Diagnosis:
    run = await diagnose_with(RulesChatModel(), responses(answers), max_tool_calls_per_turn=len(answers))
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed, diagnosis.verification
    return diagnosis


def _poisoned(**kwargs: Any) -> dict[str, Any]:
    """Three messages sent, the poison one received twice (four receives), two deleted, one in the DLQ."""
    settings: dict[str, Any] = {"dlq_depth": 1, "counts": (3.0, 4.0, 2.0)} | kwargs
    return event_world(event_sources([mapping(**settings)]), runs=RUNS)


async def test_a_message_failing_on_every_receive_while_others_are_deleted_is_a_poison_record() -> None:
    diagnosis = await _diagnosis(_warnings(_poisoned(), 0, 1))
    assert diagnosis.fault_types == ["bad_input"]
    assert diagnosis.trigger is None
    assert diagnosis.root_cause == (
        f"A poison record: message {MESSAGE} of {QUEUE} failed in {FUNCTION} each time it was received (2 "
        "invocations read) while the other messages were processed and deleted; after being received 2 "
        f"times it was moved to the dead-letter queue {DLQ}, which holds 1 message(s). The message's "
        "content, not the function, its configuration or its permissions, is the cause."
    )
    assert [s.command for s in diagnosis.remediation_plan] == [None]
    assert [g.reason for g in diagnosis.gaps if g.source == "remediation"] == [
        f"No command can fix a record's content: inspect the message {MESSAGE} held in orders-dlq and the "
        "producer that sent it to orders-queue; a redrive (start-message-move-task) before that only sends "
        "it back to fail again."
    ]
    assert diagnosis.affected_resources == [FUNCTION, QUEUE, DLQ]
    supports = {(p.field, p.supports) for p in diagnosis.evidence if p.supports == "bad_input"}
    assert supports == {
        ("mappings.0.dead_letter_queue.ApproximateNumberOfMessages", "bad_input"),
        ("mappings.0.queue.messages_deleted", "bad_input"),
    }
    assert [(f.kind, f.resource, f.value) for f in diagnosis.impact] == [
        ("messages_in_dead_letter_queue", DLQ, 1.0)
    ]


async def test_a_message_named_in_one_invocation_only_is_no_poison_record() -> None:
    diagnosis = await _diagnosis(_warnings(_poisoned(), 0))
    assert diagnosis.fault_types == ["unknown"]  # no poison record (bad_input), and nothing else


async def test_messages_named_at_info_level_are_not_failures() -> None:
    info = WARNING.replace("[WARNING]", "[INFO]")
    diagnosis = await _diagnosis(_warnings(_poisoned(), 0, 1, text=info))
    assert diagnosis.fault_types == ["unknown"]  # no poison record (bad_input), and nothing else


async def test_the_invocation_s_own_request_id_is_no_message_id() -> None:
    own = "[ERROR]\t2026-11-25T10:00:05.000Z\t{request}\tcould not store the order"
    diagnosis = await _diagnosis(_warnings(_poisoned(), 0, 1, text=own))
    assert diagnosis.fault_types == ["unknown"]  # no poison record (bad_input), and nothing else


async def test_no_message_deleted_is_no_poison_record() -> None:
    diagnosis = await _diagnosis(_warnings(_poisoned(counts=(3.0, 6.0, 0.0)), 0, 1))
    assert diagnosis.fault_types == ["unknown"]  # no poison record (bad_input), and nothing else


async def test_an_empty_dead_letter_queue_is_no_poison_record() -> None:
    diagnosis = await _diagnosis(_warnings(_poisoned(dlq_depth=0), 0, 1))
    assert diagnosis.fault_types == ["unknown"]  # no poison record (bad_input), and nothing else


async def test_messages_received_again_while_still_processed_are_a_configuration_error() -> None:
    diagnosis = await _diagnosis(_warnings(_poisoned(visibility=2), 0, 1))
    assert diagnosis.fault_types == ["configuration_error"]


async def test_the_message_named_in_the_most_invocations_is_the_poison_record() -> None:
    other = WARNING.replace(MESSAGE, OTHER)
    answers = _warnings(_warnings(_poisoned(), 1, text=other), 0, 1)
    diagnosis = await _diagnosis(answers)
    assert diagnosis.fault_types == ["bad_input"]
    assert f"message {MESSAGE} of" in diagnosis.root_cause


# --- a role that may not poll ----------------------------------------------------------------------------
DENY = {
    "Version": "2012-10-17",
    "Statement": [{"Sid": "ChaosDeny", "Effect": "Deny", "Action": "sqs:ReceiveMessage", "Resource": "*"}],
}
LAST = "PROBLEM: Lambda does not have the required permissions to access the event source."
DENY_PUT: Change = (
    "PutRolePolicy",
    "iam.amazonaws.com",
    {"roleName": ROLE, "policyName": "deny-receive", "policyDocument": DENY},
)


def _role(*extra: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """The function's role: the poller's three actions on the queue and its log writes, plus ``extra``."""
    group = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/{FUNCTION}"
    consume = {
        "Effect": "Allow",
        "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
        "Resource": QUEUE,
    }
    logs = {
        "Effect": "Allow",
        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": f"{group}:*",
    }
    access = {"Version": "2012-10-17", "Statement": [consume, logs]}
    return {"role_name": ROLE, "inline_policies": {"access": access, **dict(extra)}, "attached_policies": []}


def _waiting(
    iam: dict[str, Any],
    *changes: tuple[int, Change],
    state: str = "Enabled",
    last: str = LAST,
    runs: tuple[Run, ...] = RUNS,
) -> dict[str, Any]:
    sources = event_sources([mapping(state, depth=3, age=30.0, last=last, counts=(3.0, 0.0, 0.0))])
    return event_world(sources, list(changes), runs=runs, iam=iam)


async def test_a_role_denied_receive_message_over_a_backlog_is_a_permission_loss_undone() -> None:
    diagnosis = await _diagnosis(_waiting(_role(("deny-receive", DENY)), (20, DENY_PUT)))
    assert diagnosis.fault_types == ["permission_loss"]
    assert diagnosis.root_cause == (
        f"The execution role {ROLE} of {FUNCTION} no longer allows sqs:ReceiveMessage on {QUEUE}: Lambda "
        "polls the queue with the function's role, so the mapping cannot finish its messages. It "
        f"started after {OPERATOR} called PutRolePolicy at {at(20)}."
    )
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name, diagnosis.trigger.time) == ("PutRolePolicy", at(20))
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws iam delete-role-policy --role-name {ROLE} --policy-name deny-receive --region ca-central-1"
    ]
    assert QUEUE in diagnosis.affected_resources
    supports = [(p.tool, p.field, p.value) for p in diagnosis.evidence if p.supports == "permission_loss"]
    assert supports == [
        ("get_iam_state", "inline_policies.deny-receive.Statement.0.Action", "sqs:ReceiveMessage"),
        ("get_event_sources", "mappings.0.LastProcessingResult", LAST),
        ("get_recent_changes", "events.0.event_name", "PutRolePolicy"),
    ]
    assert [(f.kind, f.resource, f.value) for f in diagnosis.impact] == [
        ("messages_waiting", QUEUE, 3.0),
        ("oldest_message_age_seconds", QUEUE, 30.0),
    ]


async def test_a_deny_put_again_after_its_deletion_is_deleted_not_put_back() -> None:
    """The policy's latest change before the Deny is its deletion: it had no document to put back (the
    older Put wrote a Deny too)."""
    older = ("PutRolePolicy", "iam.amazonaws.com", {**DENY_PUT[2]})
    deleted = ("DeleteRolePolicy", "iam.amazonaws.com", {"roleName": ROLE, "policyName": "deny-receive"})
    answers = _waiting(_role(("deny-receive", DENY)), (10, older), (15, deleted), (20, DENY_PUT))
    diagnosis = await _diagnosis(answers)
    assert [s.command for s in diagnosis.remediation_plan] == [
        f"aws iam delete-role-policy --role-name {ROLE} --policy-name deny-receive --region ca-central-1"
    ]


async def test_a_role_change_before_the_last_success_is_no_candidate_when_the_poller_cannot_receive() -> None:
    """No invocation fails, yet none can succeed once Lambda may not receive: the last success bounds the
    window. A Deny on sqs:DeleteMessage lets invocations go on succeeding: no bound, both are candidates."""
    older = ("PutRolePolicy", "iam.amazonaws.com", {"roleName": ROLE, "policyName": "access"})
    runs = (Run(30), Run(40))
    receive = await _diagnosis(
        _waiting(_role(("deny-receive", DENY)), (10, older), (50, DENY_PUT), runs=runs)
    )
    assert receive.trigger is not None
    assert receive.trigger.time == at(50)
    assert [e.time for e in receive.timeline if e.kind == "change"] == [at(50)]
    assert "Also changed" not in receive.root_cause

    delete = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Deny", "Action": "sqs:DeleteMessage", "Resource": "*"}],
    }
    put = (DENY_PUT[0], DENY_PUT[1], {**DENY_PUT[2], "policyDocument": delete})
    deleting = await _diagnosis(_waiting(_role(("deny-receive", delete)), (10, older), (50, put), runs=runs))
    assert deleting.trigger is not None
    assert deleting.trigger.time == at(50)
    assert [e.time for e in deleting.timeline if e.kind == "change"] == [at(10), at(50)]


async def test_a_role_that_allows_the_poller_is_no_permission_loss_on_the_queue() -> None:
    diagnosis = await _diagnosis(_waiting(_role()))
    assert diagnosis.fault_types == ["unknown"]  # not permission_loss


async def test_a_denied_role_over_a_disabled_mapping_is_the_stopped_source_only() -> None:
    diagnosis = await _diagnosis(_waiting(_role(("deny-receive", DENY)), state="Disabled"))
    assert diagnosis.fault_types == ["event_source_stopped"]  # not permission_loss


async def test_no_allow_left_is_a_permission_loss_only_when_lambda_reports_the_polling_failed() -> None:
    """The queue's own policy may grant what the role's policies do not: Lambda's report settles it."""
    role = _role()
    consume = role["inline_policies"]["access"]["Statement"]
    role["inline_policies"]["access"]["Statement"] = consume[1:]  # the poller's Allow taken out
    reported = await _diagnosis(_waiting(role))
    assert reported.fault_types == ["permission_loss"]
    assert "no longer allows sqs:ReceiveMessage, sqs:DeleteMessage, sqs:GetQueueAttributes on" in (
        reported.root_cause
    )
    unreported = await _diagnosis(_waiting(role, last="OK"))
    assert unreported.fault_types == ["unknown"]  # not permission_loss
