"""OAuth 2.1 access tokens (JWTs) from the organisation's identity provider, verified as the MCP
authorization spec asks of a resource server: signature against the issuer's published keys, issuer,
audience, expiry, and the scopes this server requires.

PyJWT does the cryptography; this module decides what is acceptable. Only asymmetric algorithms are
accepted (``none`` and HMAC never: a public key must not double as a shared secret), and Cognito-style
access tokens, which carry the app client in ``client_id`` instead of ``aud``, are matched on that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jwt
from mcp.server.auth.provider import AccessToken

from mcp_server.jwks import JwksCache, KeysUnavailable

ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
CLOCK_SKEW_SECONDS = 30


class TokenRejected(Exception):
    """Why a bearer token is not accepted (said to the client in ``error_description``)."""


@dataclass(frozen=True)
class TokenPolicy:
    issuer: str
    audience: str
    required_scopes: tuple[str, ...] = ()


class JwtVerifier:
    """The SDK's ``TokenVerifier`` for JWT access tokens; ``check`` says why a token is refused."""

    def __init__(self, policy: TokenPolicy, keys: JwksCache) -> None:
        self.policy = policy
        self.keys = keys

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return await self.check(token)
        except TokenRejected:
            return None

    async def check(self, token: str) -> AccessToken:
        """The verified token, or TokenRejected. Scopes are returned, not enforced (that is a 403)."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.DecodeError:
            raise TokenRejected("the bearer token is neither a known key nor a JWT") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm.lower() == "none":
            raise TokenRejected("unsigned tokens are not accepted")
        if algorithm not in ASYMMETRIC_ALGORITHMS:
            raise TokenRejected(f"tokens signed with {algorithm} are not accepted")
        kid = header.get("kid")
        try:
            key = await self.keys.key(kid if isinstance(kid, str) else None)
        except KeysUnavailable as error:
            raise TokenRejected(str(error)) from error
        if key is None:
            raise TokenRejected("the token's signing key is not among the issuer's published keys")
        if key.algorithm_name != algorithm:
            raise TokenRejected(f"the token says {algorithm} but its key is for {key.algorithm_name}")
        claims = _decode(token, key, algorithm, self.policy.issuer)
        self._check_audience(claims)
        if claims.get("token_use", "access") != "access":
            raise TokenRejected(f"not an access token (token_use {claims['token_use']!r})")
        subject = claims.get("sub")
        client = claims.get("client_id") or claims.get("azp") or subject or "unknown"
        return AccessToken(
            token=token,
            client_id=str(client),
            scopes=granted_scopes(claims),
            expires_at=int(claims["exp"]),
            resource=self.policy.audience,
            subject=str(subject) if subject is not None else None,
            claims={"iss": claims["iss"]},
        )

    def _check_audience(self, claims: dict[str, Any]) -> None:
        audience = claims.get("aud")
        if audience is None:  # Cognito access tokens name their app client in client_id
            audience = claims.get("client_id")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.policy.audience not in audiences:
            raise TokenRejected("the token was issued for another audience")


def _decode(token: str, key: jwt.PyJWK, algorithm: str, issuer: str) -> dict[str, Any]:
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key=key,
            algorithms=[algorithm],
            issuer=issuer,
            leeway=CLOCK_SKEW_SECONDS,
            options={"require": ["exp", "iss"], "verify_aud": False},
        )
    except jwt.ExpiredSignatureError:
        raise TokenRejected("the token has expired") from None
    except jwt.ImmatureSignatureError:
        raise TokenRejected("the token is not valid yet") from None
    except jwt.InvalidIssuerError:
        raise TokenRejected(f"the token was not issued by {issuer}") from None
    except jwt.InvalidSignatureError:
        raise TokenRejected("the token's signature does not verify") from None
    except jwt.MissingRequiredClaimError as error:
        raise TokenRejected(f"the token has no {error.claim!r} claim") from None
    except jwt.InvalidTokenError as error:
        raise TokenRejected(f"invalid token ({type(error).__name__})") from None
    return claims


def granted_scopes(claims: dict[str, Any]) -> list[str]:
    """``scope`` (RFC 9068: space-separated) or ``scp`` (a list, as some providers send)."""
    value = claims.get("scope", claims.get("scp", []))
    return value.split() if isinstance(value, str) else [str(scope) for scope in value]
