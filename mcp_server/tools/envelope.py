"""Lambda's invocation envelope in a log group: which invocation each event belongs to and what it is, for
every runtime and both log formats (``Text`` and ``JSON``; the shapes are in ``log_text`` and ``log_json``).

An event's shape says what it looks like; its place in its log stream (one execution environment, whose
invocations run one after another) decides whether it is that. A function can print anything, also text or
JSON shaped exactly like a platform record (in the JSON format Lambda passes a function's JSON output
through unchanged), so a platform-shaped event counts only where the platform writes such a record:

- a report (``REPORT`` / ``platform.report``) counts only if it is the last report-shaped event of its
  request id in its stream, and no other invocation is open there; it closes its invocation. A report the
  function prints for its own request id comes before the real one; one for another id comes inside an
  open invocation. Neither counts.
- a start (``START`` / ``platform.start``) counts only if its request id reports later in its stream or no
  other start follows (the invocation still running), and no invocation is open there, unless the open one
  never reports later (its start was not real, or its end was not read) or ends inside this one
  (invocations in a stream do not overlap: of two that cross, the one whose report comes last holds the
  other's report, printed by its function). A start printed inside an invocation, or in the init phase
  under an invented request id, does not count.
- a record that names its request id (``END``, ``Task timed out``, ``Runtime exited``, Node.js's error
  records) counts unless another invocation is open in its stream. The ``Runtime.ExitError`` line right
  after a runtime-exit line belongs to it.
- of the error-shaped records of an invocation only the last counts (the runtime writes its record when the
  handler has failed, after everything the handler printed). A report's ``success`` does not deny it: the
  platform reports ``success`` whenever the runtime answered, with a result or with the handler's error
  (aws/aws-lambda-runtime-interface-emulator, ``internal/lambda/rapid/handlers.go``: the runtimeDone of a
  completed invoke is always ``RuntimeDoneSuccess``; ``error``/``timeout``/``failure`` only on a reset).

What does not count stays a ``function`` line of the invocation open in its stream. An event that names no
request id belongs to the invocation open in its stream; one written when none is open (the init phase, or
between invocations) belongs to the next invocation that starts in that stream.

What this cannot tell apart: a start the function prints in the init phase under a request id it also
prints a report for (the start counts, though its report does not, and the init-phase lines go with it); a
report it prints for its own request id when the real one is missing (a ``SystemLogLevel`` above ``INFO``
drops real reports); a report it prints for an earlier request id during a later invocation hides that
report (the invocation is then not listed, never misreported); and an error record it prints as the last
thing of an invocation (in either format: the platform's ``success`` does not deny one). Log text
describes; metrics, configuration and changes confirm (the tool's description says so).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from mcp_server.contract.logs import ErrorDetail, LineKind
from mcp_server.tools import log_json, log_text
from mcp_server.tools.log_shapes import Figures, Shape

MAX_INVOCATIONS = 50
STATUSES = frozenset({"success", "error", "failure", "timeout"})
EXIT_ERROR_TYPES = frozenset({"Runtime.ExitError", "Runtime.OutOfMemory"})


@dataclass(frozen=True)
class Placed:
    request_id: str | None
    kind: LineKind
    error: ErrorDetail | None = None
    figures: Figures | None = None


def shape_of(message: str) -> Shape:
    """What one event looks like, in whichever format it was written."""
    fields = log_json.parse(message)
    return log_json.shape(message, fields) if fields is not None else log_text.shape(message)


def report_figures(message: str) -> Figures | None:
    """The figures of a report (a text ``REPORT`` line or a JSON ``platform.report`` record), by its shape
    alone; None for any other event."""
    found = shape_of(message)
    return found.figures if found.kind == "report" else None


@dataclass
class _Ahead:
    """Where the start- and report-shaped events of each stream are, to look ahead from any event."""

    reports: dict[tuple[Any, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    starts: dict[Any, list[int]] = field(default_factory=lambda: defaultdict(list))
    reporting: set[Any] = field(default_factory=set)  # streams with a report-shaped event

    @classmethod
    def of(cls, streams: list[Any], shapes: list[Shape]) -> _Ahead:
        ahead = cls()
        for index, (stream, shape) in enumerate(zip(streams, shapes, strict=True)):
            if shape.kind == "start":
                ahead.starts[stream].append(index)
            elif shape.kind == "report" and shape.request_id:
                ahead.reports[(stream, shape.request_id)].append(index)
                ahead.reporting.add(stream)
        return ahead

    def last_report(self, stream: Any, request_id: str | None) -> int | None:
        found = self.reports.get((stream, request_id or ""))
        return found[-1] if found else None

    def reports_after(self, stream: Any, request_id: str | None, index: int) -> bool:
        last = self.last_report(stream, request_id)
        return last is not None and last > index

    def starts_after(self, stream: Any, index: int) -> bool:
        found = self.starts.get(stream) or []
        return bool(found) and found[-1] > index


def _counts(ahead: _Ahead, shape: Shape, stream: Any, index: int, current: str | None) -> bool:
    """Whether a platform-shaped event stands where the platform writes such a record (module docstring)."""
    named = shape.request_id
    if shape.kind == "init_error":
        return current is None  # the init phase comes before an invocation starts
    if shape.kind == "report":
        return ahead.last_report(stream, named) == index and current in (None, named)
    if shape.kind == "start":
        if stream not in ahead.reporting:
            return True  # no report read in this stream (a filtered read): nothing to judge a start by
        own_end = ahead.last_report(stream, named)
        if current is not None and ahead.reports_after(stream, current, index):
            # Invocations in a stream do not overlap: of two that cross, the one whose report comes last
            # holds the other's report, which its function printed.
            return own_end is not None and own_end > (ahead.last_report(stream, current) or index)
        return (own_end is not None and own_end > index) or not ahead.starts_after(stream, index)
    return named is None or current in (None, named)


@dataclass
class _Streams:
    """The forward pass's state: per stream, the open invocation, the events waiting for the next one, the
    request id of a runtime-exit line just read."""

    placed: list[Placed] = field(default_factory=list)
    open_in: dict[Any, str | None] = field(default_factory=dict)
    waiting: dict[Any, list[int]] = field(default_factory=lambda: defaultdict(list))
    exited: dict[Any, str | None] = field(default_factory=dict)

    def start(self, stream: Any, request_id: str | None) -> None:
        self.open_in[stream] = request_id
        for index in self.waiting.pop(stream, []):
            self.placed[index] = replace(self.placed[index], request_id=request_id)

    def add(self, stream: Any, shape: Shape, kind: LineKind, request_id: str | None) -> None:
        request_id = request_id or self.open_in.get(stream)
        if request_id is None:
            self.waiting[stream].append(len(self.placed))
        self.exited[stream] = request_id if kind == "runtime_exit" and not shape.exit_marker else None
        error = shape.error if kind in ("error_record", "init_error") else None
        self.placed.append(Placed(request_id, kind, error, shape.figures if kind != "function" else None))


def _forward(streams: list[Any], shapes: list[Shape], ahead: _Ahead) -> list[Placed]:
    state = _Streams()
    for index, (stream, shape) in enumerate(zip(streams, shapes, strict=True)):
        current = state.open_in.get(stream)
        kind, named = shape.kind, shape.request_id
        if shape.exit_marker:
            named = state.exited.get(stream)
            kind = "runtime_exit" if named else "function"
        elif kind != "function" and not _counts(ahead, shape, stream, index, current):
            kind, named = "function", current
        if kind == "start":
            state.start(stream, named)
        state.add(stream, shape, kind, named)
        if kind == "report":
            state.open_in[stream] = None
    return state.placed


def _last_error_only(streams: list[Any], placed: list[Placed]) -> list[Placed]:
    """Of each invocation's error records, the last one."""
    last: dict[tuple[Any, str | None], int] = {}
    for index, (stream, where) in enumerate(zip(streams, placed, strict=True)):
        if where.kind == "error_record":
            last[(stream, where.request_id)] = index
    kept = set(last.values())
    return [
        Placed(where.request_id, "function") if where.kind == "error_record" and index not in kept else where
        for index, where in enumerate(placed)
    ]


