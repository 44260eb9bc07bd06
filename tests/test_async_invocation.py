"""Asynchronous invocation in the sandbox: the emulator accepts ``Invoke`` with ``Event`` and SNS deliveries
into its queue; the sandbox's Lambda service (``AsyncInvoker``) runs them with Lambda's retries, maximum
event age, destinations and dead-letter queues, on a fake clock.

What each behaviour must be, and its source, is in docs/sandbox.md ("Asynchronous invocation"):
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html,
https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#async-invocation-metrics,
https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html,
https://docs.aws.amazon.com/lambda/latest/dg/permissions-function-services.html,
https://docs.aws.amazon.com/sns/latest/dg/sns-monitoring-using-cloudwatch.html.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from chaos.sandbox import names
from chaos.sandbox.cli import build_parser
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.async_invocation import AsyncInvoker
from chaos.workload.runtime import LocalLambdaRuntime
from tests.conftest import Undo
from tests.packages import zip_files
from tests.sns_shape import SNS_MEMBERS

HANDLER = """\
import time


def handler(event, context):
    time.sleep(event.get("sleep", 0))
    if event.get("fail"):
        raise ValueError(f"boom {event.get('n')}")
    return {"ok": True, "n": event.get("n")}
"""
REGION, ACCOUNT = names.DEFAULT_REGION, names.ACCOUNT_ID
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


class FakeClock:
    def __init__(self) -> None:
        self.at = float(int(time.time()))

    def now(self) -> float:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += seconds


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


@pytest.fixture
def operator(sandbox: Sandbox) -> boto3.Session:
    return sandbox.session(names.OPERATOR)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def invoker(sandbox: Sandbox, runtime: LocalLambdaRuntime, clock: FakeClock) -> AsyncInvoker:
    invoker = AsyncInvoker(runtime, sandbox.session(names.LAMBDA_SERVICE), clock=clock)
    invoker.collect()  # whatever an earlier test left in the emulator's queue
    return invoker


@pytest.fixture
def make_queue(operator: boto3.Session, undo: Undo) -> Callable[[str], tuple[str, str]]:
    sqs = operator.client("sqs")

    def make(prefix: str) -> tuple[str, str]:
        url = sqs.create_queue(QueueName=f"{prefix}-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        undo(lambda: sqs.delete_queue(QueueUrl=url))
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, arn

    return make


@pytest.fixture
def make_function(operator: boto3.Session, undo: Undo) -> Callable[..., str]:
    """A throwaway function whose role may write logs, ``sqs:SendMessage`` to ``send_to`` and
    ``lambda:InvokeFunction`` ``invoke``, nothing else."""
    iam, lambda_ = operator.client("iam"), operator.client("lambda")

    def make(send_to: tuple[str, ...] = (), invoke: tuple[str, ...] = (), **settings: Any) -> str:
        name = f"async-{uuid.uuid4().hex[:8]}"
        trust = {
            "Effect": "Allow",
            "Principal": {
                "Service": "lambda.amazonaws.com",
                "AWS": f"arn:aws:iam::{ACCOUNT}:user/{names.LAMBDA_SERVICE}",
            },
            "Action": "sts:AssumeRole",
        }
        role = iam.create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument=_policy(trust))["Role"][
            "Arn"
        ]
        undo(lambda: iam.delete_role(RoleName=f"{name}-role"))
        statements: list[dict[str, Any]] = [{"Effect": "Allow", "Action": "logs:*", "Resource": "*"}]
        if send_to:
            statements.append({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": list(send_to)})
        if invoke:
            statements.append(
                {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": list(invoke)}
            )
        iam.put_role_policy(RoleName=f"{name}-role", PolicyName="access", PolicyDocument=_policy(*statements))
        undo(lambda: iam.delete_role_policy(RoleName=f"{name}-role", PolicyName="access"))
        lambda_.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": zip_files({"handler.py": HANDLER})},
            **{"Timeout": 3} | settings,
        )
        undo(lambda: lambda_.delete_function(FunctionName=name))
        return name

    return make


def _metric(
    sandbox: Sandbox, namespace: str, metric: str, dimension: tuple[str, str], stat: str = "Sum"
) -> float:
    """``stat`` of every datapoint of the metric within a day of now (0 when there is none)."""
    result = (
        sandbox.session(names.OPERATOR)
        .client("cloudwatch")
        .get_metric_data(
            MetricDataQueries=[
                {
                    "Id": "m",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": namespace,
                            "MetricName": metric,
                            "Dimensions": [{"Name": dimension[0], "Value": dimension[1]}],
                        },
                        "Period": 86400 * 2,
                        "Stat": stat,
                    },
                }
            ],
            StartTime=datetime.now(UTC) - timedelta(days=1),
            EndTime=datetime.now(UTC) + timedelta(days=1),
        )["MetricDataResults"][0]
    )
    return float(sum(result["Values"]))


def _lambda_metric(sandbox: Sandbox, function: str, metric: str, stat: str = "Sum") -> float:
    return _metric(sandbox, "AWS/Lambda", metric, ("FunctionName", function), stat)


def _messages(operator: boto3.Session, url: str) -> list[dict[str, Any]]:
    sqs = operator.client("sqs")
    found: list[dict[str, Any]] = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", [])
    return found


def _arn(function: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function}"


def _failing_to_a_queue(
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    **config: Any,
) -> tuple[str, str]:
    """A function whose failed asynchronous events go to a new queue (its role may send there), with this
    further asynchronous configuration; the function and the queue's URL."""
    url, arn = make_queue("async-failed")
    function = make_function(send_to=(arn,))
    operator.client("lambda").put_function_event_invoke_config(
        FunctionName=function, DestinationConfig={"OnFailure": {"Destination": arn}}, **config
    )
    return function, url


