"""CloudWatch alarm notifications as AWS sends them to SNS, and SNS Lambda events as Lambda receives them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

Metric = Literal["Errors", "Throttles"]

_REGION_NAMES = {"ca-central-1": "Canada (Central)", "us-east-1": "US East (N. Virginia)"}


def alarm_name(function_name: str, metric: Metric) -> str:
    return f"{function_name}-{metric.lower()}"


def alarm_message(
    *,
    function_name: str,
    metric: Metric,
    value: float,
    topic_arn: str,
    region: str,
    account_id: str,
    now: datetime,
) -> tuple[str, dict[str, Any]]:
    """The (Subject, Message) CloudWatch publishes when a Lambda Errors/Throttles alarm enters ALARM."""
    name = alarm_name(function_name, metric)
    region_name = _REGION_NAMES.get(region, region)
    stamp = now.astimezone(UTC)
    message = {
        "AlarmName": name,
        "AlarmDescription": f"{metric} of Lambda function {function_name}",
        "AWSAccountId": account_id,
        "AlarmConfigurationUpdatedTimestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
        "NewStateValue": "ALARM",
        "NewStateReason": (
            "Threshold Crossed: 1 out of the last 1 datapoints "
            f"[{value:.1f} ({stamp:%d/%m/%y %H:%M:%S})] was greater than or equal to the threshold (1.0) "
            "(minimum 1 datapoint for OK -> ALARM transition)."
        ),
        "StateChangeTime": stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000",
        "Region": region_name,
        "AlarmArn": f"arn:aws:cloudwatch:{region}:{account_id}:alarm:{name}",
        "OldStateValue": "OK",
        "OKActions": [],
        "AlarmActions": [topic_arn],
        "InsufficientDataActions": [],
        "Trigger": {
            "MetricName": metric,
            "Namespace": "AWS/Lambda",
            "StatisticType": "Statistic",
            "Statistic": "SUM",
            "Unit": None,
            "Dimensions": [{"value": function_name, "name": "FunctionName"}],
            "Period": 60,
            "EvaluationPeriods": 1,
            "DatapointsToAlarm": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Threshold": 1.0,
            "TreatMissingData": "notBreaching",
            "EvaluateLowSampleCountPercentile": "",
        },
    }
    return f'ALARM: "{name}" in {region_name}', message


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


def drain_sns_events(
    sqs: Any, queue_url: str, subscription_arn: str, *, wait_seconds: int = 0
) -> list[dict[str, Any]]:
    """Receive every notification waiting on the trigger queue as SNS Lambda events (one record each),
    deleting them from the queue as Lambda's poller would after a successful handoff."""
    events: list[dict[str, Any]] = []
    while True:
        response = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds if not events else 0
        )
        messages = response.get("Messages", [])
        if not messages:
            return events
        for message in messages:
            events.append(sns_event_from_envelope(json.loads(message["Body"]), subscription_arn))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
