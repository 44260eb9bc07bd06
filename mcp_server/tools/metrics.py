"""``get_function_metrics``: the function's AWS/Lambda metrics minute by minute (one GetMetricData request,
paginated) and its peak memory from the reports of its log group (text ``REPORT`` lines and JSON
``platform.report`` records), the two read concurrently; totals
and derived figures (error rate, first failing minute, duration against the timeout, memory against the
size) cover the whole window, while the listed minutes are bounded."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp_server.contract import FunctionMetricsResponse, GetFunctionMetricsArgs, MetricMinute
from mcp_server.contract.metrics import MAX_METRIC_MINUTES, MAX_REPORT_LINES
from mcp_server.reads import Read
from mcp_server.targets import Target
from mcp_server.tools.context import ToolContext
from mcp_server.tools.envelope import place
from mcp_server.tools.lambda_config import function_configuration, log_group

NAMESPACE = "AWS/Lambda"
MINUTE = timedelta(minutes=1)
# One lookup per log format: the text REPORT line, the JSON platform.report record.
REPORT_PATTERNS = ('"REPORT RequestId"', '"platform.report"')
# (query id, which is the MetricMinute field it fills; metric; statistic)
QUERIES: tuple[tuple[str, str, str], ...] = (
    ("invocations", "Invocations", "Sum"),
    ("errors", "Errors", "Sum"),
    ("throttles", "Throttles", "Sum"),
    ("duration_avg_ms", "Duration", "Average"),
    ("duration_max_ms", "Duration", "Maximum"),
    ("concurrent_executions_max", "ConcurrentExecutions", "Maximum"),
)


def metric_window(now: datetime, minutes: int) -> tuple[datetime, datetime]:
    """``minutes`` whole minutes ending with the end of the current one (period-aligned, as CloudWatch
    prefers)."""
    end = now.astimezone(UTC).replace(second=0, microsecond=0) + MINUTE
    return end - minutes * MINUTE, end


def function_dimensions(target: Target) -> list[dict[str, str]]:
    """A version's or alias's own series carries the Resource dimension; FunctionName alone sums them all."""
    dimensions = [{"Name": "FunctionName", "Value": target.function_name}]
    if target.qualifier:
        dimensions.append({"Name": "Resource", "Value": target.function})
    return dimensions


def _metric_results(
    cloudwatch: Any, dimensions: list[dict[str, str]], start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """Every query's results, page by page (``NextToken``), from one GetMetricData request."""
    queries = [
        {
            "Id": query_id,
            "MetricStat": {
                "Metric": {"Namespace": NAMESPACE, "MetricName": metric, "Dimensions": dimensions},
                "Period": int(MINUTE.total_seconds()),
                "Stat": stat,
            },
        }
        for query_id, metric, stat in QUERIES
    ]
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=start, EndTime=end, ScanBy="TimestampAscending"
    )
    return [result for page in pages for result in page.get("MetricDataResults", [])]


def _minutes(results: list[dict[str, Any]]) -> list[MetricMinute]:
    """Every minute with a datapoint, oldest first, from GetMetricData results (query id = field name)."""
    by_minute: dict[datetime, dict[str, float]] = defaultdict(dict)
    for result in results:
        for stamp, value in zip(result["Timestamps"], result["Values"], strict=True):
            by_minute[stamp.astimezone(UTC)][result["Id"]] = round(value, 2)
    return [
        MetricMinute(timestamp=stamp.isoformat(), **values) for stamp, values in sorted(by_minute.items())
    ]


def _ratio(part: float | None, whole: float) -> float | None:
    return round(part / whole, 4) if part is not None and whole else None


def _metric_fields(series: list[MetricMinute], timeout_seconds: int) -> dict[str, Any]:
    """The response's metric fields: the newest minutes, and totals and derived figures over all of them."""
    invocations = sum(m.invocations for m in series)
    errors = sum(m.errors for m in series)
    longest = max((m.duration_max_ms for m in series if m.duration_max_ms is not None), default=None)
    return {
        "minutes": series[-MAX_METRIC_MINUTES:],
        "minutes_with_data": len(series),
        "invocations": invocations,
        "errors": errors,
        "throttles": sum(m.throttles for m in series),
        "error_rate": _ratio(errors, invocations),
        "first_error_minute": next((m.timestamp for m in series if m.errors), None),
        "first_throttle_minute": next((m.timestamp for m in series if m.throttles), None),
        "max_duration_ms": longest,
        "duration_to_timeout": _ratio(longest, timeout_seconds * 1000),
    }


