"""One ASGI app: SSE at /sse + /messages/, Streamable HTTP at /mcp, /healthz; bearer auth (static keys,
OAuth access tokens or both), behind the request-guard layer (``http_guard``: Host/Origin checks, security
headers, request ids, quiet failures)."""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from mcp_server.auth import BearerAuth
from mcp_server.http_guard import GuardPolicy, api_headers, guarded, host_allow_list
from mcp_server.oauth import OAuthMode
from mcp_server.request_guards import MessageBodyGuard
from mcp_server.resource_metadata import metadata_routes, metadata_url
from mcp_server.settings import ServerSettings
from mcp_server.throttle import FailureThrottle, trusting_proxies

Transport = Literal["sse", "http"]
SSE_MESSAGES = "/messages/"


async def _healthz(_: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def build_app(
    server: MCPServer,
    settings: ServerSettings,
    *,
    host: str,
    keys: list[str],
    transports: frozenset[Transport] = frozenset({"sse", "http"}),
    oauth: OAuthMode | None = None,
) -> ASGIApp:
    """The HTTP app; no ``keys`` and no ``oauth`` means no authentication (the CLI allows that only on
    loopback)."""
    security = host_allow_list(host, settings.extra_allowed_hosts())
    limit = settings.max_request_body_bytes
    routes: list[BaseRoute] = [Route("/healthz", _healthz, methods=["GET"])]
    if oauth is not None:
        policy = oauth.verifier.policy
        routes += metadata_routes(oauth.resource, policy.issuer, policy.required_scopes)
    public = [route.path for route in routes if isinstance(route, Route)]
    if "sse" in transports:
        routes += server.sse_app(transport_security=security, max_request_body_size=limit, host=host).routes
    lifespan = None
    if "http" in transports:
        # Plain JSON answers to POSTs: the tools send no mid-call notifications, and a JSON body saves
        # opening an event stream per call (about 1.5 ms each; bench/mcp_overhead.py).
        routes += server.streamable_http_app(
            transport_security=security, max_request_body_size=limit, host=host, json_response=True
        ).routes
        lifespan = lambda _: server.session_manager.run()  # noqa: E731 - runs the Streamable HTTP sessions
    app: ASGIApp = Starlette(routes=routes, lifespan=lifespan)
    app = MessageBodyGuard(app, SSE_MESSAGES, limit)
    if keys or oauth is not None:
        app = BearerAuth(
            app,
            keys,
            tokens=oauth.verifier if oauth else None,
            resource_metadata_url=metadata_url(oauth.resource) if oauth else None,
            exempt_paths=public,
            throttle=FailureThrottle(settings.mcp_auth_failures_per_minute),
        )
    guard = GuardPolicy(security, frozenset(public), api_headers(), limit)
    return trusting_proxies(guarded(app, guard), settings.trusted_proxies())  # the client, then the guard
