"""Kinesis event source mappings in the sandbox: Lambda's refusal of a role that cannot read the stream, the
stream defaults it answers with, and the poller: a bad record that blocks its shard (and only its shard),
``IteratorAge``, bisection, retry and age limits with the on-failure destination's record, partial batch
responses and ``LATEST``. Against a real sandbox, staged as the operator.

AWS sources: https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html (event, one batch per shard),
https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html (retries, bisection, the
invocation record), https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-parameters.html (defaults
and bounds), https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html.
"""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from chaos.workload.sqs_poller import FUNCTION_FAILED, OK
from chaos.workload.stream_poller import AGE_EXCEEDED, RETRIES_EXHAUSTED, StreamOutcome, StreamPoller
from tests.conftest import Undo
from tests.stream_stage import (
    FIRST_SHARD,
    LAST_SHARD,
    POLLER_READS,
    STREAM_READS,
    TABLE_STREAM_READS,
    Stage,
    policy,
    table_with_stream,
)


class Seen:
    """The data of every record the stage's function was sent, and each invocation's outcome (the poller
    reads every stream mapping of the account: the world's clickstream is read too, and left out here)."""

    def __init__(self, runtime: LocalLambdaRuntime, function: str) -> None:
        self.invocations: list[Invocation] = []
        runtime.observers.append(self._observe)
        self._function = function

    def _observe(self, invocation: Invocation) -> None:
        if invocation.function_name == self._function:
            self.invocations.append(invocation)

    def processed(self) -> list[str]:
        return [d for i in self.invocations if isinstance(i.result, dict) for d in i.result.get("seen", [])]

    def errors(self) -> list[str]:
        return [str(i.error) for i in self.invocations if i.status == "failed"]


@pytest.fixture
def stage(operator: boto3.Session, undo: Undo) -> Stage:
    return Stage(operator, undo)


@pytest.fixture
def seen(runtime: LocalLambdaRuntime, stage: Stage) -> Seen:
    return Seen(runtime, f"stream-probe-{stage.suffix}")


def _poll(poller: StreamPoller, mapping_uuid: str, passes: int = 1) -> list[StreamOutcome]:
    outcomes = []
    for _ in range(passes):
        outcomes += [o for o in poller.poll_once() if o.uuid == mapping_uuid]
    return outcomes


def _poller(sandbox: Sandbox, runtime: LocalLambdaRuntime, clock: Any = time.time) -> StreamPoller:
    return StreamPoller(runtime, sandbox.session(names.LAMBDA_SERVICE), clock)


def test_a_role_that_cannot_read_the_stream_is_refused_and_answers_carry_the_stream_defaults(
    stage: Stage,
) -> None:
    function = stage.function(stage.role(STREAM_READS[:-1]))

    with pytest.raises(ClientError) as refused:
        stage.mapping(function)

    error = refused.value.response["Error"]
    assert (error["Code"], error["Message"]) == (
        "InvalidParameterValueException",
        f"Cannot access stream {stage.stream_arn}. Please ensure the role can perform the GetRecords, "
        "GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM.",
    )
    stage.iam.put_role_policy(
        RoleName=f"stream-probe-{stage.suffix}",
        PolicyName="stream",
        PolicyDocument=policy({"Effect": "Allow", "Action": POLLER_READS, "Resource": "*"}),
    )
    created = stage.mapping(function)
    stored = stage.lambda_.get_event_source_mapping(UUID=created["UUID"])
    assert {k: stored.get(k) for k in ("MaximumRetryAttempts", "MaximumRecordAgeInSeconds")} == {
        "MaximumRetryAttempts": -1,
        "MaximumRecordAgeInSeconds": -1,
    }
    assert (stored["BisectBatchOnFunctionError"], stored["BatchSize"], stored["DestinationConfig"]) == (
        False,
        100,
        {"OnFailure": {}},
    )
    for bad in ({"MaximumRetryAttempts": 10001}, {"MaximumRecordAgeInSeconds": 59}):
        with pytest.raises(ClientError) as out_of_range:
            stage.lambda_.update_event_source_mapping(UUID=created["UUID"], **bad)
        assert out_of_range.value.response["Error"]["Code"] == "InvalidParameterValueException"


