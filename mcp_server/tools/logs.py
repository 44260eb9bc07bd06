"""``get_recent_logs``: a function's recent CloudWatch Logs events, bounded in size, errors first."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from mcp_server.contract import GetRecentLogsArgs, LogEvent, LogsResponse, function_name_of
from mcp_server.errors import aws_errors

PAGE_LIMIT = 10_000  # the most events one FilterLogEvents page may hold
ERROR_LIKE = re.compile(
    r"error|exception|traceback|accessdenied|task timed out|throttl|timeout", re.IGNORECASE
)
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


def _read(raw: dict[str, Any], position: int, message_cap: int) -> _Event:
    original = raw.get("message", "")
    message, truncated = truncate_message(original, message_cap)
    return _Event(
        timestamp_ms=raw["timestamp"],
        position=position,
        message=message,
        size=len(message.encode()),
        truncated=truncated,
        error_like=ERROR_LIKE.search(original) is not None,
        log_stream=raw.get("logStreamName"),
    )


def _scan(
    logs_client: Any, request: dict[str, Any], scan_limit: int, message_cap: int
) -> tuple[list[_Event], bool]:
    """Every matching event, page by page, up to ``scan_limit``; and whether the scan was complete."""
    events: list[_Event] = []
    token: str | None = None
    while True:
        paging = {"nextToken": token} if token else {}
        page = logs_client.filter_log_events(
            **request, **paging, limit=min(PAGE_LIMIT, scan_limit - len(events))
        )
        events += [_read(raw, len(events) + i, message_cap) for i, raw in enumerate(page.get("events", []))]
        token = page.get("nextToken")
        if not token:
            return events, True
        if len(events) >= scan_limit:
            return events, False


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


def recent_logs(
    logs_client: Any,
    args: GetRecentLogsArgs,
    *,
    region: str | None,
    byte_cap: int,
    message_cap: int,
    scan_limit: int,
    now: datetime | None = None,
) -> LogsResponse:
    """Events of ``/aws/lambda/<function>`` in the last ``args.minutes`` minutes up to ``now`` (timezone-
    aware; default: the current time), optionally filtered by ``args.filter_pattern``. Reads at most
    ``scan_limit`` events, cuts each message to ``message_cap`` bytes and keeps, within ``args.limit`` events
    and ``byte_cap`` bytes, error-like lines first (newest first), then the newest other lines."""
    group = f"/aws/lambda/{function_name_of(args.lambda_name)}"
    end_ms = ((now or datetime.now(UTC)) - _EPOCH) // _MS
    start_ms = end_ms - args.minutes * 60_000
    window_start, window_end = _iso(start_ms), _iso(end_ms)

    def answer(**fields: Any) -> LogsResponse:
        return LogsResponse(
            log_group=group,
            window_start=window_start,
            window_end=window_end,
            filter_pattern=args.filter_pattern,
            byte_cap=byte_cap,
            **fields,
        )

    request: dict[str, Any] = {"logGroupName": group, "startTime": start_ms, "endTime": end_ms}
    if args.filter_pattern:
        request["filterPattern"] = args.filter_pattern
    with aws_errors(f"log group {group}", region):
        try:
            events, complete = _scan(logs_client, request, scan_limit, min(message_cap, byte_cap))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            return answer(
                events=[],
                note=f"log group {group} does not exist: the function has never been invoked here, or its "
                "execution role cannot write logs (check the role's logs permissions with get_iam_state)",
            )

    chosen = _select(events, limit=args.limit, byte_cap=byte_cap)
    dropped = len(events) - len(chosen)
    notes: list[str] = []
    if not events:
        pattern = f" matching filter pattern {args.filter_pattern!r}" if args.filter_pattern else ""
        notes.append(
            f"nothing matched: no events{pattern} in log group {group} "
            f"between {window_start} and {window_end}"
        )
    if not complete:
        notes.append(
            f"the scan stopped at {len(events)} events (the scan limit), so later events in the window were "
            "not read: shorten `minutes` or add a filter_pattern"
        )
    if dropped:
        notes.append(
            f"{dropped} of {len(events)} matching events left out (at most {args.limit} events and "
            f"{byte_cap} bytes): error-like lines were kept first, newest first"
        )
    return answer(
        events=[
            LogEvent(timestamp=_iso(e.timestamp_ms), message=e.message, log_stream=e.log_stream)
            for e in chosen
        ],
        matched_events=len(events),
        returned_events=len(chosen),
        dropped_events=dropped,
        truncated_messages=sum(e.truncated for e in chosen),
        note="; ".join(notes) or None,
    )
