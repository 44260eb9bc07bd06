"""``get_recent_logs``: a function's recent CloudWatch Logs events, bounded in size, errors first, each
placed in its invocation (request id; a platform record, the runtime's error record with what it says, or
the function's own output), in either log format and for any runtime (``envelope``); the log group is the
one the function's ``LoggingConfig`` names, and its log levels say what Lambda did not write. The window is
read newest first (``log_window``), so on a busy function the failures of the last minutes and the
invocations before them are read, and the note says which part of the window was.

``filter_pattern`` is passed to CloudWatch Logs as given: term patterns match the text of the events in
either format, and a JSON selector (``{ $.level = "ERROR" }``) is CloudWatch's to evaluate. The tool only
places what comes back; an event a selector kept without its invocation's platform records is still placed
by its own request id."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.exceptions import ClientError

from mcp_server.contract import GetRecentLogsArgs, InvocationReport, LogEvent, LogsResponse
from mcp_server.errors import aws_errors
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext
from mcp_server.tools.envelope import Placed, invocations, place
from mcp_server.tools.lambda_config import function_read, log_group
from mcp_server.tools.log_window import Suffix, newest_suffix, scan

# Single terms (CloudWatch Logs matches them case-sensitively; one lookup each) that find the lines
# ERROR_LIKE recognises.
ERROR_TERMS = (
    "ERROR",
    "Error",
    "error",
    "Exception",
    "exception",
    "Traceback",
    "AccessDenied",
    '"Task timed out"',
    '"Runtime exited"',
    "Throttling",
    "TooManyRequestsException",
    "timeout",
    "Timeout",
    "errorType",
    "failure",
)
ERROR_LIKE = re.compile(
    r"error|exception|traceback|accessdenied|task timed out|throttl|timeout|failure", re.IGNORECASE
)
# LoggingConfig levels, least detail last (AWS Lambda API reference, LoggingConfig).
SYSTEM_LEVELS = ("DEBUG", "INFO", "WARN")
APPLICATION_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def truncate_message(message: str, cap: int) -> tuple[str, bool]:
    """``message`` cut at a character boundary so that, with its ``…[truncated N bytes]`` marker, it fits
    in ``cap`` UTF-8 bytes (when ``cap`` leaves room for the marker); and whether it was cut."""
    encoded = message.encode()
    if len(encoded) <= cap:
        return message, False
    widest_marker = len(f" …[truncated {len(encoded)} bytes]".encode())
    kept = encoded[: max(0, cap - widest_marker)].decode(errors="ignore")  # drops a split last character
    return f"{kept} …[truncated {len(encoded) - len(kept.encode())} bytes]", True


@dataclass(frozen=True)
class _Event:
    timestamp_ms: int
    position: int  # order of reading: keeps events with equal timestamps in AWS's order
    message: str  # already truncated
    size: int  # UTF-8 bytes of ``message``
    truncated: bool
    error_like: bool  # judged on the whole message, before truncation
    log_stream: str | None
    placed: Placed


def _select(events: list[_Event], *, limit: int, byte_cap: int) -> list[_Event]:
    """The longest run of (error-like lines newest first, then other lines newest first) that fits in
    ``limit`` events and ``byte_cap`` bytes, in chronological order."""
    priority = sorted(events, key=lambda e: (not e.error_like, -e.timestamp_ms, -e.position))
    chosen: list[_Event] = []
    used = 0
    for event in priority:
        if len(chosen) == limit or used + event.size > byte_cap:
            break
        chosen.append(event)
        used += event.size
    return sorted(chosen, key=lambda e: (e.timestamp_ms, e.position))


def _iso(timestamp_ms: int) -> str:
    return (_EPOCH + timestamp_ms * _MS).isoformat()


def _events(raw: list[dict[str, Any]], message_cap: int) -> list[_Event]:
    placed = place(raw)
    events = []
    for position, (event, where) in enumerate(zip(raw, placed, strict=True)):
        original = event.get("message", "")
        message, truncated = truncate_message(original, message_cap)
        events.append(
            _Event(
                timestamp_ms=event["timestamp"],
                position=position,
                message=message,
                size=len(message.encode()),
                truncated=truncated,
                error_like=ERROR_LIKE.search(original) is not None,
                log_stream=event.get("logStreamName"),
                placed=where,
            )
        )
    return events


def _error_scan(ctx: ToolContext, request: dict[str, Any], term: str) -> Read:
    return Read(
        "logs:FilterLogEvents",
        f"error lines ({term}) of log group {request['logGroupName']}",
        lambda: scan(ctx.clients.logs, request | {"filterPattern": term}, ctx.settings.logs_scan_limit)[0],
        f"error lines containing {term} beyond the events read may be missing",
    )


def _with_error_lines(
    ctx: ToolContext, request: dict[str, Any], read: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The error lines of the part of the window the scan did not reach (``request``'s), looked up on their
    own (one filter term per lookup, each filtered by CloudWatch Logs), so none is missed; merged in order."""
    found = ctx.reads.many([_error_scan(ctx, request, term) for term in ERROR_TERMS])
    merged = {event.get("eventId") or (event["timestamp"], event.get("message")): event for event in read}
    for events in found:
        for event in events or []:
            merged.setdefault(event.get("eventId") or (event["timestamp"], event.get("message")), event)
    return sorted(merged.values(), key=lambda event: event["timestamp"])


