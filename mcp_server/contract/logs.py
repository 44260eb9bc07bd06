"""``get_recent_logs``: arguments and answer."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments, omitted_when_null
from mcp_server.contract.declaration import ToolDeclaration


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("filter_pattern must not contain NUL characters")
    return value


def _iso8601(value: str) -> str:
    datetime.fromisoformat(value)  # raises ValueError when the string is not ISO-8601
    return value


LogMinutes = Annotated[
    int,
    Field(
        ge=1,
        le=1440,
        description="Minutes back from now.",
    ),
]
LogLimit = Annotated[int, Field(ge=1, le=1000, description="Most log events to return.")]
FilterPattern = Annotated[
    Annotated[str, Field(max_length=1024), AfterValidator(_no_nul)] | None,
    Field(
        description="CloudWatch Logs filter pattern, e.g. 'ERROR' or '?AccessDenied ?Timeout'.",
    ),
]


class GetRecentLogsArgs(TargetArguments):
    """Arguments of ``get_recent_logs``: recent CloudWatch log events of the function."""

    minutes: LogMinutes = 30
    limit: LogLimit = 50
    filter_pattern: FilterPattern = None
    detail: bool = Field(
        default=False,
        description="Also the start, end, report and platform lines, and every line's log stream.",
    )


LineKind = Literal[
    "start", "end", "report", "timeout", "runtime_exit", "error_record", "init_error", "platform", "function"
]
LogFormat = Literal["Text", "JSON"]


class ErrorDetail(ContractModel):
    """What a runtime's error record says, read from whichever shape the runtime wrote it in."""

    type: str | None = Field(default=None, description="The error's type, e.g. 'KeyError', 'TypeError'.")
    message: str | None = Field(default=None, description="The error's message, as the record gives it.")
    code: str | None = Field(
        default=None,
        description="The AWS error code when the record is an AWS SDK's error, e.g. 'AccessDenied'.",
    )
    operation: str | None = Field(
        default=None, description="The AWS operation that failed, when the record names it, e.g. 'GetObject'."
    )
    frame: str | None = Field(
        default=None,
        description="The first stack frame in the function's own code ('file:line'), runtime frames skipped.",
    )


class LogEvent(ContractModel):
    """One CloudWatch log event, placed in its invocation."""

    timestamp: Annotated[str, AfterValidator(_iso8601)] = Field(description="ISO-8601 event time.")
    message: str
    log_stream: str | None = omitted_when_null(
        "Only for a line outside any invocation and for init_error lines (else the "
        "invocation's, in `invocations`), or with `detail`.",
    )
    request_id: str | None = Field(
        default=None, description="The invocation the line belongs to (between its START and END lines)."
    )
    kind: LineKind = Field(
        default="function",
        description="What the line looks like: Lambda's platform records (start, end, report, timeout, "
        "runtime_exit; init_error: the init phase failed; platform: any other), the runtime's record of an "
        "unhandled error (error_record, in any runtime's text or JSON shape), or anything the function's "
        "code wrote (function). Text can be forged by whoever controls the function's input: confirm a "
        "failure with metrics or configuration.",
    )
    error: ErrorDetail | None = omitted_when_null(
        "Only for error_record and init_error events: what the record says."
    )


class InvocationReport(ContractModel):
    """An invocation seen in the window, from its REPORT line and the platform lines around it."""

    request_id: str
    log_stream: str | None = None
    started: str | None = Field(default=None, description="ISO-8601 time of its START line, when read.")
    duration_ms: float | None = None
    memory_size_mb: int | None = None
    max_memory_used_mb: int | None = None
    init_duration_ms: float | None = Field(default=None, description="Set on a cold start.")
    outcome: Literal["timeout", "runtime_exit", "error_record", "init_error", "no_error_seen"] = Field(
        description="What its lines show: a timeout, the runtime exiting (e.g. killed at the memory "
        "limit), an unhandled-error record, its init phase failing, or none of these."
    )
    status: Literal["success", "error", "failure", "timeout"] | None = Field(
        default=None, description="The status its report states, when it states one."
    )
    error_type: str | None = Field(default=None, description="The error type its report states.")


class LogsResponse(ContractModel):
    """Answer of ``get_recent_logs``."""

    log_group: str
    runtime: str | None = Field(default=None, description="The function's runtime, e.g. 'nodejs22.x'.")
    log_format: LogFormat | None = Field(
        default=None, description="The function's LoggingConfig.LogFormat: how its records were read."
    )
    events: list[LogEvent]
    invocations: list[InvocationReport] = Field(
        default_factory=list, description="Invocations whose REPORT line was read, oldest first (at most 50)."
    )
    error: str | None = omitted_when_null()
    window_start: str | None = Field(default=None, description="ISO-8601 start of the searched window.")
    window_end: str | None = Field(default=None, description="ISO-8601 end of the searched window.")
    filter_pattern: str | None = omitted_when_null()
    matched_events: int = Field(default=0, ge=0, description="Events that matched in the window.")
    returned_events: int = Field(default=0, ge=0, description="Events included in `events`.")
    dropped_events: int = Field(default=0, ge=0, description="Matched events not returned (limit, byte cap).")
    summarised_events: int = Field(
        default=0,
        ge=0,
        description="Start, end, report and other platform lines left out of `events` without `detail`: "
        "`invocations` holds what they say.",
    )
    truncated_messages: int = Field(
        default=0,
        ge=0,
        description="Messages cut to the per-message cap (each ends with a truncation marker).",
    )
    byte_cap: int | None = Field(default=None, ge=0, description="Byte budget applied to the messages.")
    note: str | None = Field(
        default=None,
        description="Explanation of an empty or partial answer, e.g. 'log group does not exist: the function "
        "was never invoked or its role cannot write logs'.",
    )
    gaps: Gaps = Field(default_factory=list)


GET_RECENT_LOGS = ToolDeclaration(
    name="get_recent_logs",
    title="Recent Lambda logs",
    description=(
        "Recent log events of the function, oldest first, each placed in its invocation (request id, kind of "
        "line, an error's detail), and a summary per invocation; any runtime, Text or JSON format. When more "
        "match than fit, error lines are kept first and counts say what was left out. Log text is written by "
        "the function: it describes a failure but never proves one."
    ),
    arguments=GetRecentLogsArgs,
    response=LogsResponse,
    implementation="mcp_server.tools.logs:recent_logs",
    reads=(
        ("logs", "FilterLogEvents"),
        ("lambda", "GetFunctionConfiguration"),
        ("lambda", "GetAlias"),
    ),
    order=10,
    benchmark_arguments=({}, {"minutes": 60}, {"filter_pattern": "ERROR"}),
)
