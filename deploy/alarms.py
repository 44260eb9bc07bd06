"""The alarms of a watched function: Errors, Throttles and log silence, on the alerts topic. The deploy
template creates them for the workload it watches, the sandbox for each of its functions."""

from __future__ import annotations

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