def test_invoke_event_answers_202_with_an_empty_body_and_queues_the_event(
    sandbox: Sandbox, operator: boto3.Session, make_function: Callable[..., str], invoker: AsyncInvoker
) -> None:
    function = make_function()
    lambda_ = operator.client("lambda")
    before = int(time.time() * 1000)

    answer = lambda_.invoke(FunctionName=function, InvocationType="Event", Payload=b'{"n": 1}')

    assert answer["StatusCode"] == 202
    assert answer["Payload"].read() == b""
    (event,) = invoker.collect()
    assert (event.function, event.qualifier, event.payload, event.source) == (
        _arn(function),
        None,
        '{"n": 1}',
        "invoke",
    )
    assert before / 1000 <= event.received_at <= time.time()
    assert invoker.collect() == []  # the emulator's queue was emptied
    assert invoker.pending() == 1
    (outcome,) = invoker.pump()
    assert (outcome.status, outcome.invoke_count, outcome.invocation and outcome.invocation.result) == (
        "succeeded",
        1,
        {"ok": True, "n": 1},
    )
    assert outcome.request_id == event.request_id == (outcome.invocation and outcome.invocation.request_id)
    assert invoker.pending() == 0
    assert _lambda_metric(sandbox, function, "AsyncEventsReceived") == 1
    assert _lambda_metric(sandbox, function, "AsyncEventAge", "SampleCount") == 1


def test_an_event_is_pending_until_its_turn_has_ended(
    operator: boto3.Session,
    make_function: Callable[..., str],
    invoker: AsyncInvoker,
    runtime: LocalLambdaRuntime,
) -> None:
    """While an event's invocation runs, it is still pending: what waits for pending events to be done
    (the drill, before it resets CloudWatch) must not go on while an invocation has yet to publish its
    metrics."""
    function = make_function()
    operator.client("lambda").invoke(FunctionName=function, InvocationType="Event", Payload=b'{"n": 1}')
    invoker.collect()
    seen: list[int] = []

    def during(_invocation: Any) -> None:  # the runtime tells its observers before the turn ends
        seen.append(invoker.pending())

    runtime.observers.append(during)
    try:
        (outcome,) = invoker.pump()
    finally:
        runtime.observers.remove(during)
    assert outcome.status == "succeeded"
    assert seen == [1]
    assert invoker.pending() == 0


