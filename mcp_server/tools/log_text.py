"""Lambda's records in the ``Text`` log format, and the runtimes' text lines (sources: tests/samples/).

Platform lines, as the Lambda service writes them (the formats of aws-lambda-runtime-interface-emulator's
``internal/lambda/rie/handlers.go`` and ``interop/events_api.go``, and AWS's documentation):
``START RequestId: <id> Version: <v>``, ``END RequestId: <id>``, ``REPORT RequestId: <id>\\tDuration: ...``
(``Status: timeout``, ``Status: error\\tError Type: ...`` when the invocation did not succeed),
``<time> <id> Task timed out after N.NN seconds``, ``RequestId: <id> Error: Runtime exited with error: ...``
followed by ``Runtime.ExitError`` (in the same event or the next), ``RequestId: <id> Error: <message>``
with its error type for other faults, ``INIT_START ...``, ``INIT_REPORT Init Duration: ... Phase: ...
Status: error Error Type: ...`` and ``EXTENSION Name: ... State: ...``.

Runtime lines that carry a request id: Python's logging format ``[LEVEL]\\t<time>\\t<id>\\t...``, the
Node.js and .NET console format ``<time>\\t<id>\\t<LEVEL>\\t...`` (the request id is ``undefined`` outside
an invocation).
"""

from __future__ import annotations

import re

from mcp_server.tools.error_detail import detail
from mcp_server.tools.log_errors import bare_document, dotnet_record, java_record, node_record, python_record
from mcp_server.tools.log_shapes import FUNCTION, ID, Figures, Shape, request_id

_START = re.compile(rf"^START RequestId: (?P<id>{ID})\b")
_END = re.compile(rf"^END RequestId: (?P<id>{ID})\b")
_REPORT = re.compile(rf"^REPORT RequestId: (?P<id>{ID})\s")
_TIMEOUT = re.compile(rf"^\S+ (?P<id>{ID}) Task timed out after ")
_EXIT = re.compile(
    rf"^RequestId: (?P<id>{ID}) (?:Error: Runtime exited\b|Process exited before completing request)"
)
_FAULT = re.compile(rf"^RequestId: (?P<id>{ID}) Error: (?P<message>[^\n]*)(?:\n(?P<type>[A-Z]\w*\.\w+)\s*$)?")
_EXIT_MARKER = re.compile(r"^Runtime\.ExitError\s*$")
_INIT_REPORT = re.compile(r"^INIT_REPORT\s")
_PLATFORM = re.compile(r"^(?:INIT_START|EXTENSION)\s")
_PYTHON_LOGGING = re.compile(r"^\[[A-Z]+\]\t\S+\t(?P<id>[^\t]*)\t")
_CONSOLE = re.compile(
    r"^\d{4}-\d\d-\d\dT[^\t]+\t(?P<id>[^\t]*)\t(?P<level>[A-Za-z]+)\t(?P<rest>.*)$", re.DOTALL
)
_FIELDS = {
    "duration_ms": re.compile(r"(?<!Billed )(?<!Init )Duration: ([0-9.]+) ms"),
    "billed_duration_ms": re.compile(r"Billed Duration: ([0-9.]+) ms"),
    "memory_size_mb": re.compile(r"Memory Size: ([0-9]+) MB"),
    "max_memory_used_mb": re.compile(r"Max Memory Used: ([0-9]+) MB"),
    "init_duration_ms": re.compile(r"Init Duration: ([0-9.]+) ms"),
}
_STATUS = re.compile(r"\bStatus: (\w+)")
_ERROR_TYPE = re.compile(r"\bError Type: ([\w.]+)")


def _value(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.search(text)
    return found.group(1) if found else None


def figures(text: str) -> Figures:
    """The figures of a ``REPORT`` or ``INIT_REPORT`` line; None where the line does not state one."""
    read = {key: _value(pattern, text) for key, pattern in _FIELDS.items()}
    return Figures(
        duration_ms=float(read["duration_ms"]) if read["duration_ms"] else None,
        billed_duration_ms=float(read["billed_duration_ms"]) if read["billed_duration_ms"] else None,
        memory_size_mb=int(read["memory_size_mb"]) if read["memory_size_mb"] else None,
        max_memory_used_mb=int(read["max_memory_used_mb"]) if read["max_memory_used_mb"] else None,
        init_duration_ms=float(read["init_duration_ms"]) if read["init_duration_ms"] else None,
        status=_value(_STATUS, text),
        error_type=_value(_ERROR_TYPE, text),
    )


def _platform(message: str) -> Shape | None:
    """The Lambda service's text lines."""
    for kind, pattern in (("start", _START), ("end", _END), ("timeout", _TIMEOUT), ("runtime_exit", _EXIT)):
        if found := pattern.match(message):
            return Shape(kind, found["id"])  # type: ignore[arg-type]
    if found := _REPORT.match(message):
        return Shape("report", found["id"], figures=figures(message))
    if found := _FAULT.match(message):
        return Shape("error_record", found["id"], error=detail(found["type"], found["message"] or None))
    if _EXIT_MARKER.match(message):
        return Shape("runtime_exit", exit_marker=True)
    if _INIT_REPORT.match(message):
        init = figures(message)
        if init.status is not None and init.status != "success":
            return Shape("init_error", figures=init, error=detail(init.error_type, None))
        return Shape("platform", figures=init)
    return Shape("platform") if _PLATFORM.match(message) else None


def _runtime(message: str) -> Shape:
    """A runtime's line: its error record, or a line its logging wrote with the request id."""
    if error := python_record(message):
        return Shape("error_record", error=error)
    if logged := _PYTHON_LOGGING.match(message):
        return Shape(request_id=request_id(logged["id"]))
    if console := _CONSOLE.match(message):
        rest, level = console["rest"], console["level"]
        error = node_record(rest) if level == "ERROR" else dotnet_record(rest) if level == "fail" else None
        return Shape("error_record" if error else "function", request_id(console["id"]), error=error)
    if error := java_record(message) or bare_document(message):
        return Shape("error_record", error=error)
    return FUNCTION


def shape(message: str) -> Shape:
    """What a text event looks like."""
    return _platform(message) or _runtime(message)
