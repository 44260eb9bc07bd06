"""Lambda's invocation envelope in a log group: which invocation a line belongs to and what it looks like.

Lambda writes ``START``/``END``/``REPORT`` around each invocation in the execution environment's log
stream, ``Task timed out`` and ``Runtime exited with error`` when it ends one, and its Python runtime
writes an unhandled error as ``[ERROR] Type: message`` with the traceback. A line without a request id
belongs to the invocation open in its stream. All of it is text, which the function's code could print
too: the kinds say what a line looks like, not that the Lambda service wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp_server.contract.logs import LineKind

MAX_INVOCATIONS = 50
_ID = r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
_PATTERNS: tuple[tuple[LineKind, re.Pattern[str]], ...] = (
    ("start", re.compile(rf"^START RequestId: {_ID}\b")),
    ("end", re.compile(rf"^END RequestId: {_ID}\b")),
    ("report", re.compile(rf"^REPORT RequestId: {_ID}\t")),
    ("timeout", re.compile(rf"^\S+ {_ID} Task timed out after ")),
    ("runtime_exit", re.compile(rf"^RequestId: {_ID} Error: Runtime exited with error")),
    ("error_record", re.compile(r"^\[ERROR\] [A-Za-z_.]+: ")),
)
_LOGGING = re.compile(rf"^\[[A-Z]+\]\t\S+\t{_ID}\t")  # the runtime's logging format
_REPORT_FIELDS = {
    "duration_ms": re.compile(r"\tDuration: ([0-9.]+) ms"),
    "memory_size_mb": re.compile(r"\tMemory Size: ([0-9]+) MB"),
    "max_memory_used_mb": re.compile(r"\tMax Memory Used: ([0-9]+) MB"),
    "init_duration_ms": re.compile(r"\tInit Duration: ([0-9.]+) ms"),
}


@dataclass(frozen=True)
class Placed:
    request_id: str | None
    kind: LineKind


def _kind(message: str) -> tuple[LineKind, str | None]:
    for kind, pattern in _PATTERNS:
        match = pattern.match(message)
        if match:
            return kind, match.groupdict().get("id")
    logged = _LOGGING.match(message)
    return "function", logged.group("id") if logged else None


def place(events: list[dict[str, Any]]) -> list[Placed]:
    """Each event's invocation and kind, reading the events in order (oldest first)."""
    open_in: dict[str | None, str | None] = {}  # log stream -> request id between its START and END
    placed = []
    for event in events:
        stream = event.get("logStreamName")
        kind, request_id = _kind(event.get("message", ""))
        if kind == "start":
            open_in[stream] = request_id
        request_id = request_id or open_in.get(stream)
        if kind == "end":
            open_in[stream] = None
        placed.append(Placed(request_id, kind))
    return placed


def _number(pattern: re.Pattern[str], text: str) -> float | None:
    match = pattern.search(text)
    return float(match.group(1)) if match else None


def report_figures(message: str) -> dict[str, float | None]:
    """The figures of a REPORT line (duration, memory size and used, init duration); None if absent."""
    return {key: _number(pattern, message) for key, pattern in _REPORT_FIELDS.items()}


def invocations(events: list[dict[str, Any]], placed: list[Placed]) -> list[dict[str, Any]]:
    """The newest invocations whose REPORT line was read, oldest first, with what their lines show."""
    starts: dict[str, int] = {}
    failures: dict[str, str] = {}
    reports: list[dict[str, Any]] = []
    for event, where in zip(events, placed, strict=True):
        request_id = where.request_id
        if request_id is None:
            continue
        if where.kind == "start":
            starts[request_id] = event["timestamp"]
        elif where.kind in ("timeout", "runtime_exit", "error_record"):
            failures.setdefault(request_id, where.kind)
        elif where.kind == "report":
            message = event.get("message", "")
            fields = report_figures(message)
            reports.append(
                {
                    "request_id": request_id,
                    "log_stream": event.get("logStreamName"),
                    "duration_ms": fields["duration_ms"],
                    "memory_size_mb": int(fields["memory_size_mb"]) if fields["memory_size_mb"] else None,
                    "max_memory_used_mb": (
                        int(fields["max_memory_used_mb"]) if fields["max_memory_used_mb"] else None
                    ),
                    "init_duration_ms": fields["init_duration_ms"],
                    "timed_out": "Status: timeout" in message,
                }
            )
    shown = reports[-MAX_INVOCATIONS:]
    for report in shown:
        request_id = report["request_id"]
        started = starts.get(request_id)
        report["started"] = datetime.fromtimestamp(started / 1000, UTC).isoformat() if started else None
        timed_out = report.pop("timed_out")
        report["outcome"] = "timeout" if timed_out else failures.get(request_id, "no_error_seen")
    return shown
