"""The event-path injectors on the sandbox: each changes exactly the state it names through a call CloudTrail
records, restore puts the world back exactly (world snapshot), a function without the path is refused, and
the ``incident-chaos`` commands map onto them.

The paths are set up on report-builder (as the operator) by the fixture and removed after: a queue with
a mapping (no message is ever sent, so nothing is delivered), a topic with a lambda subscription and the
resource-policy statement that lets the topic invoke the function.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from chaos import cli as chaos_cli
from chaos.drill.checks import cloudtrail_name_of
from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.event_sources import ESM_DELETE, ESM_DISABLE, QUEUE_VISIBILITY
from chaos.faults.invoke_paths import ASYNC_DLQ_REMOVE, ASYNC_RETRIES, PERMISSION_REMOVE, SNS_UNSUBSCRIBE
from chaos.faults.streams import POISON, STREAM_POISON
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from tests.chaos_support import Recorder
from tests.conftest import Undo
from tests.event_path_reads import function_event_paths
from tests.queue_grants import grant_consumer
from tests.stream_stage import FIRST_SHARD, POLLER_READS
from tests.stream_stage import Stage as StreamStage

FN = names.REPORT_FUNCTION  # its function URL's two statements stay; the paths fixture adds the rest
BARE = names.FUNCTION_NAME  # no mapping, subscription, resource policy or dead-letter queue
QUEUE, TOPIC, STATEMENT = "chaos-test-source", "chaos-test-topic", "chaos-test-topic-invoke"
_LEDGER = ("PutParameter", "DeleteParameter")  # the injectors' saved state, in SSM


@dataclass(frozen=True)
class Paths:
    queue_url: str
    queue_arn: str
    topic_arn: str
    function_arn: str


@pytest.fixture
def paths(operator: boto3.Session) -> Iterator[Paths]:
    lambda_, sqs, sns = operator.client("lambda"), operator.client("sqs"), operator.client("sns")
    function_arn = lambda_.get_function_configuration(FunctionName=FN)["FunctionArn"]
    url = sqs.create_queue(QueueName=QUEUE, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic = sns.create_topic(Name=TOPIC)["TopicArn"]
    revoke = grant_consumer(operator, FN)
    try:
        lambda_.create_event_source_mapping(
            EventSourceArn=arn,
            FunctionName=FN,
            BatchSize=5,
            MaximumBatchingWindowInSeconds=0,
            FunctionResponseTypes=["ReportBatchItemFailures"],
        )
        sns.subscribe(TopicArn=topic, Protocol="lambda", Endpoint=function_arn)
        lambda_.add_permission(
            FunctionName=FN,
            StatementId=STATEMENT,
            Action="lambda:InvokeFunction",
            Principal="sns.amazonaws.com",
            SourceArn=topic,
        )
        yield Paths(url, arn, topic, function_arn)
    finally:
        for mapping in lambda_.list_event_source_mappings(FunctionName=FN)["EventSourceMappings"]:
            lambda_.delete_event_source_mapping(UUID=mapping["UUID"])
        for subscription in sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]:
            sns.unsubscribe(SubscriptionArn=subscription["SubscriptionArn"])
        sns.delete_topic(TopicArn=topic)
        sqs.delete_queue(QueueUrl=url)
        with contextlib.suppress(lambda_.exceptions.ResourceNotFoundException):
            lambda_.remove_permission(FunctionName=FN, StatementId=STATEMENT)
        with contextlib.suppress(lambda_.exceptions.ResourceNotFoundException):
            lambda_.delete_function_event_invoke_config(FunctionName=FN)
        revoke()


def _mapping(paths: Paths, state: str) -> dict[str, Any]:
    return {
        "EventSourceArn": paths.queue_arn,
        "FunctionArn": paths.function_arn,
        "BatchSize": 5,
        "MaximumBatchingWindowInSeconds": 0,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "FilterCriteria": None,
        "ScalingConfig": None,
        "State": state,
    }


def _statement(paths: Paths) -> dict[str, Any]:
    return {
        "Action": "lambda:InvokeFunction",
        "Condition": {"ArnLike": {"AWS:SourceArn": paths.topic_arn}},
        "Effect": "Allow",
        "Principal": {"Service": "sns.amazonaws.com"},
        "Resource": paths.function_arn,
        "Sid": STATEMENT,
    }


def _lambda_subscribers(operator: boto3.Session, paths: Paths) -> list[str]:
    subscriptions = operator.client("sns").list_subscriptions_by_topic(TopicArn=paths.topic_arn)
    return [s["Endpoint"] for s in subscriptions["Subscriptions"] if s["Protocol"] == "lambda"]


def _visibility(operator: boto3.Session, paths: Paths) -> str:
    attributes = operator.client("sqs").get_queue_attributes(
        QueueUrl=paths.queue_url, AttributeNames=["VisibilityTimeout"]
    )
    return str(attributes["Attributes"]["VisibilityTimeout"])


def _recorded(operator: boto3.Session, since: datetime) -> list[str]:
    """The event names CloudTrail recorded for the operator since ``since``, oldest first, without the
    ledger's SSM calls."""
    pages = (
        operator.client("cloudtrail")
        .get_paginator("lookup_events")
        .paginate(
            LookupAttributes=[{"AttributeKey": "Username", "AttributeValue": names.OPERATOR}], StartTime=since
        )
    )  # every page: the operator's reads are recorded too
    events = [event for page in pages for event in page["Events"]]
    return [
        e["EventName"] for e in reversed(events) if e["EventName"] not in _LEDGER and e["ReadOnly"] == "false"
    ]


