"""Alarm messages to incident signals: single-metric and metric-math alarms on one Lambda function."""

from __future__ import annotations

import json
from typing import Any

import pytest

from supervisor.incident.signals import MalformedMessage, parse_record


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
        )
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
        parse_record(_record(metrics))
