"""The console as an OAuth 2.1 client of the MCP server's identity provider: the authorization code flow
with PKCE (S256) for a browser sign-in. The issuer's endpoints come from its OpenID Connect discovery
document or, failing that, its RFC 8414 metadata (read once, on the first sign-in), and are held to the
same rules as the issuer URL itself (https, or http on loopback)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote_plus, urlencode, urlsplit

import anyio
import httpx2

from mcp_server.https_urls import checked_url

TIMEOUT_SECONDS: Final = 10.0
MAX_DOCUMENT_BYTES: Final = 512 * 1024


class SignInFailed(Exception):
    """The issuer could not be used, or refused to give a token (said to the user, never a secret)."""


@dataclass(frozen=True)
class Endpoints:
    authorization: str
    token: str


def new_verifier() -> str:
    """A PKCE code verifier: 43 characters from the unreserved set (RFC 7636 §4.1)."""
    return secrets.token_urlsafe(32)


def challenge(verifier: str) -> str:
    """The S256 code challenge of ``verifier``."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class IssuerClient:
    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str | None,
        redirect_uri: str,
        scopes: tuple[str, ...],
    ) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self._secret = client_secret
        self.redirect_uri = redirect_uri
        self.scopes = scopes
        self._endpoints: Endpoints | None = None
        self._lock = anyio.Lock()

    async def endpoints(self) -> Endpoints:
        async with self._lock:
            if self._endpoints is None:
                self._endpoints = await self._discover()
            return self._endpoints

    async def authorization_url(self, state: str, verifier: str) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": challenge(verifier),
            "code_challenge_method": "S256",
        }
        if self.scopes:
            params["scope"] = " ".join(self.scopes)
        endpoint = (await self.endpoints()).authorization
        return f"{endpoint}?{urlencode(params)}"  # checked_url: the endpoint has no query of its own

    async def exchange(self, code: str, verifier: str) -> str:
        """The access token the issuer gives for ``code`` (not yet verified: the caller does that)."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
        }
        auth: httpx2.BasicAuth | None = None
        if self._secret is None:
            form["client_id"] = self.client_id  # a public client (RFC 6749 §2.3, auth method "none")
        else:  # client_secret_basic, each part form-encoded first (RFC 6749 §2.3.1)
            auth = httpx2.BasicAuth(quote_plus(self.client_id), quote_plus(self._secret))
        endpoint = (await self.endpoints()).token
        try:
            async with httpx2.AsyncClient(timeout=TIMEOUT_SECONDS, follow_redirects=False) as http:
                response = await http.post(
                    endpoint,
                    data=form,
                    auth=auth if auth is not None else httpx2.USE_CLIENT_DEFAULT,
                    headers={"Accept": "application/json"},
                )
        except httpx2.HTTPError as error:
            raise SignInFailed(f"the issuer's token endpoint could not be reached: {error}") from None
        body = _json_object(response)
        if response.status_code != 200:
            reason = body.get("error_description") or body.get("error") or f"HTTP {response.status_code}"
            raise SignInFailed(f"the issuer refused the sign-in: {str(reason)[:200]}")
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise SignInFailed("the issuer's token response has no access_token")
        return token

    async def _discover(self) -> Endpoints:
        parts = urlsplit(self.issuer)
        candidates = [
            f"{self.issuer.rstrip('/')}/.well-known/openid-configuration",
            f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path.rstrip('/')}",
        ]
        problems: list[str] = []
        async with httpx2.AsyncClient(timeout=TIMEOUT_SECONDS, follow_redirects=False) as http:
            for url in candidates:
                try:
                    response = await http.get(url, headers={"Accept": "application/json"})
                    response.raise_for_status()
                except httpx2.HTTPError as error:
                    problems.append(f"{url}: {error}")
                    continue
                metadata = _json_object(response)
                if metadata.get("issuer") != self.issuer:
                    raise SignInFailed(f"{url} names issuer {metadata.get('issuer')!r}, not {self.issuer!r}")
                try:
                    return Endpoints(
                        checked_url("authorization_endpoint", str(metadata.get("authorization_endpoint"))),
                        checked_url("token_endpoint", str(metadata.get("token_endpoint"))),
                    )
                except ValueError as error:
                    raise SignInFailed(f"{url}: {error}") from None
        raise SignInFailed("no issuer metadata found (" + "; ".join(problems) + ")")


def _json_object(response: httpx2.Response) -> dict[str, Any]:
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise SignInFailed(f"{response.request.url} answered more than {MAX_DOCUMENT_BYTES} bytes")
    try:
        document = response.json()
    except ValueError:
        document = None
    return document if isinstance(document, dict) else {}