@dataclass(frozen=True)
class Case:
    fault: Fault
    params: dict[str, Any]
    injected: tuple[str, ...]  # the changing calls of inject, after the ledger's PutParameter
    restored: tuple[str, ...]  # of restore, before the ledger's DeleteParameter


CASES = {
    "esm-disable": Case(ESM_DISABLE, {}, ("UpdateEventSourceMapping",), ("UpdateEventSourceMapping",)),
    "esm-delete": Case(ESM_DELETE, {}, ("DeleteEventSourceMapping",), ("CreateEventSourceMapping",)),
    "queue-visibility": Case(
        QUEUE_VISIBILITY, {"seconds": 1}, ("SetQueueAttributes",), ("SetQueueAttributes",)
    ),
    "permission-remove": Case(PERMISSION_REMOVE, {}, ("RemovePermission",), ("AddPermission",)),
    "sns-unsubscribe": Case(SNS_UNSUBSCRIBE, {}, ("Unsubscribe",), ("Subscribe",)),
    "async-retries": Case(
        ASYNC_RETRIES,
        {"attempts": 0, "max_age": 60},
        ("PutFunctionEventInvokeConfig",),
        ("DeleteFunctionEventInvokeConfig",),
    ),
}


def _changed(case: str, operator: boto3.Session, paths: Paths, before: dict[str, Any]) -> None:
    """The one thing the fault changes, exactly; the rest of the function's paths as they were."""
    now = function_event_paths(operator.client("lambda"), FN)
    expected = dict(before)
    if case == "esm-disable":
        expected["event_source_mappings"] = [_mapping(paths, "Disabled")]
    elif case == "esm-delete":
        expected["event_source_mappings"] = []
    elif case == "permission-remove":  # the topic's statement, the only one for a service
        expected["policy_statements"] = [s for s in before["policy_statements"] if s["Sid"] != STATEMENT]
    elif case == "async-retries":
        expected["event_invoke_config"] = {
            "MaximumRetryAttempts": 0,
            "MaximumEventAgeInSeconds": 60,
            "DestinationConfig": None,
        }
    assert now == expected
    assert _visibility(operator, paths) == ("1" if case == "queue-visibility" else "30")
    unsubscribed = case == "sns-unsubscribe"
    assert _lambda_subscribers(operator, paths) == ([] if unsubscribed else [paths.function_arn])


@pytest.mark.parametrize("case", list(CASES))
def test_inject_changes_exactly_its_state_and_restore_is_exact(
    sandbox: Sandbox, operator: boto3.Session, paths: Paths, case: str
) -> None:
    c = CASES[case]
    before = world_snapshot(operator)
    before_paths = function_event_paths(operator.client("lambda"), FN)
    assert before_paths["event_source_mappings"] == [_mapping(paths, "Enabled")]
    assert [s for s in before_paths["policy_statements"] if s["Sid"] == STATEMENT] == [_statement(paths)]
    chaos = Chaos(operator, say=lambda _: None)
    since = datetime.now(UTC)
    try:
        saved = chaos.inject(c.fault, FN, **c.params)
        assert [call.operation for call in chaos.calls] == ["PutParameter", *c.injected]
        assert chaos.ledger.load(FN, c.fault.name) == saved
        _changed(case, operator, paths, before_paths)
    finally:
        assert chaos.restore(c.fault, FN) is True
    assert [call.operation for call in chaos.calls] == [
        "PutParameter",
        *c.injected,
        *c.restored,
        "DeleteParameter",
    ]
    assert world_snapshot(operator) == before
    assert chaos.ledger.load(FN, c.fault.name) is None
    recorded = _recorded(operator, since)
    operations = [*c.injected, *c.restored]
    assert len(recorded) == len(operations) > 0, recorded
    assert all(cloudtrail_name_of(op, name) for op, name in zip(operations, recorded, strict=True)), recorded


