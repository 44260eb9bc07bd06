"""The runtimes' records of an unhandled error, in the words each runtime writes them (samples and sources:
tests/samples/lambda_logs.py):

- Python (``awslambdaric/bootstrap.py``, ``log_error``): ``[ERROR] <Type>: <message>``, then
  ``Traceback (most recent call last):`` and the frames; the type or the message may be missing
  (``[ERROR] <Type>``, ``[ERROR] <message>``, ``[ERROR]``); lines end with ``\\n`` (or ``\\r``).
- Node.js (``src/LogPatch.js``, ``structuredConsole.logError``): ``<time>\\t<request id>\\tERROR\\t<what>
  \\t{"errorType":...,"errorMessage":...,"stack":[...]}`` where ``<what>`` is ``Invoke Error``,
  ``Uncaught Exception`` or ``Unhandled Promise Rejection``.
- Java (``UserFault.reportableError``): ``<message>: <exception class>`` then the exception's stack trace.
- .NET (``LambdaBootstrap.WriteUnhandledExceptionToLog``): ``<time>\\t<request id>\\tfail\\t<exception>``.
- Ruby, Go and older runtimes: a JSON error document ``{"errorMessage":...,"errorType":...,
  "stackTrace":[...]}``; Go's ``aws-lambda-go`` prints it with the ``log`` package's date prefix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mcp_server.contract.logs import ErrorDetail
from mcp_server.tools.error_detail import detail
from mcp_server.tools.log_shapes import error_type

_PY_RECORD = re.compile(r"^\[ERROR\](?=[ \r\n]|$)")
_PY_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
_PY_HEAD = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?:: (?P<message>.*))?$", re.DOTALL)
_NODE_RECORD = re.compile(
    r"^(?:Invoke Error|Uncaught Exception|Unhandled Promise Rejection)\s*\t\s*(?P<doc>\{.*\})\s*$", re.DOTALL
)
_JAVA = re.compile(r"^(?P<message>[^\n]*): (?P<type>(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*)\n(?P=type)\b")
_DOTNET = re.compile(r"^(?P<type>[A-Za-z_][\w.`+]*(?:Exception|Error)): (?P<message>[^\n]*)")
_GO_LOG_PREFIX = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?=\{)")
_DOCUMENT_KEYS = frozenset(
    {"errorMessage", "errorType", "stackTrace", "stack", "trace", "cause", "requestId"}
)


def python_record(message: str) -> ErrorDetail | None:
    """The Python runtime's ``[ERROR]`` record, in each of its variants."""
    if not _PY_RECORD.match(message):
        return None
    body = message[len("[ERROR]") :]
    traceback = _PY_TRACEBACK.search(body)
    head = (body[: traceback.start()] if traceback else body).replace("\r", "\n").strip(" \n")
    named = _PY_HEAD.match(head)
    if named and (named["message"] is not None or " " not in head):
        return detail(named["type"], named["message"], body[traceback.start() :] if traceback else None)
    return detail(None, head or None, body[traceback.start() :] if traceback else None)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def document(fields: Any) -> ErrorDetail | None:
    """An error document (``errorType`` and ``errorMessage``, a stack), as the runtimes serialise one."""
    if not isinstance(fields, Mapping) or "errorType" not in fields or "errorMessage" not in fields:
        return None
    stack = next((fields[key] for key in ("stackTrace", "stack", "trace") if key in fields), None)
    message = fields["errorMessage"]
    return detail(
        error_type(fields["errorType"]), message if isinstance(message, str) else None, stack, fields
    )


def node_record(rest: str) -> ErrorDetail | None:
    """What follows ``ERROR\\t`` in a Node.js console line, when it is the runtime's error record."""
    found = _NODE_RECORD.match(rest)
    return document(_loads(found["doc"])) if found else None


def dotnet_record(rest: str) -> ErrorDetail | None:
    """What follows ``fail\\t`` in a .NET console line, when it is an exception (``Exception.ToString()``)."""
    found = _DOTNET.match(rest)
    return detail(found["type"], found["message"], rest) if found else None


def java_record(text: str) -> ErrorDetail | None:
    """The Java runtime's ``<message>: <exception class>`` record followed by the stack trace."""
    found = _JAVA.match(text)
    return detail(found["type"], found["message"], text) if found else None


def bare_document(text: str) -> ErrorDetail | None:
    """A whole event that is an error document, with Go's ``log`` date prefix or without."""
    body = _GO_LOG_PREFIX.sub("", text.strip(), count=1)
    if not body.startswith("{"):
        return None
    fields = _loads(body)
    if not isinstance(fields, Mapping) or not set(fields) <= _DOCUMENT_KEYS:
        return None
    return document(fields)


def embedded(message: Any) -> ErrorDetail | None:
    """The error a JSON record's ``message`` carries: Node's error object, Go's error document in a string,
    Java's record."""
    if isinstance(message, Mapping):
        return document(message)
    if isinstance(message, str):
        return bare_document(message) or java_record(message)
    return None
