"""A small OAuth 2.1 authorization server for tests: real RSA keys, an OpenID Connect discovery document
and a JWKS endpoint over HTTP, key rotation, and tokens minted with any claims (expired ones included).
Its /authorize approves at once (no login page) and redirects back with a code; /token gives an access
token for that code only to the client that asked for it, with the right PKCE (S256) verifier."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus, urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey = field(repr=False)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(
            f"key-{secrets.token_hex(4)}", rsa.generate_private_key(public_exponent=65537, key_size=2048)
        )

    def public_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return jwk | {"kid": self.kid, "use": "sig", "alg": "RS256"}


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    scope: str


@dataclass
class LocalIssuer:
    """Set ``issuer`` to the URL it is served at before minting. ``jwks_requests`` counts key fetches.

    ``clients`` maps the client ids /authorize and /token accept to their secret (None: a public client);
    ``grant_claims`` go into every token /token gives (say ``aud`` and ``scope``), which lives
    ``grant_lifetime`` seconds. ``token_requests`` records each /token form (secrets left out)."""

    issuer: str = ""
    keys: list[SigningKey] = field(default_factory=lambda: [SigningKey.generate()])
    jwks_requests: int = 0
    clients: dict[str, str | None] = field(default_factory=dict)
    grant_claims: dict[str, Any] = field(default_factory=dict)
    grant_lifetime: int = 300
    grants: dict[str, Grant] = field(default_factory=dict)
    token_requests: list[dict[str, str]] = field(default_factory=list)

    @property
    def current(self) -> SigningKey:
        return self.keys[-1]

    def rotate(self, *, keep_old: bool = False) -> SigningKey:
        """Publish a new key and sign with it from now on; ``keep_old`` False retires the others."""
        new = SigningKey.generate()
        self.keys = [*self.keys, new] if keep_old else [new]
        return new

    def mint(self, claims: dict[str, Any], *, key: SigningKey | None = None, lifetime: int = 300) -> str:
        now = int(time.time())
        payload = {"iss": self.issuer, "sub": "user-1", "iat": now, "exp": now + lifetime, **claims}
        signer = key or self.current
        return jwt.encode(payload, signer.private, algorithm="RS256", headers={"kid": signer.kid})

    def app(self) -> Starlette:
        async def openid_configuration(_: Request) -> JSONResponse:
            return JSONResponse(
                {
                    "issuer": self.issuer,
                    "jwks_uri": f"{self.issuer}/jwks.json",
                    "authorization_endpoint": f"{self.issuer}/authorize",
                    "token_endpoint": f"{self.issuer}/token",
                    "code_challenge_methods_supported": ["S256"],
                }
            )

        async def authorize(request: Request) -> Response:
            params = request.query_params
            client, redirect_uri = params.get("client_id", ""), params.get("redirect_uri", "")
            if client not in self.clients or not redirect_uri:
                return _oauth_error("unauthorized_client", f"unknown client {client!r} or no redirect_uri")
            if params.get("response_type") != "code" or params.get("code_challenge_method") != "S256":
                return _oauth_error("invalid_request", "response_type=code with an S256 code challenge only")
            code = secrets.token_urlsafe(16)
            self.grants[code] = Grant(
                client, redirect_uri, params.get("code_challenge", ""), params.get("scope", "")
            )
            back = {"code": code, "state": params.get("state", "")}
            return RedirectResponse(f"{redirect_uri}?{urlencode(back)}", status_code=302)

        async def token(request: Request) -> Response:
            async with request.form() as form:
                fields = {name: str(value) for name, value in form.items()}
            client, secret = fields.get("client_id", ""), None
            scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() == "basic":
                name, _, password = base64.b64decode(credentials).decode().partition(":")
                client, secret = unquote_plus(name), unquote_plus(password)
            self.token_requests.append(
                {k: v for k, v in fields.items() if k != "client_secret"} | {"client": client}
            )
            grant = self.grants.pop(fields.get("code", ""), None)
            if grant is None or fields.get("grant_type") != "authorization_code":
                return _oauth_error("invalid_grant", "unknown or used code")
            if client != grant.client_id or self.clients.get(client) != secret:
                return _oauth_error("invalid_client", "not the client the code was given to", 401)
            if fields.get("redirect_uri") != grant.redirect_uri:
                return _oauth_error("invalid_grant", "redirect_uri differs from the authorization request")
            digest = hashlib.sha256(fields.get("code_verifier", "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant.challenge:
                return _oauth_error("invalid_grant", "the PKCE code verifier does not match the challenge")
            claims = (
                {"client_id": client} | ({"scope": grant.scope} if grant.scope else {}) | self.grant_claims
            )
            access = self.mint(claims, lifetime=self.grant_lifetime)
            return JSONResponse(
                {"access_token": access, "token_type": "Bearer", "expires_in": self.grant_lifetime}
            )

        async def jwks(_: Request) -> JSONResponse:
            self.jwks_requests += 1
            return JSONResponse({"keys": [key.public_jwk() for key in self.keys]})

        async def healthz(_: Request) -> JSONResponse:
            return JSONResponse({"status": "ok"})

        return Starlette(
            routes=[
                Route("/.well-known/openid-configuration", openid_configuration),
                Route("/jwks.json", jwks),
                Route("/authorize", authorize),
                Route("/token", token, methods=["POST"]),
                Route("/healthz", healthz),
            ]
        )


def _oauth_error(error: str, description: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)