def test_a_bad_record_blocks_its_shard_and_only_its_shard(
    stage: Stage, sandbox: Sandbox, runtime: LocalLambdaRuntime, seen: Seen
) -> None:
    function = stage.function(stage.role(POLLER_READS))
    mapping = stage.mapping(function, BatchSize=2)
    blocked = stage.put(FIRST_SHARD, "a1", "poison", "a3")
    stage.put(LAST_SHARD, "b1", "b2", "b3")
    poller = _poller(sandbox, runtime)

    outcomes = _poll(poller, mapping["UUID"], passes=4)

    assert sorted(seen.processed()) == ["b1", "b2", "b3"]  # a1 went with the poison, a3 waits behind it
    assert seen.errors() == [f"ValueError: cannot parse record {blocked[1]}"] * 4
    assert [o.result for o in outcomes if o.shard_id.endswith("0")] == [FUNCTION_FAILED] * 4
    stored = stage.lambda_.get_event_source_mapping(UUID=mapping["UUID"])
    assert stored["LastProcessingResult"] == FUNCTION_FAILED
    assert sum(_iterator_age(sandbox, function, "SampleCount")) == 4 + 2  # one per batch sent
    assert max(_iterator_age(sandbox, function, "Maximum")) > 0


def _iterator_age(sandbox: Sandbox, function: str, stat: str) -> list[float]:
    cloudwatch = sandbox.session(names.OPERATOR).client("cloudwatch")
    answer = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "age",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/Lambda",
                        "MetricName": "IteratorAge",
                        "Dimensions": [{"Name": "FunctionName", "Value": function}],
                    },
                    "Period": 60,
                    "Stat": stat,
                },
            }
        ],
        StartTime=time.time() - 600,
        EndTime=time.time() + 60,
    )
    return [float(v) for v in answer["MetricDataResults"][0]["Values"]]


def test_bisection_and_a_retry_limit_isolate_the_bad_record_for_the_destination(
    stage: Stage, sandbox: Sandbox, runtime: LocalLambdaRuntime, seen: Seen
) -> None:
    url, queue_arn = stage.queue()
    function = stage.function(stage.role(POLLER_READS))
    settings = {"BisectBatchOnFunctionError": True, "MaximumRetryAttempts": 1}
    mapping = stage.mapping(
        function, BatchSize=4, DestinationConfig={"OnFailure": {"Destination": queue_arn}}, **settings
    )
    sequence = stage.put(FIRST_SHARD, "a1", "a2", "poison", "a4", "a5")
    poller = _poller(sandbox, runtime)

    _poll(poller, mapping["UUID"], passes=8)

    assert seen.processed() == ["a1", "a2", "a4", "a5"]
    messages = stage.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert len(messages) == 1
    record = json.loads(messages[0]["Body"])
    assert record["requestContext"]["condition"] == RETRIES_EXHAUSTED
    assert record["requestContext"]["approximateInvokeCount"] == 2
    assert record["responseContext"]["functionError"] == "Unhandled"
    info = record["KinesisBatchInfo"]
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (
        sequence[2],
        sequence[2],
        1,
    )
    assert info["streamArn"] == stage.stream_arn