def place(events: list[dict[str, Any]]) -> list[Placed]:
    """Each event's invocation and kind, reading the events in order (oldest first)."""
    streams = [event.get("logStreamName") for event in events]
    shapes = [shape_of(event.get("message", "")) for event in events]
    ahead = _Ahead.of(streams, shapes)
    return _last_error_only(streams, _forward(streams, shapes, ahead))


def _outcome(kinds: set[str], figures: Figures) -> str:
    """What an invocation's lines and report show, the most specific first."""
    if figures.status == "timeout" or "timeout" in kinds:
        return "timeout"
    if "init_error" in kinds:
        return "init_error"
    if "runtime_exit" in kinds or figures.error_type in EXIT_ERROR_TYPES:
        return "runtime_exit"
    return "error_record" if "error_record" in kinds else "no_error_seen"


def _report(
    request_id: str, stream: Any, figures: Figures, started: int | None, kinds: set[str]
) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "log_stream": stream,
        "started": datetime.fromtimestamp(started / 1000, UTC).isoformat() if started else None,
        "duration_ms": figures.duration_ms,
        "memory_size_mb": figures.memory_size_mb,
        "max_memory_used_mb": figures.max_memory_used_mb,
        "init_duration_ms": figures.init_duration_ms,
        "outcome": _outcome(kinds, figures),
        "status": figures.status if figures.status in STATUSES else None,
        "error_type": figures.error_type,
    }


def invocations(events: list[dict[str, Any]], placed: list[Placed]) -> list[dict[str, Any]]:
    """The newest invocations whose report was read, oldest first, with what their lines show."""
    starts: dict[str, int] = {}
    kinds: dict[str, set[str]] = defaultdict(set)
    reports: list[tuple[str, Any, Figures]] = []
    for event, where in zip(events, placed, strict=True):
        request_id = where.request_id
        if request_id is None:
            continue
        kinds[request_id].add(where.kind)
        if where.kind == "start":
            starts[request_id] = event["timestamp"]
        elif where.kind == "report":
            reports.append((request_id, event.get("logStreamName"), where.figures or Figures()))
    return [
        _report(request_id, stream, figures, starts.get(request_id), kinds[request_id])
        for request_id, stream, figures in reports[-MAX_INVOCATIONS:]
    ]