def test_esm_delete_saves_the_mapping_and_recreates_it_with_a_new_uuid(
    operator: boto3.Session, paths: Paths
) -> None:
    lambda_ = operator.client("lambda")
    (old,) = lambda_.list_event_source_mappings(FunctionName=FN)["EventSourceMappings"]
    chaos = Chaos(operator, say=lambda _: None)
    saved = chaos.inject(ESM_DELETE, FN)
    assert saved.prior == {
        "function": FN,
        "uuid": old["UUID"],
        "queue": paths.queue_arn,
        "function_arn": paths.function_arn,
        "enabled": True,
        "settings": {
            "BatchSize": 5,
            "MaximumBatchingWindowInSeconds": 0,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    }
    assert chaos.restore(ESM_DELETE, FN) is True
    (new,) = lambda_.list_event_source_mappings(FunctionName=FN)["EventSourceMappings"]
    assert new["UUID"] != old["UUID"]
    assert chaos.calls[-2].params == {
        "EventSourceArn": paths.queue_arn,
        "FunctionName": FN,
        "Enabled": True,
        "BatchSize": 5,
        "MaximumBatchingWindowInSeconds": 0,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
    }


def test_permission_remove_adds_back_the_saved_principal_action_and_source(
    operator: boto3.Session, paths: Paths
) -> None:
    chaos = Chaos(operator, say=lambda _: None)
    chaos.inject(PERMISSION_REMOVE, FN, statement_id=STATEMENT)
    assert chaos.calls[1].params == {"FunctionName": FN, "StatementId": STATEMENT}
    assert chaos.restore(PERMISSION_REMOVE, FN) is True
    assert chaos.calls[2].params == {
        "FunctionName": FN,
        "StatementId": STATEMENT,
        "Action": "lambda:InvokeFunction",
        "Principal": "sns.amazonaws.com",
        "SourceArn": paths.topic_arn,
    }


def test_permission_remove_takes_an_alias_s_statement_from_the_alias_and_puts_it_back_there(
    operator: boto3.Session,
) -> None:
    orders, alias, sid = names.ORDERS_FUNCTION, names.ORDERS_ALIAS, names.ORDERS_API_STATEMENT
    before = world_snapshot(operator)
    chaos = Chaos(operator, say=lambda _: None)
    saved = chaos.inject(PERMISSION_REMOVE, orders, statement_id=sid)
    [statement] = [s for s in saved.prior["statements"] if s["Sid"] == sid]
    assert statement["Qualifier"] == alias
    assert chaos.calls[1].params == {"FunctionName": orders, "StatementId": sid, "Qualifier": alias}
    after = json.loads(world_snapshot(operator))["functions"][orders]
    assert after != json.loads(before)["functions"][orders]  # the snapshot sees an alias's policy
    assert sid not in json.dumps(after["aliases"])
    assert chaos.restore(PERMISSION_REMOVE, orders) is True
    assert chaos.calls[2].params == {
        "FunctionName": orders,
        "StatementId": sid,
        "Action": "lambda:InvokeFunction",
        "Principal": "apigateway.amazonaws.com",
        "Qualifier": alias,
        "SourceArn": statement["Condition"]["ArnLike"]["AWS:SourceArn"],
    }
    assert world_snapshot(operator) == before


def test_permission_remove_chooses_the_sns_statement_among_several_or_refuses(
    sandbox: Sandbox, operator: boto3.Session, paths: Paths
) -> None:
    lambda_ = operator.client("lambda")
    lambda_.add_permission(
        FunctionName=FN,
        StatementId="chaos-test-account",
        Action="lambda:InvokeFunction",
        Principal=names.ACCOUNT_ID,
        SourceAccount=names.ACCOUNT_ID,
    )
    try:
        chaos = Chaos(operator, say=lambda _: None)
        chaos.inject(PERMISSION_REMOVE, FN)
        assert chaos.calls[1].params == {"FunctionName": FN, "StatementId": STATEMENT}
        assert chaos.restore(PERMISSION_REMOVE, FN) is True
        session = sandbox.session(names.OPERATOR)
        recorder = Recorder(session)
        with pytest.raises(
            ChaosRefused, match=r"no statement 'other' lets a caller invoke it \(statements: "
        ):
            Chaos(session, say=lambda _: None).inject(PERMISSION_REMOVE, FN, statement_id="other")
        assert recorder.changes == ["ssm:PutParameter", "ssm:DeleteParameter"]
    finally:
        lambda_.remove_permission(FunctionName=FN, StatementId="chaos-test-account")


def test_async_retries_puts_back_a_saved_configuration(operator: boto3.Session, paths: Paths) -> None:
    lambda_ = operator.client("lambda")
    lambda_.put_function_event_invoke_config(
        FunctionName=FN, MaximumRetryAttempts=2, MaximumEventAgeInSeconds=3600
    )
    chaos = Chaos(operator, say=lambda _: None)
    try:
        saved = chaos.inject(ASYNC_RETRIES, FN, attempts=0)
        assert saved.prior == {
            "function": FN,
            "config": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
        }
        shown = lambda_.get_function_event_invoke_config(FunctionName=FN)
        assert (shown["MaximumRetryAttempts"], shown["MaximumEventAgeInSeconds"]) == (0, 3600)
    finally:
        assert chaos.restore(ASYNC_RETRIES, FN) is True
    shown = lambda_.get_function_event_invoke_config(FunctionName=FN)
    assert (shown["MaximumRetryAttempts"], shown["MaximumEventAgeInSeconds"]) == (2, 3600)
    assert [c.operation for c in chaos.calls] == [
        "PutParameter",
        "PutFunctionEventInvokeConfig",
        "PutFunctionEventInvokeConfig",
        "DeleteParameter",
    ]


def test_the_sandbox_overwrites_on_put_and_merges_on_update_as_lambda_does(
    operator: boto3.Session, paths: Paths
) -> None:
    """moto 5.2.5 keeps the first configuration put; the sandbox keeps the last (its extension)."""
    lambda_ = operator.client("lambda")
    lambda_.put_function_event_invoke_config(FunctionName=FN, MaximumRetryAttempts=2)
    lambda_.put_function_event_invoke_config(FunctionName=FN, MaximumEventAgeInSeconds=600)
    shown = lambda_.get_function_event_invoke_config(FunctionName=FN)
    assert (shown.get("MaximumRetryAttempts"), shown["MaximumEventAgeInSeconds"]) == (None, 600)
    lambda_.update_function_event_invoke_config(FunctionName=FN, MaximumRetryAttempts=1)
    shown = lambda_.get_function_event_invoke_config(FunctionName=FN)
    assert (shown["MaximumRetryAttempts"], shown["MaximumEventAgeInSeconds"]) == (1, 600)


def test_async_dlq_remove_sends_an_empty_target_and_restores_the_saved_one(operator: boto3.Session) -> None:
    """moto 5.2.5 keeps no DeadLetterConfig (it answers none after UpdateFunctionConfiguration), so the calls
    are checked against botocore's stubbed Lambda: exactly the parameters sent, and the waits between."""
    dlq = f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:chaos-test-dlq"
    chaos = Chaos(operator, say=lambda _: None)
    target = Target(FN, {"FunctionName": FN, "DeadLetterConfig": {"TargetArn": dlq}})
    prior = ASYNC_DLQ_REMOVE.capture(chaos, target)
    assert prior == {"function": FN, "target_arn": dlq}
    done = {"LastUpdateStatus": "Successful", "State": "Active"}
    with Stubber(chaos.client("lambda")) as stub:
        for target_arn in ("", dlq):
            stub.add_response("get_function_configuration", done, {"FunctionName": FN})
            stub.add_response(
                "update_function_configuration",
                {},
                {"FunctionName": FN, "DeadLetterConfig": {"TargetArn": target_arn}},
            )
            stub.add_response("get_function_configuration", done, {"FunctionName": FN})
        ASYNC_DLQ_REMOVE.apply(chaos, target, prior)
        ASYNC_DLQ_REMOVE.revert(chaos, prior)
        stub.assert_no_pending_responses()
    assert [c.operation for c in chaos.calls] == ["UpdateFunctionConfiguration"] * 2


# --- refusals -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (ESM_DISABLE, f"refusing esm-disable on {BARE}: it has no SQS event source mapping"),
        (ESM_DELETE, f"refusing esm-delete on {BARE}: it has no SQS event source mapping"),
        (QUEUE_VISIBILITY, f"refusing queue-visibility on {BARE}: it has no SQS event source mapping"),
        (
            PERMISSION_REMOVE,
            f"nothing to remove: the resource-based policies of {BARE} and its aliases let no caller "
            "invoke it",
        ),
        (SNS_UNSUBSCRIBE, f"nothing to unsubscribe: no SNS topic has a lambda subscription to {BARE}"),
        (ASYNC_DLQ_REMOVE, f"nothing to remove: {BARE} has no dead-letter queue (DeadLetterConfig)"),
    ],
    ids=lambda value: value.name if isinstance(value, Fault) else None,
)
def test_a_function_without_the_path_is_refused_before_anything_changes(
    sandbox: Sandbox, fault: Fault, message: str
) -> None:
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    chaos = Chaos(session, say=lambda _: None)
    params = {"seconds": 1} if fault is QUEUE_VISIBILITY else {}
    with pytest.raises(ChaosRefused) as refused:
        chaos.inject(fault, BARE, **params)
    assert str(refused.value).startswith(message)
    assert recorder.changes == []
    assert chaos.ledger.load(BARE, fault.name) is None