def _report_events(logs: Any, group: str, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """At most ``MAX_REPORT_LINES`` events mentioning a report (either format), oldest first; none without
    the group."""
    found: dict[Any, dict[str, Any]] = {}
    for pattern in REPORT_PATTERNS:
        pages = logs.get_paginator("filter_log_events").paginate(
            logGroupName=group,
            startTime=int(start.timestamp() * 1000),
            endTime=int(end.timestamp() * 1000),
            filterPattern=pattern,
            PaginationConfig={"MaxItems": MAX_REPORT_LINES, "PageSize": MAX_REPORT_LINES},
        )
        try:
            for event in (event for page in pages for event in page.get("events", [])):
                found.setdefault(event.get("eventId") or (event["timestamp"], event.get("message")), event)
        except logs.exceptions.ResourceNotFoundException:
            return []
    return sorted(found.values(), key=lambda event: event["timestamp"])[:MAX_REPORT_LINES]


def _peak_memory(events: list[dict[str, Any]], version: str | None) -> tuple[int | None, int]:
    """The highest Max Memory Used of the reports (in ``version``'s log streams when given), and how many
    reports there were."""
    used = [
        placed.figures.max_memory_used_mb if placed.figures else None
        for event, placed in zip(events, place(events), strict=True)
        if placed.kind == "report" and (version is None or f"[{version}]" in event.get("logStreamName", ""))
    ]
    return max((mb for mb in used if mb is not None), default=None), len(used)


def _note(
    series: list[MetricMinute] | None,
    events: list[dict[str, Any]] | None,
    report_lines: int | None,
    searched: str,
) -> str | None:
    notes = []
    if series == []:
        notes.append(f"no datapoints in the window for {searched}: no invocation or throttle was recorded")
    if series and len(series) > MAX_METRIC_MINUTES:
        notes.append(
            f"{len(series) - MAX_METRIC_MINUTES} older minutes with data are not listed; totals and first "
            "minutes cover the whole window"
        )
    if report_lines == 0:
        notes.append(
            "no REPORT lines or platform.report records in the window (or no log group): peak memory is "
            "unknown"
        )
    if events is not None and len(events) >= MAX_REPORT_LINES:
        notes.append(
            f"peak memory is over the first {MAX_REPORT_LINES:,} REPORT lines (or platform.report records) "
            "of the window only"
        )
    return "; ".join(notes) or None


def function_metrics(
    ctx: ToolContext, args: GetFunctionMetricsArgs, *, now: datetime | None = None
) -> FunctionMetricsResponse:
    """Metrics of the last ``args.minutes`` minutes up to ``now`` (default: the current time)."""
    config = function_configuration(ctx)
    target = ctx.target
    start, end = metric_window(now or datetime.now(UTC), args.minutes)
    group = log_group(config, target.function_name)
    dimensions = function_dimensions(target)
    searched = f"{NAMESPACE} " + ", ".join(f"{d['Name']}={d['Value']}" for d in dimensions)
    results, events = ctx.reads.many(
        [
            Read(
                "cloudwatch:GetMetricData",
                f"{searched} ({target.account})",
                lambda: _metric_results(ctx.clients.cloudwatch, dimensions, start, end),
                "the function's invocations, errors, throttles, duration and concurrency are unknown",
            ),
            Read(
                "logs:FilterLogEvents",
                f"reports (REPORT lines, platform.report records) of log group {group} ({target.account})",
                lambda: _report_events(ctx.clients.logs, group, start, end),
                "peak memory used is unknown",
            ),
        ]
    )
    series = None if results is None else _minutes(results)
    version = config["Version"] if target.qualifier else None
    peak, report_lines = (None, None) if events is None else _peak_memory(events, version)
    return FunctionMetricsResponse(
        function_name=target.function,
        window_start=start.isoformat(),
        window_end=end.isoformat(),
        **(_metric_fields(series, config["Timeout"]) if series is not None else {"minutes": []}),
        timeout_seconds=config["Timeout"],
        memory_size_mb=config["MemorySize"],
        peak_memory_used_mb=peak,
        memory_to_size=_ratio(peak, config["MemorySize"]),
        log_group=group,
        report_lines=report_lines,
        note=_note(series, events, report_lines, searched),
        gaps=ctx.reads.gaps,
    )
