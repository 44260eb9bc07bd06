"""One execution environment's runtime process: what Lambda's Python runtime does inside the sandbox.

Started by :mod:`chaos.workload.environment` as ``python -I worker.py CODE_DIR HANDLER IN_FD OUT_FD``,
with the function's environment (its variables, the role's credentials, Lambda's reserved variables) and two
pipes: IN_FD brings invocations, OUT_FD takes newline-delimited JSON frames back (``init``, ``log``,
``result``). Standard library only at import time: the handler's own imports are the function's.

Error records follow Lambda's Python runtime: ``Runtime.ImportModuleError``,
``Runtime.HandlerNotFound``, ``Runtime.MalformedHandlerName``, ``Runtime.UserCodeSyntaxError`` for a
handler that cannot be loaded, the exception's class name for one that raises, and a log event
``[ERROR] <type>: <message>`` followed by the traceback.

With ``AWS_LAMBDA_LOG_FORMAT=JSON`` the logging module's records and the unhandled-error record are the
JSON documents the Python runtime interface client writes (``awslambdaric/lambda_runtime_log_utils.py``
``JsonFormatter``, ``awslambdaric/bootstrap.py`` ``log_error``), each log frame carrying its level the way
the client's frame type does, so the platform can filter by ``ApplicationLogLevel``; ``print`` output stays
plain text. ``AWS_LAMBDA_LOG_LEVEL`` sets the root logger's level (``TRACE`` as ``DEBUG``), as the client
does.
"""

from __future__ import annotations

import importlib
import io
import json
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

_lock = threading.Lock()
_out: TextIO = sys.stdout
_request_id = ""
_JSON = os.environ.get("AWS_LAMBDA_LOG_FORMAT", "").upper() == "JSON"
# The level each Python level is framed with (the client's frame types), by its level rounded to tens.
_FRAME_LEVELS = {10: "DEBUG", 20: "INFO", 30: "WARN", 40: "ERROR", 50: "FATAL"}
# A record's attributes that are not extra fields of its JSON document (the client's reserved fields).
_RESERVED = frozenset(
    [
        "name",
        "msg",
        "args",
        "levelname",
        "levelno",
        "pathname",
        "filename",
        "module",
        "exc_info",
        "exc_text",
        "stack_info",
        "lineno",
        "funcName",
        "created",
        "msecs",
        "relativeCreated",
        "thread",
        "threadName",
        "processName",
        "process",
        "aws_request_id",
        "tenant_id",
        "_frame_type",
    ]
)


def _send(frame: dict[str, Any]) -> None:
    with _lock:
        _out.write(json.dumps(frame, default=str) + "\n")
        _out.flush()


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _LambdaLogHandler(logging.Handler):
    """The runtime's root-logger handler: ``[LEVEL]\\t<time>\\t<request id>\\t<message>``, one event per
    record (a multi-line record, a traceback say, stays one event)."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        _send({"log": f"[{record.levelname}]\t{_stamp()}\t{_request_id}\t{message}\n"})


class _LambdaJsonHandler(logging.Handler):
    """The runtime's root-logger handler in JSON format: one JSON document per record."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = min(50, max(0, record.levelno)) // 10 * 10
            document = _json_record(record, logging.getLevelName(level))
            _send({"log": json.dumps(document, ensure_ascii=False) + "\n", "level": _FRAME_LEVELS.get(level)})
        except Exception:
            self.handleError(record)


def _json_record(record: logging.LogRecord, level_name: str) -> dict[str, Any]:
    exc_info = record.exc_info
    document: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created)),
        "level": level_name,
        "message": record.getMessage(),
        "logger": record.name,
        "stackTrace": traceback.format_tb(exc_info[2]) if exc_info else None,
        "errorType": exc_info[0].__name__ if exc_info and exc_info[0] else None,
        "errorMessage": str(exc_info[1]) if exc_info else None,
        "requestId": _request_id,
        "location": f"{record.pathname}:{record.funcName}:{record.lineno}" if exc_info else None,
    }
    extras = {k: v for k, v in record.__dict__.items() if k not in _RESERVED and k not in document}
    return {k: v for k, v in (document | extras).items() if v is not None}


class _LineStream(io.TextIOBase):
    """stdout/stderr of the function: each complete line becomes one log event, as on Lambda."""

    def __init__(self) -> None:
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            _send({"log": line + "\n"})
        return len(text)

    def flush(self) -> None:
        if self._pending:
            _send({"log": self._pending + "\n"})
            self._pending = ""


