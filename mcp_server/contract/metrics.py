"""``get_function_metrics``: arguments and answer."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments, omitted_when_null
from mcp_server.contract.declaration import ToolDeclaration

MAX_METRIC_MINUTES = 240
MAX_REPORT_LINES = 2_000

MetricMinutes = Annotated[
    int,
    Field(
        ge=5,
        le=1440,
        description="Minutes back from the current minute.",
    ),
]


class GetFunctionMetricsArgs(TargetArguments):
    """Arguments of ``get_function_metrics``: the function's AWS/Lambda metrics, minute by minute."""

    minutes: MetricMinutes = 60


class MetricMinute(ContractModel):
    """One minute with data (minutes without any datapoint are left out)."""

    timestamp: str = Field(description="ISO-8601 start of the minute (UTC).")
    invocations: float = Field(default=0, description="Invocations (Sum); throttled requests not included.")
    errors: float = Field(
        default=0, description="Invocations that ended in an error, timeout or crash (Sum)."
    )
    throttles: float = Field(default=0, description="Requests refused for lack of concurrency (Sum).")
    duration_avg_ms: float | None = Field(default=None, description="Average Duration, milliseconds.")
    duration_max_ms: float | None = Field(default=None, description="Maximum Duration, milliseconds.")
    concurrent_executions_max: float | None = Field(default=None, description="Maximum ConcurrentExecutions.")


class FunctionMetricsResponse(ContractModel):
    """Answer of ``get_function_metrics``: the series and what an on-call engineer derives first. Totals and
    derived figures cover the whole window, even when only the newest minutes are listed."""

    function_name: str = Field(
        description="The function, with ':<version or alias>' when a qualified ARN was asked: then only "
        "that version's or alias's metrics (the 'Resource' dimension) and REPORT lines are counted."
    )
    window_start: str = Field(description="ISO-8601 start of the window (a minute boundary).")
    window_end: str = Field(description="ISO-8601 end of the window (the end of the current minute).")
    minutes: list[MetricMinute] = Field(
        description=f"Minutes with data, oldest first; at most {MAX_METRIC_MINUTES} (the newest)."
    )
    minutes_with_data: int | None = Field(
        default=None, ge=0, description="Minutes with data in the whole window; None: metrics unreadable."
    )
    invocations: float | None = Field(
        default=None, ge=0, description="Total in the window; None when the metrics could not be read."
    )
    errors: float | None = Field(default=None, ge=0, description="Total in the window.")
    throttles: float | None = Field(default=None, ge=0, description="Total in the window.")
    error_rate: float | None = Field(
        default=None, ge=0, description="errors / invocations over the window; None without invocations."
    )
    first_error_minute: str | None = Field(default=None, description="The first minute with errors.")
    first_throttle_minute: str | None = Field(default=None, description="The first minute with throttles.")
    timeout_seconds: int = Field(description="The configured timeout.")
    max_duration_ms: float | None = Field(default=None, description="The longest Duration in the window.")
    duration_to_timeout: float | None = Field(
        default=None,
        ge=0,
        description="max_duration_ms / the configured timeout: about 1.0 means invocations ran into it.",
    )
    memory_size_mb: int = Field(description="The configured memory size.")
    peak_memory_used_mb: int | None = Field(
        default=None,
        description="Highest 'Max Memory Used' of the reports read (text REPORT lines, JSON platform.report "
        "records); None when none were read.",
    )
    memory_to_size: float | None = Field(
        default=None, ge=0, description="peak_memory_used_mb / memory_size_mb: 1.0 means out of memory."
    )
    log_group: str = Field(description="Where the REPORT lines were read.")
    report_lines: int | None = Field(
        default=None,
        ge=0,
        description=f"Reports read, in either log format (at most {MAX_REPORT_LINES:,}, the oldest in the "
        "window); "
        "None when the log group could not be read.",
    )
    note: str | None = omitted_when_null("What the figures cannot show, e.g. no datapoints.")
    gaps: Gaps = Field(default_factory=list)


GET_FUNCTION_METRICS = ToolDeclaration(
    name="get_function_metrics",
    title="Lambda metrics",
    description=(
        "The function's AWS/Lambda metrics by minute (invocations, errors, throttles, duration, "
        "concurrency), with the error rate, first failing minute, longest duration against the timeout and "
        "peak memory against the memory size: what the Lambda service measured, not the function's output."
    ),
    arguments=GetFunctionMetricsArgs,
    response=FunctionMetricsResponse,
    implementation="mcp_server.tools.metrics:function_metrics",
    reads=(
        ("cloudwatch", "GetMetricData"),
        ("logs", "FilterLogEvents"),
        ("lambda", "GetFunctionConfiguration"),
    ),
    order=60,
)