def test_a_disabled_mapping_is_refused(operator: boto3.Session, paths: Paths) -> None:
    lambda_ = operator.client("lambda")
    (mapping,) = lambda_.list_event_source_mappings(FunctionName=FN)["EventSourceMappings"]
    lambda_.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
    with pytest.raises(ChaosRefused) as refused:
        Chaos(operator, say=lambda _: None).inject(ESM_DISABLE, FN)
    assert (
        str(refused.value)
        == f"nothing to disable: the event source mapping {mapping['UUID']} of {FN} is Disabled"
    )


@pytest.mark.parametrize(
    ("fault", "params", "message"),
    [
        (QUEUE_VISIBILITY, {"seconds": 43201}, "seconds must be a whole number from 0 to 43200, not 43201"),
        (ASYNC_RETRIES, {}, "give the retry attempts, the maximum event age, or both"),
        (ASYNC_RETRIES, {"attempts": 3}, "attempts must be a whole number from 0 to 2, not 3"),
        (
            ASYNC_RETRIES,
            {"max_age": 59},
            "max_age must be a whole number of seconds from 60 to 21600, not 59",
        ),
        (SNS_UNSUBSCRIBE, {"topic": "other"}, "no subscription to other"),
    ],
)
def test_a_bad_parameter_changes_nothing_and_leaves_no_saved_state(
    sandbox: Sandbox, paths: Paths, fault: Fault, params: dict[str, Any], message: str
) -> None:
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    chaos = Chaos(session, say=lambda _: None)
    with pytest.raises(ChaosError) as raised:
        chaos.inject(fault, FN, **params)
    assert message in str(raised.value)
    assert recorder.changes == ["ssm:PutParameter", "ssm:DeleteParameter"]
    assert chaos.ledger.load(FN, fault.name) is None


