"""Bearer authentication as pure ASGI middleware (never buffers a streaming response).

Two kinds of bearer credential, either or both: static keys (compared in constant time, all of them every
time, never logged) and OAuth 2.1 access tokens from an identity provider (``JwtVerifier``). A 401 says
how to authenticate (``WWW-Authenticate``, with ``resource_metadata`` in OAuth mode); a token without the
required scopes gets 403 ``insufficient_scope`` (RFC 6750 §3.1). The caller's identity is put where the
SDK looks for it (``scope["user"]``), so a session can only be used by the credential that opened it.
With a ``FailureThrottle``, a client that sent too many wrong credentials gets 429 before any check.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_server.access_tokens import JwtVerifier, TokenRejected
from mcp_server.throttle import FailureThrottle, client_of

logger = logging.getLogger(__name__)

REALM = "incident-response"
STATIC_KEY_CLIENT = "static-key"


@dataclass(frozen=True)
class Refusal:
    status: int
    problem: str
    error: str | None = None  # the RFC 6750 error code; None when no credential was presented
    retry_after: int = 0  # seconds, with 429


class BearerAuth:
    """Requires ``Authorization: Bearer <key or access token>`` on every HTTP path except the exempt ones."""

    def __init__(
        self,
        app: ASGIApp,
        keys: Iterable[str] = (),
        *,
        tokens: JwtVerifier | None = None,
        resource_metadata_url: str | None = None,
        exempt_paths: Iterable[str] = ("/healthz",),
        throttle: FailureThrottle | None = None,
    ) -> None:
        self._app = app
        self._throttle = throttle
        self._keys = [key.encode() for key in keys]
        self._tokens = tokens
        if not self._keys and tokens is None:
            raise ValueError("BearerAuth needs at least one key or an access-token verifier")
        self._metadata_url = resource_metadata_url
        self._scopes = tokens.policy.required_scopes if tokens else ()
        self._exempt = frozenset(exempt_paths)
        credential = "<key>" if tokens is None else "<access token>" if not self._keys else "<key or token>"
        self._how = f"send 'Authorization: Bearer {credential}'"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._exempt:
            await self._app(scope, receive, send)
            return
        outcome = await self._checked(scope, Headers(scope=scope).get("authorization"))
        if isinstance(outcome, Refusal):
            client = (scope.get("client") or ("?", 0))[0]
            logger.warning(
                "%d %s %s from %s: %s",
                outcome.status,
                scope["method"],
                scope["path"],
                client,
                outcome.problem,
                extra={"status": outcome.status, "client": client},
            )
            await self._refuse(send, outcome)
            return
        scope["user"] = AuthenticatedUser(outcome)
        scope["auth"] = AuthCredentials(outcome.scopes)
        await self._app(scope, receive, send)

    async def _checked(self, scope: Scope, header: str | None) -> AccessToken | Refusal:
        """The credential's check, refused unchecked while its client is throttled; a wrong one counts."""
        if self._throttle is None or not header:
            return await self._authenticate(header)
        client = client_of(scope)
        wait = self._throttle.retry_after(client)
        if wait:
            return Refusal(429, f"too many wrong credentials from this client: retry in {wait} s", None, wait)
        outcome = await self._authenticate(header)
        if isinstance(outcome, Refusal) and outcome.error == "invalid_token":
            self._throttle.failed(client)
        return outcome

    async def _authenticate(self, header: str | None) -> AccessToken | Refusal:
        if not header:
            return Refusal(401, f"missing Authorization header ({self._how})")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return Refusal(401, f"unsupported authorization scheme ({self._how})")
        token = token.strip()
        if not token:
            return Refusal(401, "empty bearer token", "invalid_token")
        if self._is_key(token.encode()):
            return AccessToken(token="", client_id=STATIC_KEY_CLIENT, scopes=list(self._scopes))
        if self._tokens is None:
            return Refusal(401, "invalid bearer token", "invalid_token")
        try:
            access = await self._tokens.check(token)
        except TokenRejected as rejected:
            return Refusal(401, str(rejected), "invalid_token")
        missing = [scope for scope in self._scopes if scope not in access.scopes]
        if missing:
            return Refusal(403, f"the token lacks the scope(s) {' '.join(missing)}", "insufficient_scope")
        return access

    def _is_key(self, presented: bytes) -> bool:
        matched = False
        for key in self._keys:  # no early exit: the time taken does not depend on which key matched
            matched |= hmac.compare_digest(presented, key)
        return matched

    async def _refuse(self, send: Send, refusal: Refusal) -> None:
        challenge = [f'Bearer realm="{REALM}"']
        if refusal.error:
            challenge.append(f'error="{refusal.error}"')
        if self._scopes:
            challenge.append(f'scope="{" ".join(self._scopes)}"')
        if self._metadata_url:
            challenge.append(f'resource_metadata="{self._metadata_url}"')
        error = {401: "unauthorized", 429: "too_many_requests"}.get(refusal.status, refusal.error)
        body = json.dumps({"error": error, "error_description": refusal.problem}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", ", ".join(challenge).encode()),
        ]
        if refusal.retry_after:
            headers.append((b"retry-after", str(refusal.retry_after).encode()))
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
