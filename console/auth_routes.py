"""The sign-in's pages: /auth/login (GET: to the issuer, or the key form; POST: a key), /auth/callback
(back from the issuer) and /auth/logout. Every refusal is the sign-in page with what went wrong."""

from __future__ import annotations

import logging
import secrets
import time
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from console.auth import SignIn
from console.issuer import SignInFailed, new_verifier
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
from console.templating import Render
from mcp_server.access_tokens import TokenRejected
from mcp_server.throttle import client_of

logger = logging.getLogger(__name__)

HOME: Final = "/incidents"


class AuthRoutes:
    """The /auth/* routes of a console that requires a sign-in, rendered with ``render``."""

    def __init__(self, setup: SignIn, render: Render) -> None:
        self._setup = setup
        self._render = render
        self._cookies = setup.cookies

    def routes(self) -> list[Route]:
        return [
            Route("/auth/login", self.login, methods=["GET", "POST"]),
            Route("/auth/callback", self.callback, methods=["GET"]),
            Route("/auth/logout", self.logout, methods=["POST"]),
        ]

    async def login(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.key_login(request)
        if self._setup.issuer is None:
            return self._key_form(request)
        state, verifier = secrets.token_urlsafe(24), new_verifier()
        try:
            url = await self._setup.issuer.authorization_url(state, verifier)
        except SignInFailed as error:
            return self._refused(request, 502, str(error))
        response = RedirectResponse(url, status_code=302)
        pending = self._cookies.sign_in(PendingSignIn(state, verifier, _local(request)))
        response.headers.append(
            "set-cookie",
            self._cookies.header(
                SIGNIN_COOKIE, pending, max_age=SIGNIN_SECONDS, path="/auth", https=_https(request)
            ),
        )
        return response

    async def key_login(self, request: Request) -> Response:
        setup = self._setup
        if not setup.keys:
            return self._refused(request, 405, "this console signs in through its identity provider")
        if not same_origin(request, setup.public_url):
            return self._refused(request, 403, "the form was sent from another site")
        async with request.form() as form:
            presented = str(form.get("key", ""))
            form_token = str(form.get("form_token", ""))
            next_path = _local_path(str(form.get("next", HOME)))
        expected = request.cookies.get(CSRF_COOKIE, "")
        if not expected or not secrets.compare_digest(form_token.encode(), expected.encode()):
            return self._refused(request, 403, "the form has expired: open the sign-in page again")
        client = client_of(request.scope)
        wait = setup.throttle.retry_after(client)
        if wait:  # refused before the key is compared: a guesser learns nothing while it waits
            problem = f"Too many wrong keys from your address: try again in {wait} s."
            response = self._key_form(request, 429, problem)
            response.headers["retry-after"] = str(wait)
            return response
        key = keys_match(presented, setup.keys)
        if key is None:
            setup.throttle.failed(client)
            logger.warning("key sign-in refused from %s", client)
            return self._key_form(request, 401, "That key is not accepted.")
        now = int(time.time())
        identity = Identity("key", "key", now + setup.session_seconds, signed_in_at=now)
        response = RedirectResponse(next_path, status_code=303)
        _open_session(response, self._cookies, identity, _https(request), key=key)
        response.headers.append(
            "set-cookie", self._cookies.clearing(CSRF_COOKIE, path="/auth", https=_https(request))
        )
        return response

    async def callback(self, request: Request) -> Response:
        issuer, tokens = self._setup.issuer, self._setup.tokens
        if issuer is None or tokens is None:
            return self._refused(request, 404, "this console has no identity provider (sign in with a key)")
        pending = self._cookies.read_sign_in(request.cookies.get(SIGNIN_COOKIE))
        if pending is None:
            return self._refused(request, 400, "no sign-in in progress in this browser (or it took too long)")
        params = request.query_params
        state = params.get("state", "")
        if not secrets.compare_digest(state.encode(), pending.state.encode()):
            return self._refused(request, 400, "the sign-in's state does not match: start again")
        if "error" in params:
            return self._refused(request, 400, f"the issuer refused: {params['error'][:100]}")
        try:
            token = await issuer.exchange(params.get("code", ""), pending.verifier)
            access = await tokens.check(token)
        except SignInFailed as error:
            return self._refused(request, 502, str(error))
        except TokenRejected as error:
            return self._refused(request, 403, f"the issuer's token is not accepted here: {error}")
        missing = [scope for scope in tokens.policy.required_scopes if scope not in access.scopes]
        if missing:
            return self._refused(request, 403, f"the token lacks the scope(s) {' '.join(missing)}")
        now = int(time.time())
        expires_at = access.expires_at if access.expires_at is not None else now + self._setup.session_seconds
        identity = Identity(access.subject or access.client_id, "oauth", expires_at, signed_in_at=now)
        response = RedirectResponse(pending.next_path, status_code=303)
        _open_session(response, self._cookies, identity, _https(request))
        response.headers.append(
            "set-cookie", self._cookies.clearing(SIGNIN_COOKIE, path="/auth", https=_https(request))
        )
        return response

    async def logout(self, request: Request) -> Response:
        """Deletes this browser's session cookie. A copy made before stays valid until its own expiry
        (CONSOLE_SESSION_COOKIE_MINUTES at most): nothing is stored on the server to revoke it with."""
        if not same_origin(request, self._setup.public_url):
            return self._refused(request, 403, "the sign-out was sent from another site")
        response = self._render(request, "login.html", signed_out=True, form_token=None)
        response.headers.append("set-cookie", self._cookies.clearing(SESSION_COOKIE, https=_https(request)))
        return response

    def _key_form(self, request: Request, status: int = 200, problem: str | None = None) -> Response:
        token = secrets.token_urlsafe(24)
        response = self._render(
            request, "login.html", status=status, form_token=token, next_path=_local(request), problem=problem
        )
        response.headers.append(
            "set-cookie",
            self._cookies.header(
                CSRF_COOKIE, token, max_age=SIGNIN_SECONDS, path="/auth", https=_https(request)
            ),
        )
        return response

    def _refused(self, request: Request, status: int, problem: str) -> Response:
        logger.warning("sign-in refused: %s", problem, extra={"status": status})
        return self._render(
            request, "login.html", status=status, problem=problem, retry=True, form_token=None
        )


def _https(request: Request) -> bool:
    return request.url.scheme == "https"


def _open_session(
    response: Response, cookies: Cookies, identity: Identity, https: bool, key: str | None = None
) -> None:
    response.headers.append("set-cookie", cookies.session_header(identity, https=https, key=key))
    logger.info(
        "signed in (%s) until %d", identity.via, identity.expires_at, extra={"subject": identity.subject}
    )


def _local(request: Request) -> str:
    return _local_path(request.query_params.get("next", HOME))


def _local_path(value: str) -> str:
    """``value`` if it is a path on this console (never another site, never /auth), else the list."""
    if not value.startswith("/") or value.startswith(("//", "/\\", "/auth/")) or not value.isprintable():
        return HOME
    return value


def same_origin(request: Request, public_url: str | None) -> bool:
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
