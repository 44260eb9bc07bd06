"""Lambda's records in the ``JSON`` log format (sources: tests/samples/).

Platform records have exactly three keys, ``{"time": ..., "type": "platform.<event>", "record": {...}}``,
with the record of AWS's Telemetry API schema reference: ``platform.start`` (``requestId``),
``platform.runtimeDone`` (``requestId``, ``status``), ``platform.report`` (``requestId``, ``metrics`` with
``durationMs``, ``billedDurationMs``, ``memorySizeMB``, ``maxMemoryUsedMB``, ``initDurationMs``; ``status``
and ``errorType``), ``platform.initStart``, ``platform.initReport`` (``status``, ``errorType``) and others.

Application records carry ``timestamp``, ``level`` (Python's unhandled-error record: ``log_level``), the
request id (``requestId``; Java: ``AWSRequestId``) and ``message``; an unhandled error adds ``errorType``,
``errorMessage`` and ``stackTrace`` beside them (Python, .NET), or is the ``message`` itself (Node.js's
error object, Java's text record, an error document that a Go function logged).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_server.tools.error_detail import detail
from mcp_server.tools.log_errors import bare_document, document, embedded
from mcp_server.tools.log_shapes import FUNCTION, Figures, Shape, error_type, number, request_id, whole

_PLATFORM_KEYS = frozenset({"time", "type", "record"})
_ERROR_LEVELS = frozenset({"ERROR", "FATAL", "CRITICAL", "Error", "Critical"})


def parse(message: str) -> dict[str, Any] | None:
    """The message as a JSON object, or None."""
    if not message.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(message)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _status(record: Mapping[str, Any]) -> str | None:
    status = record.get("status")
    return status if isinstance(status, str) else None


def report_figures(record: Mapping[str, Any]) -> Figures:
    """The figures of a ``platform.report`` record."""
    metrics = record.get("metrics")
    metrics = metrics if isinstance(metrics, Mapping) else {}
    kind = record.get("errorType")
    return Figures(
        duration_ms=number(metrics.get("durationMs")),
        billed_duration_ms=number(metrics.get("billedDurationMs")),
        memory_size_mb=whole(metrics.get("memorySizeMB")),
        max_memory_used_mb=whole(metrics.get("maxMemoryUsedMB")),
        init_duration_ms=number(metrics.get("initDurationMs")),
        status=_status(record),
        error_type=kind if isinstance(kind, str) else None,
    )


def _platform(event: str, record: Mapping[str, Any]) -> Shape:
    """A record of exactly the platform's shape, by its type."""
    named = request_id(record.get("requestId"))
    if event == "platform.start" and named:
        return Shape("start", named)
    if event == "platform.runtimeDone" and named:
        return Shape("end", named)
    if event == "platform.report" and named and isinstance(record.get("metrics"), Mapping):
        return Shape("report", named, figures=report_figures(record))
    if event == "platform.initReport":
        metrics = record.get("metrics")
        init = Figures(
            init_duration_ms=number(metrics.get("durationMs")) if isinstance(metrics, Mapping) else None,
            status=_status(record),
            error_type=error_type(record.get("errorType")),
        )
        if init.status is not None and init.status != "success":
            return Shape("init_error", figures=init, error=detail(init.error_type, None))
        return Shape("platform", figures=init)
    return Shape("platform", named)


def _application(fields: Mapping[str, Any]) -> Shape:
    """A runtime's application record: its unhandled-error record, or a line the function logged."""
    named = request_id(fields.get("requestId")) or request_id(fields.get("AWSRequestId"))
    level = fields.get("level", fields.get("log_level"))
    message = fields.get("message", fields.get("msg"))
    if level is None or level in _ERROR_LEVELS:
        error = document(fields)  # Python's and .NET's fields beside the message, or a bare error document
        if error is None and level is not None:
            error = embedded(message)
    else:  # a level Lambda assigned (INFO) to a Go function's line that holds its error document
        error = bare_document(message) if isinstance(message, str) else None
    return Shape("error_record" if error else "function", named, error=error)


def shape(message: str, fields: dict[str, Any] | None = None) -> Shape:
    """What a JSON event looks like; ``fields``: the message already parsed."""
    fields = fields if fields is not None else parse(message)
    if fields is None:
        return FUNCTION
    event, record = fields.get("type"), fields.get("record")
    if (
        set(fields) == _PLATFORM_KEYS
        and isinstance(fields["time"], str)
        and isinstance(event, str)
        and event.startswith("platform.")
        and isinstance(record, Mapping)
    ):
        return _platform(event, record)
    return _application(fields)