def test_a_statement_addpermission_cannot_write_again_is_refused(operator: boto3.Session) -> None:
    statement = {
        "Sid": "odd",
        "Effect": "Allow",
        "Action": "lambda:InvokeFunction",
        "Principal": {"Service": "s3.amazonaws.com"},
        "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}},
    }
    chaos = Chaos(operator, say=lambda _: None)
    target = Target(FN, {})
    prior = {"function": FN, "statements": [statement]}
    with Stubber(chaos.client("lambda")) as stub, Stubber(chaos.client("ssm")) as ssm:
        stub.add_response("list_aliases", {"Aliases": []}, {"FunctionName": FN})
        stub.add_response(
            "get_policy", {"Policy": json.dumps({"Statement": [statement]})}, {"FunctionName": FN}
        )
        ssm.add_response("delete_parameter", {})
        with pytest.raises(ChaosRefused, match="the statement odd has the condition IpAddress aws:SourceIp"):
            PERMISSION_REMOVE.apply(chaos, target, prior)
    assert [c.operation for c in chaos.calls] == ["DeleteParameter"]


# --- incident-chaos -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "call"),
    [
        (["esm", "disable"], "lambda:UpdateEventSourceMapping"),
        (["esm", "delete"], "lambda:DeleteEventSourceMapping"),
        (["queue", "visibility", "--seconds", "1"], "sqs:SetQueueAttributes"),
        (["permission", "remove", "--statement-id", STATEMENT], "lambda:RemovePermission"),
        (["sns", "unsubscribe", "--topic", TOPIC], "sns:Unsubscribe"),
        (["async", "retries", "--attempts", "0", "--max-age", "60"], "lambda:PutFunctionEventInvokeConfig"),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, list) else None,
)
def test_cli_event_path_faults_inject_and_restore_exactly(
    operator: boto3.Session, paths: Paths, args: list[str], call: str
) -> None:
    before = world_snapshot(operator)
    lines: list[str] = []
    chaos = Chaos(operator, say=lines.append)
    parser = chaos_cli.build_parser(chaos_cli.ChaosSettings())

    def run(*argv: str) -> int:
        return chaos_cli.run(parser.parse_args([*argv, "--function", FN]), chaos)

    try:
        assert run(*args) == 0
        assert [line.split(" ", 3)[2] for line in lines if line.startswith("  ") and "ssm:" not in line] == [
            call
        ]
        assert world_snapshot(operator) != before
        lines.clear()
        assert run("status") == 0
        assert "1 fault(s) to restore" in "\n".join(lines)
    finally:
        assert run(args[0], "restore") == 0
    assert world_snapshot(operator) == before
    assert chaos.ledger.all(FN) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["queue", "visibility", "--seconds", "43201"], "expected a whole number of seconds from 0 to 43200"),
        (["queue", "visibility"], "the following arguments are required: --seconds"),
        (["async", "retries", "--attempts", "3"], "expected a number of retry attempts from 0 to 2, not '3'"),
        (["async", "retries", "--max-age", "59"], "expected a whole number of seconds from 60 to 21600"),
        (["async", "retries"], "async retries: give --attempts, --max-age or both"),
        (["permission", "remove", "--statement-id", "a b"], "expected a statement id"),
        (
            ["sns", "unsubscribe", "--topic", "arn:aws:sqs:ca-central-1:1:q"],
            "expected an SNS topic name or ARN",
        ),
        (["esm", "pause"], "invalid choice: 'pause'"),
    ],
)
def test_cli_rejects_bad_event_path_input_with_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        chaos_cli.main(args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def _first_shard_data(operator: boto3.Session, stream: str) -> list[bytes]:
    kinesis = operator.client("kinesis")
    iterator = kinesis.get_shard_iterator(
        StreamName=stream, ShardId="shardId-000000000000", ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    return [r["Data"] for r in kinesis.get_records(ShardIterator=iterator, Limit=10000)["Records"]]


def test_stream_poison_writes_one_bad_record_no_history_shows_and_restore_undoes_a_remediation(
    operator: boto3.Session, undo: Undo
) -> None:
    """On a stream and a function of its own: the record stays in the stream, where every later poller of
    the world's clickstream would meet it."""
    stage = StreamStage(operator, undo)
    clicks = stage.function(stage.role(POLLER_READS), tags=dict([names.CHAOS_TAG]))
    uuid = stage.mapping(clicks)["UUID"]
    lambda_ = operator.client("lambda")
    stage.put(FIRST_SHARD, "a1")
    before, records = world_snapshot(operator), _first_shard_data(operator, stage.stream)
    chaos = Chaos(operator, say=lambda _: None)
    since = datetime.now(UTC)
    saved = chaos.inject(STREAM_POISON, clicks)
    assert _first_shard_data(operator, stage.stream) == [*records, POISON]
    assert (saved.prior["uuid"], saved.prior["settings"]) == (
        uuid,
        {"MaximumRetryAttempts": -1, "MaximumRecordAgeInSeconds": -1, "BisectBatchOnFunctionError": False},
    )
    # the remediation a diagnosis proposes, applied as a person would
    lambda_.update_event_source_mapping(UUID=uuid, MaximumRetryAttempts=2, BisectBatchOnFunctionError=True)
    assert chaos.restore(STREAM_POISON, clicks) is True
    assert [call.operation for call in chaos.calls] == [
        "PutParameter",
        "PutRecord",
        "UpdateEventSourceMapping",
        "DeleteParameter",
    ]
    assert world_snapshot(operator) == before
    # the record is data: only the remediation and the restore are in the history
    assert _recorded(operator, since) == [
        "UpdateEventSourceMapping20150331",
        "UpdateEventSourceMapping20150331",
    ]
    assert chaos.restore(STREAM_POISON, clicks) is False  # nothing saved any more


def test_stream_poison_is_refused_on_a_function_no_stream_feeds(operator: boto3.Session) -> None:
    with pytest.raises(ChaosRefused, match="it has 0 Kinesis event source mappings"):
        Chaos(operator, say=lambda _: None).inject(STREAM_POISON, FN)
