"""Sign-in for the console off loopback. Three ways in, all ending in the same request handling:

- scripts send ``Authorization: Bearer`` with one of the MCP server's keys or (OAuth mode) an access token
  from its identity provider, checked by the MCP server's own ``BearerAuth`` and ``JwtVerifier``;
- a browser in OAuth mode is sent to the issuer (authorization code with PKCE) and comes back to
  /auth/callback, where the access token it gets is verified like a bearer token before a session opens;
- a browser with keys only gets a form at /auth/login (Origin and a form token checked) for a key.

A session is a short-lived signed cookie (``console.sessions``), renewed on every signed-in request. Pages
asked for by a browser (Accept: text/html) without one are redirected to the sign-in; every other request
without a credential gets the 401 JSON. Wrong keys and bearer credentials are throttled per client
(``mcp_server.throttle``), and keys shorter than the MCP server's minimum are refused at start.
/healthz, /static/* (a stylesheet and a script, nothing secret) and /auth/* (``console.auth_routes``)
are open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from console.issuer import IssuerClient
from console.sessions import SESSION_COOKIE, Cookies, Identity
from console.settings import ConsoleSettings
from mcp_server.access_tokens import JwtVerifier, TokenPolicy
from mcp_server.auth import BearerAuth
from mcp_server.jwks import JwksCache
from mcp_server.keys import require_strong_keys
from mcp_server.throttle import FailureThrottle, trusting_proxies

OPEN_PATHS: Final = frozenset({"/healthz"})
OPEN_PREFIXES: Final = ("/static/", "/auth/")


@dataclass(frozen=True)
class SignIn:
    """How the console is entered off loopback, from the settings."""

    cookies: Cookies
    keys: tuple[str, ...]
    tokens: JwtVerifier | None
    issuer: IssuerClient | None
    public_url: str | None
    session_seconds: int
    throttle: FailureThrottle
    proxies: list[str]


def sign_in(settings: ConsoleSettings) -> SignIn | None:
    """None on loopback (open, as always); ValueError when the console cannot be entered as configured."""
    if settings.loopback():
        return None
    where = f"incident-console on {settings.host} (not loopback)"
    keys = tuple(settings.api_keys())
    require_strong_keys(list(keys), where)
    tokens: JwtVerifier | None = None
    issuer: IssuerClient | None = None
    if settings.oauth_issuer is not None and settings.oauth_audience is not None:
        if settings.public_url is None:
            raise ValueError(
                f"{where} in OAuth mode requires CONSOLE_PUBLIC_URL, the console's public https URL "
                "(e.g. https://console.example.com): the issuer sends browsers back to "
                "<CONSOLE_PUBLIC_URL>/auth/callback"
            )
        if not settings.oauth_client_id:
            raise ValueError(
                f"{where} in OAuth mode requires CONSOLE_OAUTH_CLIENT_ID, the console's client id at "
                f"{settings.oauth_issuer} (with {settings.public_url}/auth/callback as a redirect URI)"
            )
        policy = TokenPolicy(settings.oauth_issuer, settings.oauth_audience, settings.scopes())
        tokens = JwtVerifier(policy, JwksCache(settings.oauth_issuer, settings.oauth_jwks_url))
        secret = settings.oauth_client_secret
        issuer = IssuerClient(
            settings.oauth_issuer,
            settings.oauth_client_id,
            secret.get_secret_value() if secret is not None else None,
            f"{settings.public_url}/auth/callback",
            settings.scopes(),
        )
    elif not keys:
        raise ValueError(
            f"{where} requires bearer keys or OAuth: set MCP_API_KEY (or CONSOLE_API_KEY) to the MCP "
            "server's keys, or MCP_OAUTH_ISSUER and MCP_OAUTH_AUDIENCE (with CONSOLE_OAUTH_CLIENT_ID and "
            "CONSOLE_PUBLIC_URL)"
        )
    return SignIn(
        _cookies(settings, keys),
        keys,
        tokens,
        issuer,
        settings.public_url,
        int(settings.session_hours * 3600),
        FailureThrottle(settings.sign_in_failures_per_minute),
        settings.proxies(),
    )


def _cookies(settings: ConsoleSettings, keys: tuple[str, ...]) -> Cookies:
    secure = settings.public_url is not None and settings.public_url.startswith("https://")
    seconds = settings.session_cookie_minutes * 60
    secret = settings.session_secret
    if secret is None:
        return Cookies.with_random_secret(secure=secure, keys=keys, cookie_seconds=seconds)
    return Cookies(secret.get_secret_value().encode(), secure=secure, keys=keys, cookie_seconds=seconds)


class ConsoleAuth:
    """Pure ASGI: a valid session cookie (answered with a fresh one), else the bearer check
    (``BearerAuth``, throttled), else for a browser's page request a redirect to the sign-in. The client
    and scheme come from X-Forwarded-* when the connection is from a trusted proxy."""

    def __init__(self, app: ASGIApp, setup: SignIn) -> None:
        self._app = app
        self._cookies = setup.cookies
        self._bearer = BearerAuth(
            app, setup.keys, tokens=setup.tokens, exempt_paths=(), throttle=setup.throttle
        )
        self._entry = trusting_proxies(self._dispatch, setup.proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._entry(scope, receive, send)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        identity = self._cookies.read_session(_cookie(headers, SESSION_COOKIE))
        if identity is not None:
            scope.setdefault("state", {})["identity"] = identity
            await self._app(scope, receive, self._renewing(send, identity, scope.get("scheme") == "https"))
            return
        if (
            "authorization" not in headers
            and scope["method"] in ("GET", "HEAD")
            and "text/html" in headers.get("accept", "")
        ):
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            response = RedirectResponse(f"/auth/login?next={quote(target, safe='')}", status_code=303)
            await response(scope, receive, send)
            return
        await self._bearer(scope, receive, send)

    def _renewing(self, send: Send, identity: Identity, https: bool) -> Send:
        """``send`` with a fresh session cookie added to the response (unless it sets one itself)."""

        async def renewed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if not any(c.startswith(f"{SESSION_COOKIE}=") for c in headers.getlist("set-cookie")):
                    headers.append("set-cookie", self._cookies.session_header(identity, https=https))
            await send(message)

        return renewed


def _cookie(headers: Headers, name: str) -> str | None:
    for header in headers.getlist("cookie"):
        for pair in header.split(";"):
            key, _, value = pair.strip().partition("=")
            if key == name:
                return value
    return None