def _version_of(ctx: ToolContext) -> str | None:
    """The version whose log streams to keep, for a qualified function ARN ($LATEST, N or an alias)."""
    qualifier = ctx.target.qualifier
    if qualifier is None or qualifier.isdigit():
        return qualifier
    alias = ctx.reads.one(
        Read(
            "lambda:GetAlias",
            f"alias {qualifier} of function {ctx.target.function_name}",
            lambda: ctx.clients.lambda_.get_alias(FunctionName=ctx.target.function_name, Name=qualifier),
            "the alias's version is unknown, so the lines of every version are shown",
        )
    )
    return str(alias["FunctionVersion"]) if alias else None


@dataclass(frozen=True)
class _Query:
    """Where and when to look: the log group, the window, and the version whose log streams to keep; and
    how the function logs (runtime, ``LoggingConfig``), when its configuration was read."""

    group: str
    start_ms: int
    end_ms: int
    version: str | None
    runtime: str | None = None
    logging: dict[str, Any] | None = None

    @property
    def window_start(self) -> str:
        return _iso(self.start_ms)

    @property
    def window_end(self) -> str:
        return _iso(self.end_ms)


@dataclass(frozen=True)
class _Read:
    """What was read of the window: the events kept (only the version's log streams): every event from
    ``read_from_ms`` to the window's end, read newest first, and the error lines of the older part looked
    up on their own; how many events the scan fetched."""

    raw: list[dict[str, Any]]
    scanned: int
    read_from_ms: int
    answered: bool = True  # False: the scan was not answered within the tool's deadline (a gap says so)


def _query(ctx: ToolContext, minutes: int, now: datetime | None) -> _Query:
    """The log group the function's ``LoggingConfig`` names, the last ``minutes`` up to ``now``, and the
    version of a qualified function ARN."""
    config = ctx.reads.one(function_read(ctx)) or {}
    logging = config.get("LoggingConfig")
    group = log_group(config, ctx.target.function_name)
    version = _version_of(ctx)
    end_ms = ((now or datetime.now(UTC)) - _EPOCH) // _MS
    return _Query(
        group,
        start_ms=end_ms - minutes * 60_000,
        end_ms=end_ms,
        version=version,
        runtime=config.get("Runtime"),
        logging=logging if isinstance(logging, dict) else {} if config else None,
    )


