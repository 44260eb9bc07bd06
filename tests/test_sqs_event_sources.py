"""SQS event source mappings in the sandbox: Lambda's refusals, State, StateTransitionReason and
LastProcessingResult, the poller (batches, function errors, redrive to the dead-letter queue, partial batch
responses, a disabled mapping, a role that may not receive) and the AWS/SQS metrics, against a real sandbox.

AWS sources: https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html (event, permissions, deletion),
https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html (partial batch responses),
https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingConfiguration.html (State),
https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html;
the refusals' wording as quoted in github-aws-runners/terraform-aws-github-runner#465 (visibility timeout)
and anomalyco/sst#5737 (execution role).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from chaos.workload.sqs_poller import (
    ACCESS_PROBLEM,
    FUNCTION_FAILED,
    OK,
    BatchOutcome,
    SqsPoller,
    batch_item_failures,
)
from tests.conftest import Undo
from tests.packages import python_function

HANDLER = """\
import os


def handler(event, context):
    records = event["Records"]
    if any(r["body"] == "fail" for r in records):
        raise RuntimeError("cannot process this batch")
    if os.environ.get("MODE") == "partial":
        bad = [r["messageId"] for r in records if r["body"].startswith("bad")]
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in bad]}
    return event
"""
ALL_SQS = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


class Fixture:
    """Throwaway queues, roles, functions and mappings, made as the operator and removed after the test."""

    def __init__(
        self,
        operator: boto3.Session,
        undo: Undo,
        service: str = f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.LAMBDA_SERVICE}",
    ) -> None:
        self.service = service  # the account's Lambda service identity, which assumes the function's role
        self.iam, self.sqs, self.lambda_ = (
            operator.client("iam"),
            operator.client("sqs"),
            operator.client("lambda"),
        )
        self.undo = undo
        self.suffix = uuid.uuid4().hex[:8]

    def queue(
        self, name: str, visibility: int, dead_letter_arn: str | None = None, max_receives: int = 2
    ) -> str:
        attributes = {"VisibilityTimeout": str(visibility)}
        if dead_letter_arn:
            redrive = {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": str(max_receives)}
            attributes["RedrivePolicy"] = json.dumps(redrive)
        url: str = self.sqs.create_queue(QueueName=f"{name}-{self.suffix}", Attributes=attributes)["QueueUrl"]
        self.undo(lambda: self.sqs.delete_queue(QueueUrl=url))
        return url

    def arn(self, url: str) -> str:
        return str(
            self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        )

    def role(self, actions: list[str]) -> str:
        name = f"esm-probe-{self.suffix}"
        trust = {
            "Effect": "Allow",
            "Principal": {
                "Service": "lambda.amazonaws.com",
                "AWS": self.service,
            },
            "Action": "sts:AssumeRole",
        }
        arn: str = self.iam.create_role(RoleName=name, AssumeRolePolicyDocument=_policy(trust))["Role"]["Arn"]
        self.set_role_actions(actions)

        def remove() -> None:
            self.iam.delete_role_policy(RoleName=name, PolicyName="sqs")
            self.iam.delete_role(RoleName=name)

        self.undo(remove)
        return arn

    def set_role_actions(self, actions: list[str]) -> None:
        document = _policy({"Effect": "Allow", "Action": actions, "Resource": "*"})
        self.iam.put_role_policy(
            RoleName=f"esm-probe-{self.suffix}", PolicyName="sqs", PolicyDocument=document
        )

    def function(self, role_arn: str, timeout: int, mode: str = "") -> str:
        return python_function(
            self.lambda_,
            self.undo,
            f"esm-probe-{self.suffix}",
            role_arn,
            {"probe.py": HANDLER},
            "probe.handler",
            Timeout=timeout,
            Environment={"Variables": {"MODE": mode}},
        )

    def mapping(self, function: str, queue_arn: str, **settings: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self.lambda_.create_event_source_mapping(
            FunctionName=function, EventSourceArn=queue_arn, **settings
        )
        self.undo(lambda: _delete_quietly(self.lambda_, answer["UUID"]))
        return answer

    def send(self, url: str, *bodies: str) -> list[str]:
        return [str(self.sqs.send_message(QueueUrl=url, MessageBody=b)["MessageId"]) for b in bodies]

    def depth(self, url: str) -> tuple[int, int]:
        names_ = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names_)["Attributes"]
        return int(attributes[names_[0]]), int(attributes[names_[1]])


def _delete_quietly(lambda_: Any, mapping_uuid: str) -> None:
    try:
        lambda_.delete_event_source_mapping(UUID=mapping_uuid)
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException":
            raise


@pytest.fixture
def make(operator: boto3.Session, undo: Undo) -> Fixture:
    return Fixture(operator, undo)


@pytest.fixture
def poller(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> SqsPoller:
    return SqsPoller(runtime, sandbox.session(names.LAMBDA_SERVICE))


def _poll(poller: SqsPoller, mapping_uuid: str) -> BatchOutcome | None:
    outcomes = [o for o in poller.poll_once() if o.uuid == mapping_uuid]
    assert len(outcomes) <= 1
    return outcomes[0] if outcomes else None


def _refusal(call: Callable[[], object]) -> tuple[str, str]:
    with pytest.raises(ClientError) as raised:
        call()
    return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]


def test_a_visibility_timeout_shorter_than_the_function_timeout_is_refused(make: Fixture) -> None:
    url = make.queue("esm-short", visibility=2)
    function = make.function(make.role(ALL_SQS), timeout=3)

    refused = _refusal(lambda: make.mapping(function, make.arn(url)))

    assert refused == (
        "InvalidParameterValueException",
        "Queue visibility timeout: 2 seconds is less than Function timeout: 3 seconds",
    )
    assert make.lambda_.list_event_source_mappings(FunctionName=function)["EventSourceMappings"] == []
    make.sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "3"})
    created = make.mapping(function, make.arn(url), BatchSize=5)
    assert (created["State"], created["StateTransitionReason"]) == ("Creating", "USER_INITIATED")
    stored = make.lambda_.get_event_source_mapping(UUID=created["UUID"])
    assert (stored["State"], stored["StateTransitionReason"], stored["LastProcessingResult"]) == (
        "Enabled",
        "USER_INITIATED",
        "No records processed",
    )


@pytest.mark.parametrize("missing", ["ReceiveMessage", "DeleteMessage", "GetQueueAttributes"])
def test_a_role_without_the_pollers_permissions_is_refused(make: Fixture, missing: str) -> None:
    url = make.queue("esm-role", visibility=3)
    function = make.function(make.role([a for a in ALL_SQS if a != f"sqs:{missing}"]), timeout=3)

    refused = _refusal(lambda: make.mapping(function, make.arn(url)))

    message = f"The function execution role does not have permissions to call {missing} on SQS"
    assert refused == ("InvalidParameterValueException", message)


def test_a_batch_is_processed_and_deleted(make: Fixture, poller: SqsPoller) -> None:
    url = make.queue("esm-batch", visibility=3)
    queue_arn = make.arn(url)
    function = make.function(make.role(ALL_SQS), timeout=3)
    mapping = make.mapping(function, queue_arn, BatchSize=5)
    make.send(url, "one", "two", "three")

    outcome = _poll(poller, mapping["UUID"])

    assert outcome == BatchOutcome(mapping["UUID"], mapping["FunctionArn"], 3, 3, OK)
    assert make.depth(url) == (0, 0)
    stored = make.lambda_.get_event_source_mapping(UUID=mapping["UUID"])
    assert (stored["State"], stored["LastProcessingResult"]) == ("Enabled", OK)


def test_the_event_has_the_documented_shape(
    make: Fixture, poller: SqsPoller, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = make.queue("esm-shape", visibility=3)
    queue_arn = make.arn(url)
    function = make.function(make.role(ALL_SQS), timeout=3)
    mapping = make.mapping(function, queue_arn)
    seen: list[Any] = []
    original = LocalLambdaRuntime.invoke

    def spy(self: LocalLambdaRuntime, name: str, event: Any, qualifier: str | None = None) -> Any:
        seen.append((name, event, qualifier))
        return original(self, name, event, qualifier)

    monkeypatch.setattr(LocalLambdaRuntime, "invoke", spy)
    (message_id,) = make.send(url, "hello")

    _poll(poller, mapping["UUID"])

    ((name, event, qualifier),) = seen
    assert (name, qualifier) == (mapping["FunctionArn"], None)  # its ARN: run in the mapping's account
    (record,) = event["Records"]
    attributes = record.pop("attributes")
    assert record == {
        "messageId": message_id,
        "receiptHandle": record["receiptHandle"],
        "body": "hello",
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(b"hello").hexdigest(),  # noqa: S324 - SQS's own checksum
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": names.DEFAULT_REGION,
    }
    assert sorted(attributes) == [
        "ApproximateFirstReceiveTimestamp",
        "ApproximateReceiveCount",
        "SenderId",
        "SentTimestamp",
    ]
    assert attributes["ApproximateReceiveCount"] == "1"
    assert int(attributes["ApproximateFirstReceiveTimestamp"]) >= int(attributes["SentTimestamp"])


def test_a_failing_batch_stays_and_then_moves_to_the_dead_letter_queue(
    make: Fixture, poller: SqsPoller
) -> None:
    dlq = make.queue("esm-dlq", visibility=30)
    url = make.queue("esm-failing", visibility=1, dead_letter_arn=make.arn(dlq), max_receives=2)
    function = make.function(make.role(ALL_SQS), timeout=1)
    mapping = make.mapping(function, make.arn(url))
    make.send(url, "fail")

    first = _poll(poller, mapping["UUID"])
    assert first == BatchOutcome(mapping["UUID"], mapping["FunctionArn"], 1, 0, FUNCTION_FAILED)
    # Not deleted: in flight, or visible again if this busy machine took past its 1 s visibility timeout to
    # get here (the receive count in the dead-letter queue below shows it was received three times).
    assert sum(make.depth(url)) == 1
    stored = make.lambda_.get_event_source_mapping(UUID=mapping["UUID"])
    assert stored["LastProcessingResult"] == FUNCTION_FAILED
    time.sleep(1.2)
    assert _poll(poller, mapping["UUID"]) == first  # received a second time, fails again
    time.sleep(1.2)
    # The third receive finds its receive count at maxReceiveCount: SQS moves it instead of returning it.
    assert _poll(poller, mapping["UUID"]) == BatchOutcome(mapping["UUID"], mapping["FunctionArn"], 0, 0, None)
    assert make.depth(url) == (0, 0)
    moved = make.sqs.receive_message(QueueUrl=dlq, MessageSystemAttributeNames=["All"])["Messages"]
    assert [(m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in moved] == [("fail", "3")]


def test_partial_batch_responses_delete_only_the_processed_messages(make: Fixture, poller: SqsPoller) -> None:
    url = make.queue("esm-partial", visibility=1)
    function = make.function(make.role(ALL_SQS), timeout=1, mode="partial")
    mapping = make.mapping(function, make.arn(url), FunctionResponseTypes=["ReportBatchItemFailures"])
    make.send(url, "good-1", "bad-1", "good-2")

    outcome = _poll(poller, mapping["UUID"])

    assert outcome == BatchOutcome(mapping["UUID"], mapping["FunctionArn"], 3, 2, OK)
    assert sum(make.depth(url)) == 1  # the failed one, in flight or (1 s on) visible again; the others gone
    time.sleep(1.2)
    left = make.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in left] == ["bad-1"]


def test_without_report_batch_item_failures_a_partial_response_is_a_success(
    make: Fixture, poller: SqsPoller
) -> None:
    url = make.queue("esm-nopartial", visibility=1)
    function = make.function(make.role(ALL_SQS), timeout=1, mode="partial")
    mapping = make.mapping(function, make.arn(url))
    make.send(url, "good-1", "bad-1")

    assert _poll(poller, mapping["UUID"]) == BatchOutcome(mapping["UUID"], mapping["FunctionArn"], 2, 2, OK)
    assert make.depth(url) == (0, 0)


def test_the_documented_success_and_failure_conditions_of_a_partial_response() -> None:
    batch = {"id1", "id2"}
    assert batch_item_failures(None, batch) == set()
    assert batch_item_failures("", batch) == set()
    assert batch_item_failures({}, batch) == set()
    assert batch_item_failures({"batchItemFailures": None}, batch) == set()
    assert batch_item_failures({"batchItemFailures": []}, batch) == set()
    assert batch_item_failures({"batchItemFailures": [{"itemIdentifier": "id2"}]}, batch) == {"id2"}
    assert batch_item_failures("not an object", batch) is None
    assert batch_item_failures({"batchItemFailures": [{"itemIdentifier": ""}]}, batch) is None
    assert batch_item_failures({"batchItemFailures": [{"itemIdentifier": None}]}, batch) is None
    assert batch_item_failures({"batchItemFailures": [{"itemIdentifer": "id1"}]}, batch) is None
    assert batch_item_failures({"batchItemFailures": [{"itemIdentifier": "id3"}]}, batch) is None


def test_a_disabled_mapping_delivers_nothing_until_enabled_and_a_deleted_one_never(
    make: Fixture, poller: SqsPoller
) -> None:
    url = make.queue("esm-disabled", visibility=3)
    function = make.function(make.role(ALL_SQS), timeout=3)
    mapping = make.mapping(function, make.arn(url))
    uuid_ = mapping["UUID"]

    assert make.lambda_.update_event_source_mapping(UUID=uuid_, Enabled=False)["State"] == "Disabling"
    assert make.lambda_.get_event_source_mapping(UUID=uuid_)["State"] == "Disabled"
    make.send(url, "waiting")
    assert _poll(poller, uuid_) is None
    assert make.depth(url) == (1, 0)

    assert make.lambda_.update_event_source_mapping(UUID=uuid_, Enabled=True)["State"] == "Enabling"
    assert make.lambda_.get_event_source_mapping(UUID=uuid_)["State"] == "Enabled"
    assert make.lambda_.update_event_source_mapping(UUID=uuid_, BatchSize=3)["State"] == "Updating"
    assert _poll(poller, uuid_) == BatchOutcome(uuid_, mapping["FunctionArn"], 1, 1, OK)

    assert make.lambda_.delete_event_source_mapping(UUID=uuid_)["State"] == "Deleting"
    assert (
        _refusal(lambda: make.lambda_.get_event_source_mapping(UUID=uuid_))[0] == "ResourceNotFoundException"
    )
    make.send(url, "after")
    assert _poll(poller, uuid_) is None
    assert make.depth(url) == (1, 0)


def test_a_role_that_lost_receive_message_is_reported_as_a_problem(make: Fixture, poller: SqsPoller) -> None:
    url = make.queue("esm-lost", visibility=3)
    function = make.function(make.role(ALL_SQS), timeout=3)
    mapping = make.mapping(function, make.arn(url))
    make.send(url, "stuck")
    make.set_role_actions(["sqs:DeleteMessage", "sqs:GetQueueAttributes"])

    outcome = _poll(poller, mapping["UUID"])

    assert outcome == BatchOutcome(mapping["UUID"], mapping["FunctionArn"], 0, 0, ACCESS_PROBLEM)
    stored = make.lambda_.get_event_source_mapping(UUID=mapping["UUID"])
    assert (stored["State"], stored["LastProcessingResult"]) == ("Enabled", ACCESS_PROBLEM)
    assert make.depth(url) == (1, 0)


def _metric(operator: boto3.Session, queue: str, metric: str, stat: str) -> list[float]:
    now = datetime.now(UTC)
    answer = operator.client("cloudwatch").get_metric_data(
        MetricDataQueries=[
            {
                "Id": "m",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/SQS",
                        "MetricName": metric,
                        "Dimensions": [{"Name": "QueueName", "Value": queue}],
                    },
                    "Period": 60,
                    "Stat": stat,
                },
            }
        ],
        StartTime=now - timedelta(minutes=10),
        EndTime=now + timedelta(minutes=1),
    )
    return [float(v) for v in answer["MetricDataResults"][0]["Values"]]


def _once_sampled(read: Callable[[], Any], holds: Callable[[Any], bool]) -> Any:
    """What ``read`` returns once ``holds`` it, within 20 s (the emulator samples every queue each second,
    in a thread a busy machine may delay): the test waits for a sample, never for a lucky instant."""
    deadline = time.monotonic() + 20
    while not holds(value := read()) and time.monotonic() < deadline:
        time.sleep(0.25)
    return value


def test_sqs_metrics_show_an_ageing_backlog_and_the_messages_counted_once(
    sandbox: Sandbox, operator: boto3.Session, make: Fixture
) -> None:
    url = make.queue("esm-metrics", visibility=30)
    queue = url.rsplit("/", 1)[1]

    def metric(name: str, statistic: str) -> list[float]:
        return _metric(operator, queue, name, statistic)

    make.send(url, "a", "b")
    ages = _once_sampled(
        lambda: metric("ApproximateAgeOfOldestMessage", "Maximum"), lambda v: max(v, default=0) >= 2
    )
    assert max(ages) >= 2
    assert max(metric("ApproximateNumberOfMessagesVisible", "Maximum")) == 2
    assert sum(metric("NumberOfMessagesSent", "Sum")) == 2
    older = _once_sampled(
        lambda: metric("ApproximateAgeOfOldestMessage", "Maximum"), lambda v: max(v) >= max(ages) + 2
    )
    assert max(older) >= max(ages) + 2  # the oldest message keeps ageing while nothing consumes it

    (message,) = make.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    make.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    _once_sampled(lambda: metric("NumberOfMessagesDeleted", "Sum"), lambda v: sum(v) >= 1)
    assert sum(metric("NumberOfMessagesReceived", "Sum")) == 1
    assert sum(metric("NumberOfMessagesDeleted", "Sum")) == 1
    assert sum(metric("NumberOfMessagesSent", "Sum")) == 2

    sandbox.reset_cloudwatch()
    # After a reset only new samples exist: no count comes back, the gauges show the queue as it is now.
    visible = _once_sampled(lambda: metric("ApproximateNumberOfMessagesVisible", "Maximum"), bool)
    assert visible == [1]
    assert sum(metric("NumberOfMessagesSent", "Sum")) == 0
    assert sum(metric("NumberOfMessagesDeleted", "Sum")) == 0


def test_a_mapping_in_the_second_account_is_polled_and_run_there(
    sandbox: Sandbox, undo: Undo, poller: SqsPoller
) -> None:
    second = sandbox.session(names.SECOND_OPERATOR)  # creates everything in the second account
    service = f"arn:aws:iam::{names.SECOND_ACCOUNT_ID}:user/{names.LAMBDA_SERVICE}"  # its own Lambda service
    make = Fixture(second, undo, service)
    url = make.queue("esm-second", visibility=3)
    function = make.function(make.role(ALL_SQS), timeout=3)
    mapping = make.mapping(function, make.arn(url), BatchSize=1)
    make.send(url, "hello")
    outcome = _poll(poller, mapping["UUID"])
    assert outcome is not None
    assert (outcome.function_arn.split(":")[4], outcome.received, outcome.deleted) == (
        names.SECOND_ACCOUNT_ID,
        1,
        1,
    )
    assert make.depth(url) == (0, 0)  # run and deleted: the function exists in the second account only
