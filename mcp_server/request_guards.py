"""A request the SDK refuses correctly but noisily, refused here first with the same answer and one
warning line: a body on ``/messages/`` that is not a JSON-RPC message (400), for which the SDK logs a
traceback and then forwards the error into a session that may already be gone (a second traceback). A
foreign Host or Origin, which the SDK's SSE endpoint answers and then raises on, never reaches the SDK:
``http_guard`` refuses it first."""

from __future__ import annotations

import logging

from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)


class MessageBodyGuard:
    """Reads a POST body on ``path`` (up to ``limit`` bytes; beyond that the SDK answers 413), refuses it
    with 400 unless it is a JSON-RPC message, else hands it on unchanged."""

    def __init__(self, app: ASGIApp, path: str, limit: int) -> None:
        self._app = app
        self._path = path
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._applies(scope):
            await self._app(scope, receive, send)
            return
        messages: list[Message] = []
        size, complete = 0, False
        while not complete and size <= self._limit:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            complete = not message.get("more_body", False)
        if complete:
            body = b"".join(m.get("body", b"") for m in messages)
            try:
                jsonrpc_message_adapter.validate_json(body, by_name=False)
            except ValidationError as error:
                reason = error.errors(include_url=False)[0]["msg"]
                logger.warning("refused a request: not a JSON-RPC message (%s)", reason)
                await Response("Could not parse message", status_code=400)(scope, receive, send)
                return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self._app(scope, replay, send)

    def _applies(self, scope: Scope) -> bool:
        """A JSON POST on the path (the SDK refuses other content types itself, quietly)."""
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self._path:
            return False
        return Headers(scope=scope).get("content-type", "").lower().startswith("application/json")