def _level_gaps(ctx: ToolContext, query: _Query) -> None:
    """What the function's log levels keep Lambda from writing (they apply to the JSON format only)."""
    logging = query.logging or {}
    if logging.get("LogFormat") != "JSON":
        return
    source = f"LoggingConfig of function {ctx.target.function}"
    system = logging.get("SystemLogLevel")
    if system in SYSTEM_LEVELS and SYSTEM_LEVELS.index(system) > SYSTEM_LEVELS.index("INFO"):
        ctx.reads.gap(
            f"{source}: SystemLogLevel {system}",
            f"with LoggingConfig.SystemLogLevel {system} Lambda writes only platform records at {system} or "
            "above: the start records and the reports of successful invocations (INFO) are not written, so "
            "invocations, durations and memory figures are missing from the logs (read them from "
            "get_function_metrics)",
        )
    application = logging.get("ApplicationLogLevel")
    if application in APPLICATION_LEVELS and APPLICATION_LEVELS.index(application) > APPLICATION_LEVELS.index(
        "ERROR"
    ):
        ctx.reads.gap(
            f"{source}: ApplicationLogLevel {application}",
            f"with LoggingConfig.ApplicationLogLevel {application} Lambda drops application records below "
            f"{application}, and the runtimes write their record of an unhandled error at ERROR: error "
            "records and their detail are missing from the logs",
        )


def _window_scan(ctx: ToolContext, request: dict[str, Any]) -> Read:
    return Read(
        "logs:FilterLogEvents",
        f"log group {request['logGroupName']}",
        lambda: newest_suffix(ctx.clients.logs, request, ctx.settings.logs_scan_limit),
        "the window's log lines are unknown",
    )


def _read_window(ctx: ToolContext, query: _Query, filter_pattern: str | None) -> _Read | None:
    """The window's events, as many as answered within the tool's deadline (none, and a gap, when the
    scan was not answered in time); None when the log group does not exist."""
    request: dict[str, Any] = {
        "logGroupName": query.group,
        "startTime": query.start_ms,
        "endTime": query.end_ms,
    }
    if filter_pattern is not None:
        request["filterPattern"] = filter_pattern
    with aws_errors(f"log group {query.group} ({ctx.target.account})", ctx.target.region):
        try:
            scanned = ctx.reads.bounded(_window_scan(ctx, request))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            return None
    if scanned is None:
        return _Read([], 0, query.end_ms + 1, answered=False)
    suffix: Suffix = scanned
    raw = suffix.events
    if suffix.read_from_ms > query.start_ms and filter_pattern is None:
        raw = _with_error_lines(ctx, request | {"endTime": suffix.read_from_ms - 1}, raw)
    if query.version is not None:
        raw = [e for e in raw if f"[{query.version}]" in e.get("logStreamName", "")]
    return _Read(raw, suffix.scanned, suffix.read_from_ms)


def _notes(
    ctx: ToolContext, args: GetRecentLogsArgs, query: _Query, read: _Read, *, matched: int, dropped: int
) -> list[str]:
    """What narrows the answer: the version kept, an empty window, an early stop, events left out."""
    notes: list[str] = []
    if query.version is not None:
        notes.append(f"only the log streams of version {query.version} ({ctx.target.qualifier})")
    if not matched:
        pattern = f" matching filter pattern {args.filter_pattern!r}" if args.filter_pattern else ""
        notes.append(
            f"nothing matched: no events{pattern} in log group {query.group} "
            f"between {query.window_start} and {query.window_end}"
        )
    if read.read_from_ms > query.start_ms:
        notes.append(_unread(ctx, args, query, read))
    if dropped:
        notes.append(
            f"{dropped} of {matched} matching events left out (at most {args.limit} events and "
            f"{ctx.settings.logs_byte_cap} bytes): error-like lines were kept first, newest first"
        )
    return notes


