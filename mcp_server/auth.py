"""Bearer-key authentication as pure ASGI middleware (never buffers a streaming response)."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

logger = logging.getLogger(__name__)

REALM = "incident-response"


class BearerAuth:
    """Requires ``Authorization: Bearer <key>`` matching one of ``keys`` on every HTTP path except the exempt
    ones. Keys are compared in constant time, all of them every time, and never logged."""

    def __init__(
        self, app: ASGIApp, keys: Iterable[str], exempt_paths: Iterable[str] = ("/healthz",)
    ) -> None:
        self._app = app
        self._keys = [key.encode() for key in keys]
        if not self._keys:
            raise ValueError("BearerAuth needs at least one key")
        self._exempt = frozenset(exempt_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._exempt:
            await self._app(scope, receive, send)
            return
        problem = self._problem(Headers(scope=scope).get("authorization"))
        if problem is None:
            await self._app(scope, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        logger.warning("401 %s %s from %s: %s", scope["method"], scope["path"], client[0], problem)
        await _reject(send, problem)

    def _problem(self, header: str | None) -> str | None:
        if not header:
            return "missing Authorization header (send 'Authorization: Bearer <key>')"
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return "unsupported authorization scheme (send 'Authorization: Bearer <key>')"
        token = token.strip()
        if not token:
            return "empty bearer token"
        presented = token.encode()
        matched = False
        for key in self._keys:  # no early exit: the time taken does not depend on which key matched
            matched |= hmac.compare_digest(presented, key)
        return None if matched else "invalid bearer token"


async def _reject(send: Send, problem: str) -> None:
    body = json.dumps({"error": "unauthorized", "error_description": problem}).encode()
    challenge = f'Bearer realm="{REALM}"'
    if problem in ("invalid bearer token", "empty bearer token"):
        challenge += ', error="invalid_token"'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