class _Fault(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


class _Context:
    """The context object Lambda passes to a Python handler."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.invoked_function_arn: str = request["invoked_function_arn"]
        self.aws_request_id: str = request["request_id"]
        self._deadline_ms: int = request["deadline_ms"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _load(handler: str) -> Callable[..., Any]:
    try:
        module_name, function_name = handler.rsplit(".", 1)
    except ValueError as error:
        raise _Fault("Runtime.MalformedHandlerName", f"Bad handler '{handler}': {error}") from None
    try:
        module = importlib.import_module(module_name.replace("/", "."))
    except ImportError as error:
        raise _Fault(
            "Runtime.ImportModuleError", f"Unable to import module '{module_name}': {error}"
        ) from None
    except SyntaxError as error:
        raise _Fault(
            "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {error}"
        ) from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise _Fault(
            "Runtime.HandlerNotFound", f"Handler '{function_name}' missing on module '{module_name}'"
        )
    return function  # type: ignore[no-any-return]


def _error_record(error: BaseException) -> dict[str, Any]:
    if isinstance(error, _Fault):
        return {"errorType": error.error_type, "errorMessage": str(error), "stackTrace": []}
    frames = traceback.extract_tb(error.__traceback__)[1:]  # without the runtime's own frame
    return {
        "errorType": type(error).__name__,
        "errorMessage": str(error),
        "stackTrace": traceback.format_list(frames),
    }


def _marshal_error(error: Exception) -> dict[str, Any]:
    return {
        "errorType": "Runtime.MarshalError",
        "errorMessage": f"Unable to marshal response: {error}",
        "stackTrace": [],
    }


def _log_error(record: dict[str, Any]) -> None:
    if _JSON:
        document = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "log_level": "ERROR",
            "errorMessage": record["errorMessage"],
            "errorType": record["errorType"],
            "requestId": _request_id,
            "stackTrace": record["stackTrace"],
        }
        _send({"log": json.dumps(document, ensure_ascii=False), "level": "ERROR"})
        return
    trace = "".join(record["stackTrace"])
    _send(
        {
            "log": f"[ERROR] {record['errorType']}: {record['errorMessage']}\n"
            f"Traceback (most recent call last):\n{trace}"
        }
    )


def main() -> None:
    global _out, _request_id
    code_dir, handler_name, in_fd, out_fd = sys.argv[1:5]
    requests = os.fdopen(int(in_fd), "r", encoding="utf-8")
    _out = os.fdopen(int(out_fd), "w", encoding="utf-8")
    sys.stdout = sys.stderr = _LineStream()
    root = logging.getLogger()
    root.handlers = [_LambdaJsonHandler() if _JSON else _LambdaLogHandler()]
    level = {"TRACE": "DEBUG"}.get(os.environ.get("AWS_LAMBDA_LOG_LEVEL", "").upper())
    level = level or os.environ.get("AWS_LAMBDA_LOG_LEVEL", "").upper()
    if level in logging.getLevelNamesMapping():
        root.setLevel(level)
    sys.path.insert(0, code_dir)
    os.chdir(code_dir)

    started = time.perf_counter()
    init_error: dict[str, Any] | None = None
    handler: Callable[..., Any] | None = None
    try:
        handler = _load(handler_name)
    except Exception as error:
        init_error = _error_record(error)
        _log_error(init_error)
    _send({"init": {"ms": (time.perf_counter() - started) * 1000, "error": init_error}})

    for line in requests:
        request = json.loads(line)
        _request_id = request["request_id"]
        if handler is None:  # Lambda retries a failed init on every invocation; it fails the same way
            assert init_error is not None
            _log_error(init_error)
            _send({"result": {"error": init_error}})
            continue
        outcome: dict[str, Any]
        try:
            value = handler(request["event"], _Context(request))
        except Exception as error:
            record = _error_record(error)
            _log_error(record)
            outcome = {"error": record}
        else:
            try:
                outcome = {"value": json.loads(json.dumps(value))}
            except (TypeError, ValueError) as error:
                record = _marshal_error(error)
                _log_error(record)
                outcome = {"error": record}
        sys.stdout.flush()
        _send({"result": outcome})


if __name__ == "__main__":
    main()
