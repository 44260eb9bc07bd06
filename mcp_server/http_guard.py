"""The request-guard layer every HTTP app of the project is served through (the MCP server's and the
console's). Pure ASGI: it reads request heads and edits response heads, so streamed and SSE responses pass
through as they are written.

From the outside in: a request id on every log line and response (``logging_setup``); the security
headers (``secure``'s ASGI middleware, which edits only ``http.response.start``); an exception the app
lets out becomes one ERROR line (JSON, the traceback inside a string) and a plain 500; the Host and Origin
allow-list (the SDK's own check: a foreign Host is 421, a foreign Origin 403 — DNS rebinding) on every
path but the open ones (a load balancer's health check names the task's address); and a request body read
whole (up to the body limit) before the app sees it, so a client that leaves mid-body is one INFO line and
never a half request for the app to fail on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from secure import Secure
from secure.headers import (
    CacheControl,
    ContentSecurityPolicy,
    CrossOriginOpenerPolicy,
    ReferrerPolicy,
    XContentTypeOptions,
    XFrameOptions,
)
from secure.middleware import SecureASGIMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_server.logging_setup import RequestIdMiddleware
from mcp_server.settings import LOOPBACK_HOSTS

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("0.0.0.0", "::")  # noqa: S104 - names, not a bind
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _never_framed_sniffed_or_cached(
    csp: ContentSecurityPolicy, referrer: ReferrerPolicy, coop: CrossOriginOpenerPolicy | None = None
) -> Secure:
    headers = Secure(
        cache=CacheControl().no_store(),
        coop=coop,
        csp=csp,
        referrer=referrer,
        xcto=XContentTypeOptions().nosniff(),
        xfo=XFrameOptions().deny(),
    )
    return headers.validate_and_normalize_headers(on_invalid="raise", strict=True)  # checked once, at start


def api_headers() -> Secure:
    """For answers no browser renders (JSON, event streams): nothing to frame, sniff, cache or refer."""
    csp = ContentSecurityPolicy().default_src("'none'").frame_ancestors("'none'")
    return _never_framed_sniffed_or_cached(csp, ReferrerPolicy().no_referrer())


def page_headers() -> Secure:
    """For server-rendered pages: their own script and stylesheet and nothing else, forms posted only to
    themselves, never in a frame, never cached, no referrer to another site. (Not ``no-referrer``: under
    it a browser sends ``Origin: null`` with a form, and the sign-in form's origin check needs the origin.)"""
    csp = (
        ContentSecurityPolicy()
        .default_src("'none'")
        .script_src("'self'")
        .style_src("'self'")
        .img_src("'self'", "data:")  # base.html's empty favicon, data:,
        .form_action("'self'")
        .frame_ancestors("'none'")
        .base_uri("'none'")
    )
    return _never_framed_sniffed_or_cached(
        csp, ReferrerPolicy().same_origin(), CrossOriginOpenerPolicy().same_origin()
    )


def host_allow_list(bind: str, extra_hosts: Iterable[str]) -> TransportSecuritySettings:
    """The Host (and Origin) names a server answers: the loopback names, the address it is bound to (not
    a wildcard) and ``extra_hosts`` ('name', 'name:port' or 'name:*'); a bare name with any port."""
    names = list(LOOPBACK_NAMES)
    if bind not in LOOPBACK_HOSTS and bind not in WILDCARD_BINDS:
        names.append(f"[{bind}]" if ":" in bind else bind)
    allowed: list[str] = []
    for name in names:
        allowed += [name, f"{name}:*"]
    for entry in extra_hosts:
        allowed += (
            [entry] if entry.endswith(":*") or entry.rsplit(":", 1)[-1].isdigit() else [entry, f"{entry}:*"]
        )
    origins = [f"{scheme}://{host}" for host in allowed for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed, allowed_origins=origins
    )


@dataclass(frozen=True)
class GuardPolicy:
    """What the layer allows: the names (``host_allow_list``), the paths open to any Host, the headers
    every response carries, and the largest request body it reads ahead."""

    hosts: TransportSecuritySettings
    open_paths: frozenset[str]
    headers: Secure
    body_limit: int


def guarded(app: ASGIApp, policy: GuardPolicy) -> ASGIApp:
    """``app`` behind the whole layer (see the module's docstring for the order)."""
    inner: ASGIApp = HostOriginGuard(WholeBody(app, policy.body_limit), policy.hosts, policy.open_paths)
    inner = QuietFailures(inner)
    # secure types ``send`` as taking any object; an ASGI app's send takes a message: the same call.
    headed = cast("ASGIApp", SecureASGIMiddleware(inner, secure=policy.headers))
    return RequestIdMiddleware(headed)


class HostOriginGuard:
    """The SDK's Host/Origin check on every HTTP path but ``open_paths``: 421 or 403 with one WARNING."""

    def __init__(self, app: ASGIApp, hosts: TransportSecuritySettings, open_paths: frozenset[str]) -> None:
        self._app = app
        self._check = TransportSecurityMiddleware(hosts)
        self._open = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in self._open:
            refusal = await self._check.validate_request(Request(scope, receive), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self._app(scope, receive, send)


class WholeBody:
    """Reads a request's body (up to ``limit`` bytes; the app reads any more itself, or refuses it) before
    handing the request on, replayed unchanged. A client that disconnects first never reaches the app."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self._app = app
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self._app(scope, receive, send)
            return
        messages: list[Message] = []
        size, complete = 0, False
        while not complete and size <= self._limit:
            message = await receive()
            if message["type"] == "http.disconnect":
                logger.info(
                    "the client went away before its request body was complete (%d bytes read)",
                    size,
                    extra=_request_fields(scope),
                )
                return
            messages.append(message)
            size += len(message.get("body", b""))
            complete = not message.get("more_body", False)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self._app(scope, replay, send)


class QuietFailures:
    """An exception the app lets out: one ERROR line naming the request, and a plain 500 if no answer
    had started (uvicorn would log it again as "Exception in ASGI application")."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, receive, watched)
        except ClientDisconnect:
            logger.info("the client went away before it was answered", extra=_request_fields(scope))
        except Exception:
            logger.exception(
                "failed to answer %s %s",
                scope["method"],
                scope["path"],
                extra=_request_fields(scope) | {"answered": started},
            )
            if not started:
                await PlainTextResponse("Internal Server Error", status_code=500)(scope, receive, send)


def _request_fields(scope: Scope) -> dict[str, object]:
    return {"method": scope["method"], "path": scope["path"]}
