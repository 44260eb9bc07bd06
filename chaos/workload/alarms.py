"""The alarms of a watched function (the sandbox world and the deploy template create the same ones), and
SNS Lambda events as Lambda receives them."""

from __future__ import annotations

import json
from typing import Any, Literal

Metric = Literal["Errors", "Throttles"]
Alarm = dict[str, Any]  # PutMetricAlarm parameters, which are also AWS::CloudWatch::Alarm properties

PERIOD_SECONDS = 60


def alarm_name(function_name: str, kind: str) -> str:
    return f"{function_name}-{kind.lower()}"


def _metric_alarm(function_name: str, metric: Metric, topic_arn: Any) -> Alarm:
    return {
        "AlarmName": alarm_name(function_name, metric),
        "AlarmDescription": f"{metric} of Lambda function {function_name}",
        "Namespace": "AWS/Lambda",
        "MetricName": metric,
        "Dimensions": [{"Name": "FunctionName", "Value": function_name}],
        "Statistic": "Sum",
        "Period": PERIOD_SECONDS,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "AlarmActions": [topic_arn],
    }


def _log_silence_alarm(function_name: str, log_group: str, topic_arn: Any) -> Alarm:
    """Invocations arrive while the log group receives nothing: the function runs but cannot log."""

    def stat(query_id: str, namespace: str, metric: str, dimension: str, value: str) -> dict[str, Any]:
        return {
            "Id": query_id,
            "ReturnData": False,
            "MetricStat": {
                "Metric": {
                    "Namespace": namespace,
                    "MetricName": metric,
                    "Dimensions": [{"Name": dimension, "Value": value}],
                },
                "Period": PERIOD_SECONDS,
                "Stat": "Sum",
            },
        }

    return {
        "AlarmName": alarm_name(function_name, "log-silence"),
        "AlarmDescription": f"Lambda function {function_name} is invoked but {log_group} receives no events",
        "Metrics": [
            stat("invocations", "AWS/Lambda", "Invocations", "FunctionName", function_name),
            stat("logevents", "AWS/Logs", "IncomingLogEvents", "LogGroupName", log_group),
            {
                "Id": "silent",
                "Label": "invoked without log events",
                "Expression": "IF(invocations > 0 AND FILL(logevents, 0) == 0, 1, 0)",
                "ReturnData": True,
            },
        ],
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "AlarmActions": [topic_arn],
    }


def function_alarms(function_name: str, log_group: str, topic_arn: Any) -> list[Alarm]:
    """The three alarms every watched function has: Errors, Throttles and log silence. ``topic_arn``
    (and the names) may be CloudFormation intrinsics: the deploy template builds the same alarms."""
    return [
        _metric_alarm(function_name, "Errors", topic_arn),
        _metric_alarm(function_name, "Throttles", topic_arn),
        _log_silence_alarm(function_name, log_group, topic_arn),
    ]


# SNS spells two keys differently in the SQS envelope and in the Lambda event.
_ENVELOPE_TO_EVENT_KEYS = {"SigningCertURL": "SigningCertUrl", "UnsubscribeURL": "UnsubscribeUrl"}


def sns_event_from_envelope(envelope: dict[str, Any], subscription_arn: str) -> dict[str, Any]:
    """Turn an SNS notification delivered to SQS into the event Lambda's SNS trigger would deliver."""
    record = {_ENVELOPE_TO_EVENT_KEYS.get(k, k): v for k, v in envelope.items()}
    record.setdefault("Subject", None)
    record.setdefault("MessageAttributes", {})
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": subscription_arn,
                "Sns": record,
            }
        ]
    }


def drain_envelopes(sqs: Any, queue_url: str, *, wait_seconds: int = 0) -> list[dict[str, Any]]:
    """Receive and delete every SNS notification waiting on an SQS queue subscribed to a topic: the
    envelopes (Subject, Message, MessageAttributes, ...), oldest first as far as SQS tells."""
    envelopes: list[dict[str, Any]] = []
    while True:
        response = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds if not envelopes else 0
        )
        messages = response.get("Messages", [])
        if not messages:
            return envelopes
        for message in messages:
            envelopes.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def drain_sns_events(
    sqs: Any, queue_url: str, subscription_arn: str, *, wait_seconds: int = 0
) -> list[dict[str, Any]]:
    """Receive every notification waiting on the trigger queue as SNS Lambda events (one record each),
    deleting them from the queue as Lambda's poller would after a successful handoff."""
    return [
        sns_event_from_envelope(envelope, subscription_arn)
        for envelope in drain_envelopes(sqs, queue_url, wait_seconds=wait_seconds)
    ]