def test_invoke_event_is_refused_for_a_missing_function_or_qualifier_and_by_iam(
    sandbox: Sandbox, operator: boto3.Session, make_function: Callable[..., str], invoker: AsyncInvoker
) -> None:
    function = make_function()
    lambda_ = operator.client("lambda")
    for name, qualifier, arn in (
        ("async-missing", None, _arn("async-missing")),
        (function, "nope", f"{_arn(function)}:nope"),
    ):
        with pytest.raises(ClientError) as refused:
            lambda_.invoke(
                FunctionName=name,
                InvocationType="Event",
                Payload=b"{}",
                **({"Qualifier": qualifier} if qualifier else {}),
            )
        assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"
        assert refused.value.response["Error"]["Message"] == f"Function not found: {arn}"
    with pytest.raises(ClientError) as denied:
        sandbox.session(names.WATCHDOG).client("lambda").invoke(
            FunctionName=function, InvocationType="Event", Payload=b"{}"
        )
    assert denied.value.response["Error"] == {
        "Code": "AccessDeniedException",
        "Message": f"User: arn:aws:iam::{ACCOUNT}:user/{names.WATCHDOG} is not authorized to perform: "
        "lambda:InvokeFunction",
    }
    assert invoker.collect() == []


def test_sns_delivers_only_what_the_resource_policy_allows_and_counts_each_outcome(
    sandbox: Sandbox,
    operator: boto3.Session,
    make_function: Callable[..., str],
    invoker: AsyncInvoker,
    undo: Undo,
) -> None:
    function = make_function()
    sns, lambda_ = operator.client("sns"), operator.client("lambda")
    topic = sns.create_topic(Name=f"async-topic-{uuid.uuid4().hex[:8]}")["TopicArn"]
    undo(lambda: sns.delete_topic(TopicArn=topic))
    other = topic + "-other"
    subscription = sns.subscribe(TopicArn=topic, Protocol="lambda", Endpoint=_arn(function))[
        "SubscriptionArn"
    ]
    topic_name = ("TopicName", topic.split(":")[-1])

    sns.publish(TopicArn=topic, Message="no statement")  # no resource policy at all
    lambda_.add_permission(
        FunctionName=function,
        StatementId="other-topic",
        Action="lambda:InvokeFunction",
        Principal="sns.amazonaws.com",
        SourceArn=other,
    )
    sns.publish(TopicArn=topic, Message="another topic's statement")
    assert invoker.collect() == []
    assert _metric(sandbox, "AWS/SNS", "NumberOfNotificationsFailed", topic_name) == 2
    assert _metric(sandbox, "AWS/SNS", "NumberOfNotificationsDelivered", topic_name) == 0

    lambda_.add_permission(
        FunctionName=function,
        StatementId="this-topic",
        Action="lambda:InvokeFunction",
        Principal="sns.amazonaws.com",
        SourceArn=topic,
    )
    message_id = sns.publish(
        TopicArn=topic,
        Message=names.order_event(),
        Subject="order shipped",
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "shipment"}},
    )["MessageId"]

    (event,) = invoker.collect()
    assert (event.function, event.source) == (_arn(function), topic)
    (record,) = event.event["Records"]
    assert list(record) == ["EventVersion", "EventSubscriptionArn", "EventSource", "Sns"]
    assert (record["EventVersion"], record["EventSubscriptionArn"], record["EventSource"]) == (
        "1.0",
        subscription,
        "aws:sns",
    )
    sns_part = record["Sns"]
    assert sorted(sns_part) == sorted(SNS_MEMBERS)
    assert {
        k: sns_part[k] for k in ("Type", "MessageId", "TopicArn", "Subject", "Message", "MessageAttributes")
    } == {
        "Type": "Notification",
        "MessageId": message_id,
        "TopicArn": topic,
        "Subject": "order shipped",
        "Message": names.order_event(),
        "MessageAttributes": {"kind": {"Type": "String", "Value": "shipment"}},
    }
    assert STAMP.fullmatch(sns_part["Timestamp"])
    assert sns_part["UnsubscribeUrl"] == (
        f"https://sns.{REGION}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={subscription}"
    )
    assert _metric(sandbox, "AWS/SNS", "NumberOfNotificationsDelivered", topic_name) == 1
    assert _metric(sandbox, "AWS/SNS", "NumberOfNotificationsFailed", topic_name) == 2
    (outcome,) = invoker.pump()
    assert outcome.status == "succeeded"


