"""The ``AWS/Lambda`` metrics the Lambda service publishes, one set of datapoints per invocation outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Any

NAMESPACE = "AWS/Lambda"


def _dimension_sets(function_name: str, qualifier: str | None) -> list[Dimensions]:
    sets = [[{"Name": "FunctionName", "Value": function_name}]]
    if qualifier:
        sets.append(
            [
                {"Name": "FunctionName", "Value": function_name},
                {"Name": "Resource", "Value": f"{function_name}:{qualifier}"},
            ]
        )
    return sets


Datapoint = tuple[str, float, str]  # metric name, value, unit
Dimensions = list[dict[str, str]]


def put_datapoints(
    cloudwatch: Any, namespace: str, values: list[Datapoint], dimension_sets: list[Dimensions], at: datetime
) -> None:
    """Each value under each set of dimensions, as a service publishes one event's datapoints."""
    cloudwatch.put_metric_data(
        Namespace=namespace,
        MetricData=[
            {"MetricName": name, "Dimensions": dimensions, "Timestamp": at, "Value": value, "Unit": unit}
            for dimensions in dimension_sets
            for name, value, unit in values
        ],
    )


def publish(
    cloudwatch: Any,
    *,
    function_name: str,
    qualifier: str | None,
    at: datetime,
    throttled: bool,
    failed: bool = False,
    duration_ms: float = 0.0,
    concurrent: int = 0,
) -> None:
    """A throttled request counts only in Throttles; any other counts in Invocations, Errors (0 or 1),
    Duration and ConcurrentExecutions, as Lambda reports them."""
    values: list[Datapoint] = (
        [("Throttles", 1, "Count")]
        if throttled
        else [
            ("Invocations", 1, "Count"),
            ("Errors", 1 if failed else 0, "Count"),
            ("Throttles", 0, "Count"),
            ("Duration", duration_ms, "Milliseconds"),
            ("ConcurrentExecutions", concurrent, "Count"),
        ]
    )
    put_datapoints(cloudwatch, NAMESPACE, values, _dimension_sets(function_name, qualifier), at)


ASYNC_UNITS = {
    "AsyncEventsReceived": "Count",
    "AsyncEventAge": "Milliseconds",
    "AsyncEventsDropped": "Count",
    "DeadLetterErrors": "Count",
    "DestinationDeliveryFailures": "Count",
}


def publish_async(cloudwatch: Any, *, function_name: str, name: str, value: float, at: datetime) -> None:
    """One of Lambda's asynchronous invocation metrics (``ASYNC_UNITS``), dimension ``FunctionName``."""
    cloudwatch.put_metric_data(
        Namespace=NAMESPACE,
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": "FunctionName", "Value": function_name}],
                "Timestamp": at,
                "Value": value,
                "Unit": ASYNC_UNITS[name],
            }
        ],
    )
