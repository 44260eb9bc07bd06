"""A small OAuth 2.1 authorization server for tests: real RSA keys, an OpenID Connect discovery document
and a JWKS endpoint over HTTP, key rotation, and tokens minted with any claims (expired ones included)."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
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
class LocalIssuer:
    """Set ``issuer`` to the URL it is served at before minting. ``jwks_requests`` counts key fetches."""

    issuer: str = ""
    keys: list[SigningKey] = field(default_factory=lambda: [SigningKey.generate()])
    jwks_requests: int = 0

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
            return JSONResponse({"issuer": self.issuer, "jwks_uri": f"{self.issuer}/jwks.json"})

        async def jwks(_: Request) -> JSONResponse:
            self.jwks_requests += 1
            return JSONResponse({"keys": [key.public_jwk() for key in self.keys]})

        async def healthz(_: Request) -> JSONResponse:
            return JSONResponse({"status": "ok"})

        return Starlette(
            routes=[
                Route("/.well-known/openid-configuration", openid_configuration),
                Route("/jwks.json", jwks),
                Route("/healthz", healthz),
            ]
        )