def test_a_function_error_without_retries_sends_the_event_to_the_dead_letter_queue_with_its_attributes(
    sandbox: Sandbox,
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    invoker: AsyncInvoker,
) -> None:
    dlq_url, dlq_arn = make_queue("async-dlq")
    function = make_function(send_to=(dlq_arn,), DeadLetterConfig={"TargetArn": dlq_arn})
    lambda_ = operator.client("lambda")
    assert lambda_.get_function_configuration(FunctionName=function)["DeadLetterConfig"] == {
        "TargetArn": dlq_arn
    }
    lambda_.put_function_event_invoke_config(FunctionName=function, MaximumRetryAttempts=1)
    lambda_.put_function_event_invoke_config(FunctionName=function, MaximumRetryAttempts=0)  # overwrites
    config = lambda_.get_function_event_invoke_config(FunctionName=function)
    assert (config["MaximumRetryAttempts"], "MaximumEventAgeInSeconds" in config) == (0, False)

    lambda_.invoke(FunctionName=function, InvocationType="Event", Payload=b'{"fail": true, "n": 3}')
    invoker.collect()
    (outcome,) = invoker.pump()

    assert (outcome.status, outcome.invoke_count, invoker.pending()) == ("failed", 1, 0)
    (delivery,) = outcome.deliveries
    assert (delivery.kind, delivery.target_arn, delivery.delivered) == ("dead_letter", dlq_arn, True)
    (message,) = _messages(operator, dlq_url)
    assert message["Body"] == '{"fail": true, "n": 3}'
    assert message["MessageAttributes"] == {
        "RequestID": {"DataType": "String", "StringValue": outcome.request_id},
        "ErrorCode": {"DataType": "Number", "StringValue": "200"},
        "ErrorMessage": {"DataType": "String", "StringValue": "boom 3"},
    }
    assert _lambda_metric(sandbox, function, "AsyncEventsDropped") == 1
    assert _lambda_metric(sandbox, function, "DeadLetterErrors") == 0
    assert _lambda_metric(sandbox, function, "Errors") == 1


def test_function_errors_are_retried_one_then_two_minutes_later(
    sandbox: Sandbox, make_function: Callable[..., str], invoker: AsyncInvoker, clock: FakeClock
) -> None:
    function = make_function()  # no event invoke config: 2 retries
    start = clock.now()
    queued = invoker.submit(function, {"fail": True, "n": 1})

    (first,) = invoker.pump()
    assert (first.status, first.invoke_count, first.next_attempt_at) == ("retry_scheduled", 1, start + 60)
    clock.advance(59.999)
    assert invoker.pump() == []
    clock.advance(0.001)
    (second,) = invoker.pump()
    assert (second.status, second.invoke_count, second.next_attempt_at) == ("retry_scheduled", 2, start + 180)
    clock.advance(119.999)
    assert invoker.pump() == []
    clock.advance(0.001)
    (third,) = invoker.pump()
    assert (third.status, third.invoke_count, third.next_attempt_at, third.deliveries) == (
        "failed",
        3,
        None,
        (),
    )
    attempts = (first, second, third)
    assert {o.request_id for o in attempts} | {
        o.invocation and o.invocation.request_id for o in attempts
    } == {queued.request_id}  # every attempt runs with the event's request id

    assert _lambda_metric(sandbox, function, "Invocations") == 3
    assert _lambda_metric(sandbox, function, "AsyncEventsReceived") == 1
    assert _lambda_metric(sandbox, function, "AsyncEventAge", "SampleCount") == 3
    assert _lambda_metric(sandbox, function, "AsyncEventAge", "Sum") == 0 + 60_000 + 180_000
    assert _lambda_metric(sandbox, function, "AsyncEventsDropped") == 1


def test_an_event_older_than_its_maximum_age_is_dropped_without_running(
    sandbox: Sandbox,
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    invoker: AsyncInvoker,
    clock: FakeClock,
) -> None:
    function, failed_url = _failing_to_a_queue(
        operator, make_function, make_queue, MaximumRetryAttempts=2, MaximumEventAgeInSeconds=60
    )
    invoker.submit(function, {"fail": True, "n": 2})
    assert invoker.pump()[0].status == "retry_scheduled"
    clock.advance(60)  # exactly the maximum age: still run
    assert invoker.pump()[0].status == "retry_scheduled"
    clock.advance(120)

    (expired,) = invoker.pump()

    assert (expired.status, expired.invoke_count) == ("expired", 2)
    assert _lambda_metric(sandbox, function, "Invocations") == 2
    assert _lambda_metric(sandbox, function, "AsyncEventsDropped") == 1
    (message,) = _messages(operator, failed_url)
    context = json.loads(message["Body"])["requestContext"]
    assert context == {
        "requestId": expired.request_id,
        "functionArn": f"{_arn(function)}:$LATEST",
        "condition": "EventAgeExceeded",
        "approximateInvokeCount": 2,
    }


