"""Sign-in for the console off loopback. Three ways in, all ending in the same request handling:

- scripts send ``Authorization: Bearer`` with one of the MCP server's keys or (OAuth mode) an access token
  from its identity provider, checked by the MCP server's own ``BearerAuth`` and ``JwtVerifier``;
- a browser in OAuth mode is sent to the issuer (authorization code with PKCE) and comes back to
  /auth/callback, where the access token it gets is verified like a bearer token before a session opens;
- a browser with keys only gets a form at /auth/login (Origin and a form token checked) for a key.

A session is a signed cookie (``console.sessions``). Pages asked for by a browser (Accept: text/html)
without one are redirected to the sign-in; every other request without a credential gets the 401 JSON.
/healthz, /static/* (a stylesheet and a script, nothing secret) and /auth/* are open.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from console.issuer import IssuerClient, SignInFailed, new_verifier
from console.sessions import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    SIGNIN_COOKIE,
    SIGNIN_SECONDS,
    Cookies,
    Identity,
    PendingSignIn,
    keys_match,
)
from console.settings import ConsoleSettings
from mcp_server.access_tokens import JwtVerifier, TokenPolicy, TokenRejected
from mcp_server.auth import BearerAuth
from mcp_server.jwks import JwksCache

logger = logging.getLogger(__name__)

OPEN_PATHS: Final = frozenset({"/healthz"})
OPEN_PREFIXES: Final = ("/static/", "/auth/")
HOME: Final = "/incidents"
Render = Callable[..., HTMLResponse]  # render(request, template, status=..., **values)


@dataclass(frozen=True)
class SignIn:
    """How the console is entered off loopback, from the settings."""

    cookies: Cookies
    keys: tuple[str, ...]
    tokens: JwtVerifier | None
    issuer: IssuerClient | None
    public_url: str | None
    session_seconds: int


def sign_in(settings: ConsoleSettings) -> SignIn | None:
    """None on loopback (open, as always); ValueError when the console cannot be entered as configured."""
    if settings.loopback():
        return None
    where = f"incident-console on {settings.host} (not loopback)"
    keys = tuple(settings.api_keys())
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
    secure = settings.public_url is not None and settings.public_url.startswith("https://")
    secret_value = settings.session_secret
    cookies = (
        Cookies(secret_value.get_secret_value().encode(), secure=secure, keys=keys)
        if secret_value is not None
        else Cookies.with_random_secret(secure=secure, keys=keys)
    )
    return SignIn(cookies, keys, tokens, issuer, settings.public_url, int(settings.session_hours * 3600))


class ConsoleAuth:
    """Pure ASGI: a valid session cookie, else the bearer check (``BearerAuth``), else for a browser's
    page request a redirect to the sign-in."""

    def __init__(self, app: ASGIApp, setup: SignIn) -> None:
        self._app = app
        self._cookies = setup.cookies
        self._bearer = BearerAuth(app, setup.keys, tokens=setup.tokens, exempt_paths=())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        identity = self._cookies.read_session(_cookie(headers, SESSION_COOKIE))
        if identity is not None:
            scope.setdefault("state", {})["identity"] = identity
            await self._app(scope, receive, send)
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


def routes(setup: SignIn, render: Render) -> list[Route]:
    """/auth/login (GET: to the issuer, or the key form; POST: a key), /auth/callback, /auth/logout."""
    cookies = setup.cookies

    def https(request: Request) -> bool:
        return request.url.scheme == "https"

    def key_form(request: Request, status: int = 200, problem: str | None = None) -> Response:
        token = secrets.token_urlsafe(24)
        response = render(
            request, "login.html", status=status, form_token=token, next_path=_local(request), problem=problem
        )
        response.headers.append(
            "set-cookie",
            cookies.header(CSRF_COOKIE, token, max_age=SIGNIN_SECONDS, path="/auth", https=https(request)),
        )
        return response

    def refused(request: Request, status: int, problem: str) -> Response:
        logger.warning("sign-in refused: %s", problem, extra={"status": status})
        return render(request, "login.html", status=status, problem=problem, retry=True, form_token=None)

    async def login(request: Request) -> Response:
        if request.method == "POST":
            return await key_login(request)
        if setup.issuer is None:
            return key_form(request)
        state, verifier = secrets.token_urlsafe(24), new_verifier()
        try:
            url = await setup.issuer.authorization_url(state, verifier)
        except SignInFailed as error:
            return refused(request, 502, str(error))
        response = RedirectResponse(url, status_code=302)
        pending = cookies.sign_in(PendingSignIn(state, verifier, _local(request)))
        response.headers.append(
            "set-cookie",
            cookies.header(
                SIGNIN_COOKIE, pending, max_age=SIGNIN_SECONDS, path="/auth", https=https(request)
            ),
        )
        return response

    async def key_login(request: Request) -> Response:
        if not setup.keys:
            return refused(request, 405, "this console signs in through its identity provider")
        if not _same_origin(request, setup.public_url):
            return refused(request, 403, "the form was sent from another site")
        async with request.form() as form:
            presented = str(form.get("key", ""))
            form_token = str(form.get("form_token", ""))
            next_path = _local_path(str(form.get("next", HOME)))
        expected = request.cookies.get(CSRF_COOKIE, "")
        if not expected or not secrets.compare_digest(form_token.encode(), expected.encode()):
            return refused(request, 403, "the form has expired: open the sign-in page again")
        key = keys_match(presented, setup.keys)
        if key is None:
            logger.warning("key sign-in refused from %s", request.client.host if request.client else "?")
            return key_form(request, 401, "That key is not accepted.")
        identity = Identity("key", "key", int(time.time()) + setup.session_seconds)
        response = RedirectResponse(next_path, status_code=303)
        _open_session(response, cookies, identity, https(request), key=key)
        response.headers.append(
            "set-cookie", cookies.clearing(CSRF_COOKIE, path="/auth", https=https(request))
        )
        return response

    async def callback(request: Request) -> Response:
        if setup.issuer is None or setup.tokens is None:
            return refused(request, 404, "this console has no identity provider (sign in with a key)")
        pending = cookies.read_sign_in(request.cookies.get(SIGNIN_COOKIE))
        if pending is None:
            return refused(request, 400, "no sign-in in progress in this browser (or it took too long)")
        params = request.query_params
        state = params.get("state", "")
        if not secrets.compare_digest(state.encode(), pending.state.encode()):
            return refused(request, 400, "the sign-in's state does not match: start again")
        if "error" in params:
            return refused(request, 400, f"the issuer refused: {params['error'][:100]}")
        try:
            token = await setup.issuer.exchange(params.get("code", ""), pending.verifier)
            access = await setup.tokens.check(token)
        except SignInFailed as error:
            return refused(request, 502, str(error))
        except TokenRejected as error:
            return refused(request, 403, f"the issuer's token is not accepted here: {error}")
        missing = [scope for scope in setup.tokens.policy.required_scopes if scope not in access.scopes]
        if missing:
            return refused(request, 403, f"the token lacks the scope(s) {' '.join(missing)}")
        now = int(time.time())
        expires_at = access.expires_at if access.expires_at is not None else now + setup.session_seconds
        identity = Identity(access.subject or access.client_id, "oauth", expires_at)
        response = RedirectResponse(pending.next_path, status_code=303)
        _open_session(response, cookies, identity, https(request))
        response.headers.append(
            "set-cookie", cookies.clearing(SIGNIN_COOKIE, path="/auth", https=https(request))
        )
        return response

    async def logout(request: Request) -> Response:
        if not _same_origin(request, setup.public_url):
            return refused(request, 403, "the sign-out was sent from another site")
        response = render(request, "login.html", signed_out=True, form_token=None)
        response.headers.append("set-cookie", cookies.clearing(SESSION_COOKIE, https=https(request)))
        return response

    return [
        Route("/auth/login", login, methods=["GET", "POST"]),
        Route("/auth/callback", callback, methods=["GET"]),
        Route("/auth/logout", logout, methods=["POST"]),
    ]


def _open_session(
    response: Response, cookies: Cookies, identity: Identity, https: bool, key: str | None = None
) -> None:
    value = cookies.session(identity, key=key)
    max_age = identity.expires_at - int(time.time())
    response.headers.append("set-cookie", cookies.header(SESSION_COOKIE, value, max_age=max_age, https=https))
    logger.info(
        "signed in (%s) until %d", identity.via, identity.expires_at, extra={"subject": identity.subject}
    )


def _cookie(headers: Headers, name: str) -> str | None:
    for header in headers.getlist("cookie"):
        for pair in header.split(";"):
            key, _, value = pair.strip().partition("=")
            if key == name:
                return value
    return None


def _local(request: Request) -> str:
    return _local_path(request.query_params.get("next", HOME))


def _local_path(value: str) -> str:
    """``value`` if it is a path on this console (never another site, never /auth), else the list."""
    if not value.startswith("/") or value.startswith(("//", "/\\", "/auth/")) or not value.isprintable():
        return HOME
    return value


def _same_origin(request: Request, public_url: str | None) -> bool:
    """False when the browser says the request comes from another site (Sec-Fetch-Site, Origin)."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True  # older browsers on a same-origin POST; the form token still has to match
    if public_url is not None:
        parts = urlsplit(public_url)
        return origin == f"{parts.scheme}://{parts.netloc}"
    return urlsplit(origin).netloc == request.headers.get("host")
