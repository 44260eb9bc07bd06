"""The console's signed cookies, as HS256 JWTs made and checked by PyJWT (the MCP server's JWT library):

- the session (``console_session``): who signed in, how, and until when the session lasts (``end``: a key
  session CONSOLE_SESSION_HOURS after the sign-in, an OAuth session with its access token) — never a key
  or a token. Each cookie lives CONSOLE_SESSION_COOKIE_MINUTES (its ``exp``, never past ``end``), and every
  signed-in request gets a fresh one (``ConsoleAuth``): a browser in use stays signed in until ``end``, a
  cookie nobody uses — left in a closed tab, or copied — dies within minutes. Nothing is stored on the
  server, so a copy stays valid until its own ``exp`` and can be renewed by whoever holds it until then;
  sign-out deletes the browser's cookie, and changing CONSOLE_SESSION_SECRET ends every session at once;
- the sign-in in progress (``console_signin``, path /auth, ten minutes): the OAuth ``state``, the PKCE
  verifier and the page to return to, checked when the issuer sends the browser back.

PyJWT checks each cookie's own expiry, its kind and its required claims; itsdangerous' timed serializer
checks a signature and its age, so those would be hand-written again.

Each kind has its own audience, so neither is accepted as the other. A bearer access token is never
mistaken for a cookie either: the MCP server's verifier accepts asymmetric signatures only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import jwt

SESSION_COOKIE: Final = "console_session"
SIGNIN_COOKIE: Final = "console_signin"
CSRF_COOKIE: Final = "console_csrf"
SIGNIN_SECONDS: Final = 600
ALGORITHM: Final = "HS256"
SESSION_AUDIENCE: Final = "incident-console/session"
SIGNIN_AUDIENCE: Final = "incident-console/sign-in"
COOKIE_SECONDS: Final = 600


@dataclass(frozen=True)
class Identity:
    subject: str
    via: str  # "key" or "oauth"
    expires_at: int  # the session's end, not one cookie's
    key_id: str | None = None  # a key session's key, as ``Cookies.key_id`` names it
    signed_in_at: int = 0  # when the person signed in (a decision on a plan wants a recent one)


@dataclass(frozen=True)
class PendingSignIn:
    state: str
    verifier: str
    next_path: str


class Cookies:
    """Makes and reads the signed cookies under one secret; ``secure`` adds the Secure attribute."""

    def __init__(
        self,
        secret: bytes,
        *,
        secure: bool,
        keys: Iterable[str] = (),
        cookie_seconds: int = COOKIE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self.secure = secure
        self.cookie_seconds = cookie_seconds
        self._clock = clock
        # A key session names its key by an HMAC of it, so taking a key out of MCP_API_KEY ends its sessions.
        self._key_ids = frozenset(self.key_id(key) for key in keys)

    @classmethod
    def with_random_secret(
        cls, *, secure: bool, keys: Iterable[str] = (), cookie_seconds: int = COOKIE_SECONDS
    ) -> Cookies:
        return cls(secrets.token_bytes(32), secure=secure, keys=keys, cookie_seconds=cookie_seconds)

    def key_id(self, key: str) -> str:
        return hmac.new(self._secret, b"key:" + key.encode(), hashlib.sha256).hexdigest()[:32]

    def session(self, identity: Identity, *, key: str | None = None) -> str:
        """A cookie for ``identity`` living ``cookie_seconds`` from now, never past the session's end."""
        now = int(self._clock())
        claims: dict[str, Any] = {
            "sub": identity.subject,
            "via": identity.via,
            "end": identity.expires_at,
            "exp": min(now + self.cookie_seconds, identity.expires_at),
            "signed_in_at": identity.signed_in_at,
            "iat": now,
            "aud": SESSION_AUDIENCE,
        }
        key_id = self.key_id(key) if key is not None else identity.key_id
        if key_id is not None:
            claims["key_id"] = key_id
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def session_header(self, identity: Identity, *, https: bool, key: str | None = None) -> str:
        """The Set-Cookie value of a new session cookie for ``identity``."""
        value = self.session(identity, key=key)
        max_age = min(self.cookie_seconds, identity.expires_at - int(self._clock()))
        return self.header(SESSION_COOKIE, value, max_age=max_age, https=https)

    def read_session(self, value: str | None) -> Identity | None:
        claims = self._decode(value, SESSION_AUDIENCE, ("exp", "end", "sub", "via"))
        if claims is None:
            return None
        key_id = claims.get("key_id")
        if claims["via"] == "key" and key_id not in self._key_ids:
            return None
        signed_in_at = int(claims.get("signed_in_at") or 0)
        return Identity(str(claims["sub"]), str(claims["via"]), int(claims["end"]), key_id, signed_in_at)

    def form_token(self, identity: Identity, *bound: str) -> str:
        """A form's token for ``identity``'s session and what the form acts on (``bound``): a form made
        for one session, incident or plan is refused for any other."""
        parts = (identity.subject, identity.via, str(identity.signed_in_at), *bound)
        message = "\0".join(("form", *parts)).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def sign_in(self, pending: PendingSignIn) -> str:
        claims = {
            "state": pending.state,
            "verifier": pending.verifier,
            "next": pending.next_path,
            "exp": int(self._clock()) + SIGNIN_SECONDS,
            "aud": SIGNIN_AUDIENCE,
        }
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def read_sign_in(self, value: str | None) -> PendingSignIn | None:
        claims = self._decode(value, SIGNIN_AUDIENCE, ("exp", "state", "verifier", "next"))
        if claims is None:
            return None
        return PendingSignIn(str(claims["state"]), str(claims["verifier"]), str(claims["next"]))

    def _decode(self, value: str | None, audience: str, required: tuple[str, ...]) -> dict[str, Any] | None:
        if not value:
            return None
        try:
            claims: dict[str, Any] = jwt.decode(
                value,
                self._secret,
                algorithms=[ALGORITHM],
                audience=audience,
                options={"require": list(required)},
            )
        except jwt.InvalidTokenError:  # tampered, expired, another kind, another secret
            return None
        return claims

    def header(self, name: str, value: str, *, max_age: int, path: str = "/", https: bool = False) -> str:
        """A Set-Cookie value: HttpOnly, SameSite=Lax, Secure when the console is served over https (its
        public URL, or this request)."""
        secure = "; Secure" if self.secure or https else ""
        return f"{name}={value}; Max-Age={max(max_age, 0)}; Path={path}; HttpOnly; SameSite=Lax{secure}"

    def clearing(self, name: str, *, path: str = "/", https: bool = False) -> str:
        return self.header(name, "", max_age=0, path=path, https=https)


def keys_match(presented: str, keys: Iterable[str]) -> str | None:
    """The configured key ``presented`` equals, compared with every key in constant time, else None."""
    matched: str | None = None
    candidate = presented.encode()
    for key in keys:  # no early exit: the time taken does not depend on which key matched
        if hmac.compare_digest(candidate, key.encode()):
            matched = key
    return matched
