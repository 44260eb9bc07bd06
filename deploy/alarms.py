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


def _stat(query_id: str, namespace: str, metric: str, dimension: str, value: str) -> dict[str, Any]:
    """A metric-math alarm's query of one metric's one-minute Sum, not itself alarmed on."""
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


def _math_alarm(
    name: str,
    description: str,
    queries: list[dict[str, Any]],
    expression: tuple[str, str, str],
    topic_arn: Any,
) -> Alarm:
    """A metric-math alarm on ``expression`` (id, label, expression over the queries' ids), at 1 or more."""
    query_id, label, text = expression
    return {
        "AlarmName": name,
        "AlarmDescription": description,
        "Metrics": [*queries, {"Id": query_id, "Label": label, "Expression": text, "ReturnData": True}],
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "AlarmActions": [topic_arn],
    }


def _log_silence_alarm(function_name: str, log_group: str, topic_arn: Any) -> Alarm:
    """Invocations arrive while the log group receives nothing: the function runs but cannot log."""
    return _math_alarm(
        alarm_name(function_name, "log-silence"),
        f"Lambda function {function_name} is invoked but {log_group} receives no events",
        [
            _stat("invocations", "AWS/Lambda", "Invocations", "FunctionName", function_name),
            _stat("logevents", "AWS/Logs", "IncomingLogEvents", "LogGroupName", log_group),
        ],
        ("silent", "invoked without log events", "IF(invocations > 0 AND FILL(logevents, 0) == 0, 1, 0)"),
        topic_arn,
    )


def function_alarms(function_name: str, log_group: str, topic_arn: Any) -> list[Alarm]:
    """The three alarms every watched function has: Errors, Throttles and log silence. ``topic_arn``
    (and the names) may be CloudFormation intrinsics: the deploy template builds the same alarms."""
    return [
        _metric_alarm(function_name, "Errors", topic_arn),
        _metric_alarm(function_name, "Throttles", topic_arn),
        _log_silence_alarm(function_name, log_group, topic_arn),
    ]


QUEUE_AGE_THRESHOLD_SECONDS = 300  # the template's default for ApproximateAgeOfOldestMessage


def _threshold_alarm(
    name: str,
    description: str,
    metric: tuple[str, str, str, str],
    statistic: str,
    threshold: Any,
    topic_arn: Any,
) -> Alarm:
    namespace, metric_name, dimension, value = metric
    return {
        "AlarmName": name,
        "AlarmDescription": description,
        "Namespace": namespace,
        "MetricName": metric_name,
        "Dimensions": [{"Name": dimension, "Value": value}],
        "Statistic": statistic,
        "Period": PERIOD_SECONDS,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "Threshold": threshold,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
        "AlarmActions": [topic_arn],
    }


def source_queue_alarms(queue_name: str, topic_arn: Any, age_threshold_seconds: Any) -> list[Alarm]:
    """A queue a function consumes: its oldest message keeps ageing (the consumer stopped or fails)."""
    return [
        _threshold_alarm(
            f"{queue_name}-oldest-message-age",
            f"Messages wait in {queue_name}: its oldest is {age_threshold_seconds} s old or more",
            ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", queue_name),
            "Maximum",
            age_threshold_seconds,
            topic_arn,
        )
    ]


def stream_alarms(function_name: str, topic_arn: Any, age_threshold_ms: Any) -> list[Alarm]:
    """A function reading a stream: the records it is sent keep getting older (it falls behind, or a batch
    it fails on is retried while the shard's later records wait)."""
    return [
        _threshold_alarm(
            alarm_name(function_name, "IteratorAge"),
            f"Records wait for {function_name}: the newest batch's last record was {age_threshold_ms} ms old "
            "or more when sent",
            ("AWS/Lambda", "IteratorAge", "FunctionName", function_name),
            "Maximum",
            age_threshold_ms,
            topic_arn,
        )
    ]


def dead_letter_queue_alarms(queue_name: str, topic_arn: Any) -> list[Alarm]:
    """A dead-letter queue (of a queue's redrive policy, or of a function): anything in it is work lost."""
    return [
        _threshold_alarm(
            f"{queue_name}-depth",
            f"Messages arrived in the dead-letter queue {queue_name}",
            ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", queue_name),
            "Maximum",
            1,
            topic_arn,
        )
    ]


def async_alarms(function_name: str, topic_arn: Any) -> list[Alarm]:
    """A function invoked asynchronously: events dropped, and failed events that reach no dead-letter
    queue or destination."""
    return [
        _threshold_alarm(
            alarm_name(function_name, metric),
            f"{metric} of Lambda function {function_name}",
            ("AWS/Lambda", metric, "FunctionName", function_name),
            "Sum",
            1,
            topic_arn,
        )
        for metric in ("AsyncEventsDropped", "DeadLetterErrors", "DestinationDeliveryFailures")
    ]


def url_alarms(function_name: str, topic_arn: Any) -> list[Alarm]:
    """A function called through its function URL: requests answered 4XX (a caller refused, before the
    function runs) or 5XX (the function failed), which its Errors alarm does not all see."""
    return [
        _threshold_alarm(
            alarm_name(function_name, metric),
            f"{metric} of the function URL of Lambda function {function_name}",
            ("AWS/Lambda", metric, "FunctionName", function_name),
            "Sum",
            1,
            topic_arn,
        )
        for metric in ("Url4xxCount", "Url5xxCount")
    ]


def api_alarms(api_name: str, function_name: str, topic_arn: Any) -> list[Alarm]:
    """A REST API whose routes invoke a function: requests it answered 5XX, which the function's own alarms
    miss when the function succeeded but the API could not use its answer, or may not invoke it. A
    metric-math alarm, so that it names the function: the function's Invocations are read beside the API's
    5XXError and weigh nothing (the supervisor opens the incident on the one function whose AWS/Lambda
    metrics an alarm reads)."""
    return [
        _math_alarm(
            f"{api_name}-5xxerror",
            f"5XXError of REST API {api_name}, in front of function {function_name}",
            [
                _stat("errors", "AWS/ApiGateway", "5XXError", "ApiName", api_name),
                _stat("invocations", "AWS/Lambda", "Invocations", "FunctionName", function_name),
            ],
            ("answered5xx", "ApiGateway5XXError", "errors + 0 * FILL(invocations, 0)"),
            topic_arn,
        )
    ]


def caller_topic_alarms(topic_name: str, topic_arn: Any) -> list[Alarm]:
    """An SNS topic that invokes a function: notifications it could not deliver (the caller refused)."""
    return [
        _threshold_alarm(
            f"{topic_name}-notifications-failed",
            f"SNS topic {topic_name} could not deliver notifications",
            ("AWS/SNS", "NumberOfNotificationsFailed", "TopicName", topic_name),
            "Sum",
            1,
            topic_arn,
        )
    ]
