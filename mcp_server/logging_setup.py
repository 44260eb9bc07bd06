"""The server's logs: one JSON object per line on stderr, with the id of the HTTP request being served.

Every value a client sent (paths, query strings, session ids, header values) reaches the log only inside
a JSON string, so a ``%0A`` in a URL cannot start a forged line.
"""

from __future__ import annotations

import json
import logging
import secrets
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_ID_HEADER = "x-request-id"
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)

# Attributes every LogRecord has; anything else on a record came from ``extra=`` and is logged as a field.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn's copy of the message with terminal colours
}


class JsonLinesFormatter(logging.Formatter):
    """time, level, logger, message, request_id, the record's ``extra`` fields and any exception, as one
    line of ASCII JSON (non-ASCII is escaped too: U+2028 and friends break lines in some viewers)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        current = request_id.get()
        if current is not None:
            entry["request_id"] = current
        entry.update((k, v) for k, v in vars(record).items() if k not in _RECORD_ATTRIBUTES)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = record.stack_info
        return json.dumps(entry, default=str)


def configure_logging(level: str, stream: IO[str] | None = None) -> None:
    """JSON lines on ``stream`` (stderr: stdout belongs to the protocol under stdio) for every logger."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLinesFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # The AWS SDK's DEBUG output dumps request and response bodies (the SSM key among them): never below INFO.
    for noisy in ("botocore", "boto3", "urllib3", "s3transfer"):
        logging.getLogger(noisy).setLevel(max(logging.INFO, root.level))
    logging.captureWarnings(True)


class RequestIdMiddleware:
    """Gives every HTTP request an id: in each log line written while serving it, and in the response's
    ``x-request-id`` header (so a client can quote it)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        current = secrets.token_hex(8)
        token = request_id.set(current)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                MutableHeaders(scope=message).append(REQUEST_ID_HEADER, current)
            await send(message)

        try:
            await self._app(scope, receive, send_with_id)
        finally:
            request_id.reset(token)