def test_reserved_concurrency_zero_sends_events_to_the_on_failure_destination_without_retries(
    sandbox: Sandbox,
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    invoker: AsyncInvoker,
) -> None:
    function, failed_url = _failing_to_a_queue(operator, make_function, make_queue)
    lambda_ = operator.client("lambda")
    lambda_.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=0)
    invoker.submit(function, {"n": 4})

    (outcome,) = invoker.pump()

    assert (outcome.status, outcome.invoke_count, invoker.pending()) == ("failed", 0, 0)
    (message,) = _messages(operator, failed_url)
    record = json.loads(message["Body"])
    assert record["responseContext"] == {"statusCode": 429, "executedVersion": "$LATEST"}
    assert record["requestContext"]["approximateInvokeCount"] == 0
    assert _lambda_metric(sandbox, function, "Throttles") == 1
    assert _lambda_metric(sandbox, function, "AsyncEventsDropped") == 1


def test_a_dead_letter_queue_the_role_may_not_send_to_counts_a_dead_letter_error(
    sandbox: Sandbox,
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    invoker: AsyncInvoker,
) -> None:
    dlq_url, dlq_arn = make_queue("async-dlq")
    function = make_function(DeadLetterConfig={"TargetArn": dlq_arn})  # the role may not sqs:SendMessage
    operator.client("lambda").put_function_event_invoke_config(FunctionName=function, MaximumRetryAttempts=0)
    invoker.submit(function, {"fail": True, "n": 5})

    (outcome,) = invoker.pump()

    (delivery,) = outcome.deliveries
    assert (delivery.kind, delivery.delivered) == ("dead_letter", False)
    assert delivery.error is not None
    assert delivery.error.startswith("AccessDenied")
    assert _messages(operator, dlq_url) == []
    assert _lambda_metric(sandbox, function, "DeadLetterErrors") == 1
    assert _lambda_metric(sandbox, function, "AsyncEventsDropped") == 1


def test_the_on_failure_destination_receives_the_invocation_record(
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    invoker: AsyncInvoker,
    clock: FakeClock,
) -> None:
    function, failed_url = _failing_to_a_queue(operator, make_function, make_queue, MaximumRetryAttempts=0)
    invoker.submit(function, {"fail": True, "n": 7})

    (outcome,) = invoker.pump()

    (message,) = _messages(operator, failed_url)
    record = json.loads(message["Body"])
    assert list(record) == [
        "version",
        "timestamp",
        "requestContext",
        "requestPayload",
        "responseContext",
        "responsePayload",
    ]
    moment = datetime.fromtimestamp(clock.now(), UTC)
    assert record == {
        "version": "1.0",
        "timestamp": f"{moment:%Y-%m-%dT%H:%M:%S}.000Z",
        "requestContext": {
            "requestId": outcome.request_id,
            "functionArn": f"{_arn(function)}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 1,
        },
        "requestPayload": {"fail": True, "n": 7},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorMessage": "boom 7", "errorType": "ValueError"},
    }


def test_the_on_success_destination_receives_the_record_of_a_success(
    sandbox: Sandbox,
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    invoker: AsyncInvoker,
) -> None:
    done_url, done_arn = make_queue("async-done")
    function = make_function(send_to=(done_arn,))
    operator.client("lambda").put_function_event_invoke_config(
        FunctionName=function, DestinationConfig={"OnSuccess": {"Destination": done_arn}}
    )
    invoker.submit(function, {"n": 8})

    (outcome,) = invoker.pump()

    assert outcome.status == "succeeded"
    (message,) = _messages(operator, done_url)
    record = json.loads(message["Body"])
    assert record["requestContext"] == {
        "requestId": outcome.request_id,
        "functionArn": f"{_arn(function)}:$LATEST",
        "condition": "Success",
        "approximateInvokeCount": 1,
    }
    assert (record["requestPayload"], record["responseContext"], record["responsePayload"]) == (
        {"n": 8},
        {"statusCode": 200, "executedVersion": "$LATEST"},
        {"ok": True, "n": 8},
    )
    assert _lambda_metric(sandbox, function, "DestinationDeliveryFailures") == 0