def test_a_partial_batch_response_moves_the_checkpoint_to_the_failed_record(
    stage: Stage, sandbox: Sandbox, runtime: LocalLambdaRuntime, seen: Seen
) -> None:
    function = stage.function(stage.role(POLLER_READS), mode="partial")
    mapping = stage.mapping(
        function, BatchSize=3, FunctionResponseTypes=["ReportBatchItemFailures"], MaximumRetryAttempts=1
    )
    stage.put(FIRST_SHARD, "a1", "poison", "a3")
    stage.put(FIRST_SHARD, "a4")
    poller = _poller(sandbox, runtime)

    outcomes = _poll(poller, mapping["UUID"], passes=4)

    # a1 is done with the first batch; the retry starts at the poison (a3 goes with it), the retry limit
    # gives both up, and the shard moves on to a4.
    assert [(o.sent, o.done, o.discarded) for o in outcomes] == [(3, 1, 0), (2, 2, 2), (1, 1, 0)]
    assert seen.processed() == ["a1", "a4"]
    assert [i.status for i in seen.invocations] == ["succeeded"] * 3


def test_records_older_than_the_age_limit_are_discarded_unsent(
    stage: Stage, sandbox: Sandbox, runtime: LocalLambdaRuntime, seen: Seen
) -> None:
    url, queue_arn = stage.queue()
    function = stage.function(stage.role(POLLER_READS))
    mapping = stage.mapping(
        function, MaximumRecordAgeInSeconds=60, DestinationConfig={"OnFailure": {"Destination": queue_arn}}
    )
    stage.put(FIRST_SHARD, "poison")
    later = [time.time()]
    poller = _poller(sandbox, runtime, clock=lambda: later[0])

    first = _poll(poller, mapping["UUID"])
    later[0] += 61
    second = _poll(poller, mapping["UUID"])

    assert [(o.sent, o.result) for o in first + second] == [(1, FUNCTION_FAILED), (0, FUNCTION_FAILED)]
    assert len(seen.invocations) == 1
    body = json.loads(stage.sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"])
    assert body["requestContext"]["condition"] == AGE_EXCEEDED


def test_latest_starts_after_the_records_already_in_the_stream(
    stage: Stage, sandbox: Sandbox, runtime: LocalLambdaRuntime, seen: Seen
) -> None:
    function = stage.function(stage.role(POLLER_READS))
    stage.put(FIRST_SHARD, "old")
    mapping = stage.mapping(function, StartingPosition="LATEST")
    poller = _poller(sandbox, runtime)
    assert _poll(poller, mapping["UUID"]) == []

    stage.put(FIRST_SHARD, "new")
    outcomes = _poll(poller, mapping["UUID"])

    assert [(o.sent, o.result) for o in outcomes] == [(1, OK)]
    assert seen.processed() == ["new"]


def test_a_table_stream_is_polled_alike_and_its_failure_record_names_the_table_stream(
    stage: Stage, sandbox: Sandbox, runtime: LocalLambdaRuntime, seen: Seen
) -> None:
    operator = sandbox.session(names.OPERATOR)
    dynamodb, table = operator.client("dynamodb"), f"clicks-{stage.suffix}"
    stream_arn = table_with_stream(operator, stage.undo, table)
    url, queue_arn = stage.queue()
    function = stage.function(stage.role([*TABLE_STREAM_READS, "sqs:SendMessage"]))
    mapping: dict[str, Any] = stage.lambda_.create_event_source_mapping(
        FunctionName=function,
        EventSourceArn=stream_arn,
        StartingPosition="TRIM_HORIZON",
        BatchSize=4,
        BisectBatchOnFunctionError=True,
        MaximumRetryAttempts=0,
        DestinationConfig={"OnFailure": {"Destination": queue_arn}},
    )
    stage.undo(lambda: stage.lambda_.delete_event_source_mapping(UUID=mapping["UUID"]))
    for n, data in enumerate(("t1", "poison", "t3")):
        dynamodb.put_item(TableName=table, Item={"id": {"S": str(n)}, "data": {"S": data}})
    poller = _poller(sandbox, runtime)

    _poll(poller, mapping["UUID"], passes=6)

    assert seen.processed() == ["t1", "t3"]
    record = json.loads(stage.sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"])
    info = record["DDBStreamBatchInfo"]
    assert (info["streamArn"], info["batchSize"], record["requestContext"]["condition"]) == (
        stream_arn,
        1,
        RETRIES_EXHAUSTED,
    )
