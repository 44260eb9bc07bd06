"""Alarm messages to incident signals: single-metric and metric-math alarms on one Lambda function, and
alarms on one SQS queue or SNS topic."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from supervisor.incident.signals import AlarmedResource, MalformedMessage, parse_record

EVENTS = Path(__file__).parent / "events"
NOW = datetime(2026, 11, 22, 23, 10, 2, tzinfo=UTC)  # just after the records below were published


def _stat(query_id: str, namespace: str, metric: str, dimension: str, value: str) -> dict[str, Any]:
    return {
        "Id": query_id,
        "MetricStat": {
            "Metric": {
                "Dimensions": [{"value": value, "name": dimension}],
                "MetricName": metric,
                "Namespace": namespace,
            },
            "Period": 60,
            "Stat": "Sum",
        },
        "ReturnData": False,
    }


def _record(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    message = {
        "AlarmName": "data-processor-log-silence",
        "NewStateValue": "ALARM",
        "NewStateReason": "Threshold Crossed: 1 out of the last 1 datapoints [1.0 (22/11/26 23:10:00)] was "
        "greater than or equal to the threshold (1.0) (minimum 1 datapoint for OK -> ALARM transition).",
        "StateChangeTime": "2026-11-22T23:10:01.250+0000",
        "Trigger": {"Period": 60, "EvaluationPeriods": 1, "Threshold": 1.0, "Metrics": metrics},
    }
    return {
        "Sns": {"MessageId": "m-1", "Timestamp": "2026-11-22T23:10:01.300Z", "Message": json.dumps(message)}
    }


SILENT = {
    "Id": "silent",
    "Label": "invoked without log events",
    "Expression": "IF(invocations > 0 AND FILL(logevents, 0) == 0, 1, 0)",
    "ReturnData": True,
}


def test_a_metric_math_alarm_names_its_function_and_the_expression_it_alarms_on() -> None:
    signal = parse_record(
        _record(
            [
                _stat("invocations", "AWS/Lambda", "Invocations", "FunctionName", "data-processor"),
                _stat(
                    "logevents", "AWS/Logs", "IncomingLogEvents", "LogGroupName", "/aws/lambda/data-processor"
                ),
                SILENT,
            ]
        ),
        now=NOW,
    )
    assert (signal.source, signal.function_name) == ("cloudwatch_alarm", "data-processor")
    assert signal.error_type == "invoked without log events"
    assert signal.detail.startswith("data-processor-log-silence: Threshold Crossed")


@pytest.mark.parametrize(
    ("metrics", "reason"),
    [
        (
            [
                _stat("a", "AWS/Lambda", "Errors", "FunctionName", "one"),
                _stat("b", "AWS/Lambda", "Errors", "FunctionName", "two"),
                SILENT,
            ],
            "exactly one function",
        ),
        ([_stat("l", "AWS/Logs", "IncomingLogEvents", "LogGroupName", "/x"), SILENT], "exactly one function"),
        ([_stat("a", "AWS/Lambda", "Errors", "Resource", "one:live"), SILENT], "no FunctionName dimension"),
    ],
)
def test_a_metric_math_alarm_that_does_not_name_one_function_is_rejected(
    metrics: list[dict[str, Any]], reason: str
) -> None:
    with pytest.raises(MalformedMessage, match=reason):
        parse_record(_record(metrics), now=NOW)


def test_a_signal_is_placed_by_its_alarm_arn_else_its_function_arn_else_its_topic() -> None:
    topic = "arn:aws:sns:eu-west-1:111111111111:incident-alerts"
    alarm = json.loads(_record([])["Sns"]["Message"]) | {
        "AlarmArn": "arn:aws:cloudwatch:ca-central-1:222222222222:alarm:data-processor-errors",
        "Trigger": {
            "MetricName": "Errors",
            "Namespace": "AWS/Lambda",
            "Dimensions": [{"name": "FunctionName", "value": "data-processor"}],
        },
    }

    def record(message: dict[str, Any], topic_arn: str | None = topic) -> dict[str, Any]:
        sns = {"MessageId": "m-1", "Timestamp": "2026-11-22T23:10:01.300Z", "Message": json.dumps(message)}
        return {"Sns": sns | ({"TopicArn": topic_arn} if topic_arn else {})}

    signal = parse_record(record(alarm), now=NOW)
    assert (signal.account, signal.region) == ("222222222222", "ca-central-1")
    arn = "arn:aws:lambda:us-east-2:333333333333:function:orders-api"
    direct = {"lambda_name": arn, "error_type": "Errors"}
    signal = parse_record(record(direct), now=NOW)
    assert (signal.function_name, signal.account, signal.region) == (
        "orders-api",
        "333333333333",
        "us-east-2",
    )
    signal = parse_record(record(direct | {"lambda_name": "orders-api"}), now=NOW)
    assert (signal.account, signal.region) == ("111111111111", "eu-west-1")
    signal = parse_record(record(direct | {"lambda_name": "orders-api"}, topic_arn=None), now=NOW)
    assert (signal.account, signal.region) == (None, None)


# --------------------------------------------------------------------------- alarms on a queue or a topic
# The samples in tests/events are shaped as CloudWatch publishes an alarm to SNS (AWS's own sample:
# https://github.com/aws/aws-lambda-go/blob/main/events/testdata/cloudwatch-alarm-sns-payload-single-metric.json,
# lower-case "name"/"value" dimensions, StatisticType, AlarmArn), with an AWS/SQS metric of one QueueName
# (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html)
# or an AWS/SNS metric of one TopicName (https://docs.aws.amazon.com/sns/latest/dg/sns-monitoring-using-cloudwatch.html;
# NumberOfNotificationsFailed by TopicName in https://github.com/aws/aws-cli/blob/develop/awscli/examples/cloudwatch/list-metrics.rst).


def _sample(name: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((EVENTS / name).read_text())["Records"][0]
    return record


@pytest.mark.parametrize(
    ("sample", "metric", "resource"),
    [
        (
            "sns_alarm_queue_age.json",
            "ApproximateAgeOfOldestMessage",
            AlarmedResource(
                "AWS/SQS", "QueueName", "orders-queue", "arn:aws:sqs:ca-central-1:123456789012:orders-queue"
            ),
        ),
        (
            "sns_alarm_dlq_depth.json",
            "ApproximateNumberOfMessagesVisible",
            AlarmedResource(
                "AWS/SQS",
                "QueueName",
                "orders-queue-dlq",
                "arn:aws:sqs:ca-central-1:123456789012:orders-queue-dlq",
            ),
        ),
        (
            "sns_alarm_topic_failed.json",
            "NumberOfNotificationsFailed",
            AlarmedResource(
                "AWS/SNS", "TopicName", "order-events", "arn:aws:sns:ca-central-1:123456789012:order-events"
            ),
        ),
    ],
)
def test_an_alarm_on_a_queue_or_topic_names_the_resource_and_no_function_yet(
    sample: str, metric: str, resource: AlarmedResource
) -> None:
    signal = parse_record(_sample(sample), now=NOW)
    assert (signal.source, signal.function_name, signal.error_type) == ("cloudwatch_alarm", "", metric)
    assert signal.alarmed_resource == resource
    assert (signal.account, signal.region) == ("123456789012", "ca-central-1")
    told = signal.incident()
    assert told["alarmed_resource"] == {
        "namespace": resource.namespace,
        "dimension": resource.dimension,
        "value": resource.value,
        "arn": resource.arn,
    }


def test_the_resource_is_placed_by_the_alarm_arn_not_the_alerts_topic() -> None:
    record = _sample("sns_alarm_dlq_depth.json")
    message = json.loads(record["Sns"]["Message"])
    message["AlarmArn"] = "arn:aws:cloudwatch:eu-west-1:222222222222:alarm:orders-queue-dlq-depth"
    record["Sns"]["Message"] = json.dumps(message)
    signal = parse_record(record, now=NOW)
    assert signal.alarmed_resource is not None
    assert signal.alarmed_resource.arn == "arn:aws:sqs:eu-west-1:222222222222:orders-queue-dlq"


def _with_trigger(name: str, **changes: Any) -> dict[str, Any]:
    record = _sample(name)
    message = json.loads(record["Sns"]["Message"])
    for key, value in changes.items():
        if value is None:
            message.pop(key, None)
        elif key == "Trigger":
            message["Trigger"] = message["Trigger"] | value
        else:
            message[key] = value
    record["Sns"]["Message"] = json.dumps(message)
    return record


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (
            _with_trigger("sns_alarm_queue_age.json", Trigger={"Dimensions": []}),
            "alarm on AWS/SQS has no QueueName dimension: it names no one resource",
        ),
        (
            _with_trigger(
                "sns_alarm_topic_failed.json",
                Trigger={
                    "Dimensions": [{"name": "TopicName", "value": "a"}, {"name": "TopicName", "value": "b"}]
                },
            ),
            "alarm on AWS/SNS has no TopicName dimension: it names no one resource",
        ),
        (
            _with_trigger(
                "sns_alarm_queue_age.json", Trigger={"Dimensions": [{"name": "QueueName", "value": "a b"}]}
            ),
            "QueueName dimension 'a b' is not a valid name",
        ),
        (
            _with_trigger("sns_alarm_queue_age.json", AlarmArn=None),
            "alarm on AWS/SQS has no AlarmArn: the QueueName cannot be placed",
        ),
        (
            _with_trigger("sns_alarm_queue_age.json", Trigger={"Namespace": "AWS/EC2"}),
            "alarm watches namespace 'AWS/EC2', not AWS/Lambda",
        ),
    ],
)
def test_an_alarm_that_names_no_one_placed_queue_or_topic_is_rejected(
    record: dict[str, Any], reason: str
) -> None:
    with pytest.raises(MalformedMessage) as rejected:
        parse_record(record, now=NOW)
    assert rejected.value.reason == reason