def _unread(ctx: ToolContext, args: GetRecentLogsArgs, query: _Query, read: _Read) -> str:
    """Which part of the window the scan read (newest first) and which it did not."""
    fetched = f"{read.scanned} of {ctx.settings.logs_scan_limit} events fetched"
    beyond = ", except their error lines, looked up on their own" if args.filter_pattern is None else ""
    if read.read_from_ms > query.end_ms:
        return (
            f"no part of the window could be read whole within the scan limit ({fetched}), so no events "
            f"between {query.window_start} and {query.window_end} were read{beyond}: shorten `minutes` or "
            "add a filter_pattern"
        )
    return (
        f"read newest first within the scan limit ({fetched}): every event from {_iso(read.read_from_ms)} "
        f"to {query.window_end}; the older events, from {query.window_start} to "
        f"{_iso(read.read_from_ms - 1)}, were not read{beyond}: shorten `minutes` or add a filter_pattern"
    )


# Lines whose figures the invocation reports carry: left out of `events` unless asked for with `detail`.
SUMMARISED_KINDS: Final = frozenset({"start", "end", "report", "platform"})


def _log_event(event: _Event, detail: bool) -> LogEvent:
    """The event as answered: its stream only where its invocation's report does not give it (a line of no
    invocation, an init error: matched to its invocation by stream), or with ``detail``."""
    own_stream = detail or event.placed.request_id is None or event.placed.kind == "init_error"
    return LogEvent(
        timestamp=_iso(event.timestamp_ms),
        message=event.message,
        log_stream=event.log_stream if own_stream else None,
        request_id=event.placed.request_id,
        kind=event.placed.kind,
        error=event.placed.error,
    )


def _answer(ctx: ToolContext, args: GetRecentLogsArgs, query: _Query, **fields: Any) -> LogsResponse:
    log_format = None if query.logging is None else query.logging.get("LogFormat", "Text")
    return LogsResponse(
        log_group=query.group,
        runtime=query.runtime,
        log_format=log_format if log_format in ("Text", "JSON") else None,
        window_start=query.window_start,
        window_end=query.window_end,
        filter_pattern=args.filter_pattern,
        byte_cap=ctx.settings.logs_byte_cap,
        gaps=ctx.reads.gaps,
        **fields,
    )


def recent_logs(ctx: ToolContext, args: GetRecentLogsArgs, *, now: datetime | None = None) -> LogsResponse:
    """Events of the function's log group in the last ``args.minutes`` minutes up to ``now`` (timezone-
    aware; default: the current time), optionally filtered by ``args.filter_pattern``. Reads the window
    newest first, at most ``scan_limit`` events (``log_window``), and the error lines of the older part it
    did not reach on their own; cuts each message to ``message_cap`` bytes and keeps, within ``args.limit``
    events and ``byte_cap`` bytes, error-like lines first (newest first), then the newest other lines."""
    query = _query(ctx, args.minutes, now)
    _level_gaps(ctx, query)
    read = _read_window(ctx, query, args.filter_pattern)
    if read is None:
        return _answer(
            ctx,
            args,
            query,
            events=[],
            note=f"log group {query.group} does not exist: the function has never been invoked here, or its "
            "execution role cannot write logs (check the role's logs permissions with get_iam_state)",
        )
    if not read.answered:
        return _answer(
            ctx,
            args,
            query,
            events=[],
            note=f"the events of log group {query.group} were not read within the tool's "
            f"{ctx.reads.deadline_seconds:g} s deadline (see gaps): try again, or shorten `minutes`",
        )
    byte_cap = ctx.settings.logs_byte_cap
    events = _events(read.raw, min(ctx.settings.logs_message_cap, byte_cap))
    shown = events if args.detail else [e for e in events if e.placed.kind not in SUMMARISED_KINDS]
    chosen = _select(shown, limit=args.limit, byte_cap=byte_cap)
    dropped = len(shown) - len(chosen)
    notes = _notes(ctx, args, query, read, matched=len(events), dropped=dropped)
    return _answer(
        ctx,
        args,
        query,
        events=[_log_event(e, args.detail) for e in chosen],
        invocations=[
            InvocationReport(**report) for report in invocations(read.raw, placed=[e.placed for e in events])
        ],
        matched_events=len(events),
        returned_events=len(chosen),
        dropped_events=dropped,
        summarised_events=len(events) - len(shown),
        truncated_messages=sum(e.truncated for e in chosen),
        note="; ".join(notes) or None,
    )