def test_a_function_destination_is_invoked_asynchronously_with_the_record_as_its_event(
    make_function: Callable[..., str], operator: boto3.Session, invoker: AsyncInvoker
) -> None:
    destination = make_function()
    function = make_function(invoke=(_arn(destination),))
    operator.client("lambda").put_function_event_invoke_config(
        FunctionName=function, DestinationConfig={"OnSuccess": {"Destination": _arn(destination)}}
    )
    invoker.submit(function, {"n": 9})

    (outcome,) = invoker.pump()

    (delivery,) = outcome.deliveries
    assert (delivery.kind, delivery.target_arn, delivery.delivered, delivery.error) == (
        "on_success",
        _arn(destination),
        True,
        None,
    )
    (event,) = invoker.collect()
    assert (event.function, event.source) == (_arn(destination), "invoke")
    assert event.event["requestContext"]["condition"] == "Success"
    assert event.event["responsePayload"] == {"ok": True, "n": 9}


def test_a_throttled_event_is_retried_with_a_doubling_interval_until_it_expires(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    make_function: Callable[..., str],
    invoker: AsyncInvoker,
    clock: FakeClock,
) -> None:
    function = make_function(Timeout=8)
    lambda_ = operator.client("lambda")
    lambda_.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=1)
    lambda_.put_function_event_invoke_config(FunctionName=function, MaximumEventAgeInSeconds=60)
    busy = threading.Thread(target=runtime.invoke, args=(function, {"sleep": 5}))
    busy.start()
    time.sleep(1.5)  # the busy invocation holds the function's one unit of concurrency
    start = clock.now()
    invoker.submit(function, {"n": 10})

    (first,) = invoker.pump()
    clock.advance(1)
    (second,) = invoker.pump()
    clock.advance(2)
    (third,) = invoker.pump()
    busy.join()
    clock.advance(3.999)
    assert invoker.pump() == []  # the next attempt is due 4 s after the third
    clock.advance(53.002)  # its turn comes only after the 60 s maximum age
    (expired,) = invoker.pump()

    assert [(o.status, o.next_attempt_at) for o in (first, second, third)] == [
        ("throttled", start + 1),
        ("throttled", start + 3),
        ("throttled", start + 7),
    ]
    assert (expired.status, expired.invoke_count) == ("expired", 0)
    assert _lambda_metric(sandbox, function, "Throttles") == 3
    assert _lambda_metric(sandbox, function, "AsyncEventAge", "SampleCount") == 0
    assert _lambda_metric(sandbox, function, "AsyncEventsDropped") == 1


def test_incident_sandbox_invoke_async_runs_the_events_it_sent_until_done(
    sandbox: Sandbox,
    operator: boto3.Session,
    make_function: Callable[..., str],
    make_queue: Callable[[str], tuple[str, str]],
    invoker: AsyncInvoker,
    capsys: pytest.CaptureFixture[str],
) -> None:
    dlq_url, dlq_arn = make_queue("async-dlq")
    function = make_function(send_to=(dlq_arn,), DeadLetterConfig={"TargetArn": dlq_arn})
    operator.client("lambda").put_function_event_invoke_config(FunctionName=function, MaximumRetryAttempts=0)
    parser = build_parser()

    def run(event: str) -> tuple[int, list[str]]:
        args = parser.parse_args(
            ["invoke", function, "--async", "--event", event, "--state-dir", str(sandbox.state_dir)]
        )
        code = args.run(args)
        return code, capsys.readouterr().out.splitlines()

    code, lines = run('{"n": 11}')
    assert code == 0
    assert lines[:2] == [f'invoking {function} asynchronously x1 with {{"n": 11}}', "accepted: HTTP 202"]
    assert re.fullmatch(r"[0-9a-f-]{36}  succeeded       attempts 1", lines[2])
    assert len(lines) == 3

    code, lines = run('{"fail": true, "n": 12}')
    assert code == 1
    assert re.fullmatch(r"[0-9a-f-]{36}  failed          attempts 1", lines[2])
    assert lines[3:] == ["    ValueError: boom 12", f"    dead_letter -> {dlq_arn}: delivered"]
    (message,) = _messages(operator, dlq_url)
    assert message["Body"] == '{"fail": true, "n": 12}'
