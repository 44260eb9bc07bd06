"""The metrics of a function's event paths, read with one GetMetricData request (paginated): each queue's
AWS/SQS metrics, the function's asynchronous-invocation and function URL metrics (AWS/Lambda) and each
subscribed topic's deliveries (AWS/SNS), each reduced over the window to one figure."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from mcp_server.targets import Target
from mcp_server.tools.metrics import function_dimensions

Reduction = Literal["latest", "sum", "max"]
Key = tuple[str, str]  # (the queue's or topic's ARN, or "function"; the response field it fills)
PERIOD_SECONDS = 60
MAX_QUERIES = 500  # GetMetricData's most queries per request
FUNCTION = "function"
# (response field, metric, statistic, reduction over the window's minutes)
QUEUE_METRICS: tuple[tuple[str, str, str, Reduction], ...] = (
    ("oldest_message_age_seconds", "ApproximateAgeOfOldestMessage", "Maximum", "latest"),
    ("messages_sent", "NumberOfMessagesSent", "Sum", "sum"),
    ("messages_received", "NumberOfMessagesReceived", "Sum", "sum"),
    ("messages_deleted", "NumberOfMessagesDeleted", "Sum", "sum"),
)
ASYNC_METRICS: tuple[tuple[str, str, str, Reduction], ...] = (
    ("AsyncEventsReceived", "AsyncEventsReceived", "Sum", "sum"),
    ("AsyncEventsDropped", "AsyncEventsDropped", "Sum", "sum"),
    ("AsyncEventAgeMaxMs", "AsyncEventAge", "Maximum", "max"),
    ("DeadLetterErrors", "DeadLetterErrors", "Sum", "sum"),
    ("DestinationDeliveryFailures", "DestinationDeliveryFailures", "Sum", "sum"),
)
# A stream mapping's lag (AWS/Lambda, the function's dimensions).
STREAM_METRICS: tuple[tuple[str, str, str, Reduction], ...] = (
    ("iterator_age_ms", "IteratorAge", "Maximum", "latest"),
    ("iterator_age_max_ms", "IteratorAge", "Maximum", "max"),
)
URL_METRICS: tuple[tuple[str, str, str, Reduction], ...] = (
    ("requests", "UrlRequestCount", "Sum", "sum"),
    ("client_errors", "Url4xxCount", "Sum", "sum"),
    ("server_errors", "Url5xxCount", "Sum", "sum"),
)
# A REST API stage's figures (ApiName and Stage dimensions), keyed by api_callers.stage_key.
API_METRICS: tuple[tuple[str, str, str, Reduction], ...] = (
    ("requests", "Count", "Sum", "sum"),
    ("client_errors", "4XXError", "Sum", "sum"),
    ("server_errors", "5XXError", "Sum", "sum"),
)
# An HTTP API stage's (ApiId and Stage dimensions; http-api-metrics.html).
HTTP_API_METRICS: tuple[tuple[str, str, str, Reduction], ...] = (
    ("requests", "Count", "Sum", "sum"),
    ("client_errors", "4xx", "Sum", "sum"),
    ("server_errors", "5xx", "Sum", "sum"),
)
# A stage's figures' key, its dimensions, and whether it is an HTTP API's.
ApiStageMetrics = tuple[str, tuple[tuple[str, str], ...], bool]
TOPIC_METRICS: tuple[tuple[str, str, str, Reduction], ...] = (
    ("notifications_failed", "NumberOfNotificationsFailed", "Sum", "sum"),
    ("notifications_delivered", "NumberOfNotificationsDelivered", "Sum", "sum"),
)


@dataclass(frozen=True)
class Query:
    key: Key
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str
    reduction: Reduction


def _last_part(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


def queries(
    target: Target,
    queue_arns: list[str],
    topic_arns: list[str],
    url: bool = False,
    api_stages: tuple[ApiStageMetrics, ...] = (),
    stream: bool = False,
) -> list[Query]:
    """Every metric the answer shows, for these queues and topics and the target function (its URL's and
    stream mappings' too, when it has them), and for the API stages in front of it."""
    function = tuple((d["Name"], d["Value"]) for d in function_dimensions(target))
    return [
        *(
            Query((arn, field), "AWS/SQS", metric, (("QueueName", _last_part(arn)),), stat, reduction)
            for arn in queue_arns
            for field, metric, stat, reduction in QUEUE_METRICS
        ),
        *(
            Query((FUNCTION, field), "AWS/Lambda", metric, function, stat, reduction)
            for field, metric, stat, reduction in (
                *ASYNC_METRICS,
                *(URL_METRICS if url else ()),
                *(STREAM_METRICS if stream else ()),
            )
        ),
        *(
            Query((arn, field), "AWS/SNS", metric, (("TopicName", _last_part(arn)),), stat, reduction)
            for arn in topic_arns
            for field, metric, stat, reduction in TOPIC_METRICS
        ),
        *(
            Query((key, field), "AWS/ApiGateway", metric, dimensions, stat, reduction)
            for key, dimensions, is_http in api_stages
            for field, metric, stat, reduction in (HTTP_API_METRICS if is_http else API_METRICS)
        ),
    ]


def _request(query: Query, query_id: str) -> dict[str, Any]:
    metric = {
        "Namespace": query.namespace,
        "MetricName": query.metric,
        "Dimensions": [{"Name": name, "Value": value} for name, value in query.dimensions],
    }
    return {"Id": query_id, "MetricStat": {"Metric": metric, "Period": PERIOD_SECONDS, "Stat": query.stat}}


def _reduce(points: list[tuple[datetime, float]], reduction: Reduction) -> float | None:
    if not points:
        return None
    if reduction == "latest":
        return round(max(points)[1], 2)
    values = [value for _, value in points]
    return round(sum(values) if reduction == "sum" else max(values), 2)


def read(cloudwatch: Any, wanted: list[Query], start: datetime, end: datetime) -> dict[Key, float | None]:
    """Each query's figure over the window (None: no datapoint), ``MAX_QUERIES`` queries per request."""
    points: dict[str, list[tuple[datetime, float]]] = defaultdict(list)
    ids = {f"q{index}": query for index, query in enumerate(wanted)}
    requests = [_request(query, query_id) for query_id, query in ids.items()]
    for first in range(0, len(requests), MAX_QUERIES):
        pages = cloudwatch.get_paginator("get_metric_data").paginate(
            MetricDataQueries=requests[first : first + MAX_QUERIES], StartTime=start, EndTime=end
        )
        for result in (result for page in pages for result in page.get("MetricDataResults", [])):
            points[result["Id"]] += zip(result["Timestamps"], result["Values"], strict=True)
    return {query.key: _reduce(points[query_id], query.reduction) for query_id, query in ids.items()}
