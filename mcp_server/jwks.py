"""The identity provider's signing keys (JWKS): fetched on first use, cached, refetched when a token
names a key id the cache does not hold (the provider rotated its keys) — at most once per cool-down, so
tokens with made-up key ids cannot turn the server into a load generator against the provider."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKSetError

logger = logging.getLogger(__name__)

FETCH_TIMEOUT_SECONDS = 5.0
MAX_DOCUMENT_BYTES = 512 * 1024


class KeysUnavailable(RuntimeError):
    """The provider's keys could not be read (and none are cached)."""


class JwksCache:
    """Signing keys by key id. ``jwks_url`` None: discovered from the issuer's OpenID Connect
    configuration, or failing that its RFC 8414 authorization-server metadata."""

    def __init__(
        self,
        issuer: str,
        jwks_url: str | None = None,
        *,
        max_age: float = 3600.0,
        unknown_kid_cooldown: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._issuer = issuer
        self._jwks_url = jwks_url
        self._max_age = max_age
        self._cooldown = unknown_kid_cooldown
        self._clock = clock
        self._keys: dict[str | None, PyJWK] = {}
        self._fetched_at: float | None = None
        self._unknown_kid_refetch_at: float | None = None
        self._lock = anyio.Lock()
        self.fetches = 0

    async def key(self, kid: str | None) -> PyJWK | None:
        """The key ``kid`` names (a token without ``kid``: the only key, if there is exactly one)."""
        async with self._lock:
            if self._fetched_at is None or self._clock() - self._fetched_at > self._max_age:
                await self._refresh()
            found = self._lookup(kid)
            if found is not None:
                return found
            now = self._clock()
            if (
                self._unknown_kid_refetch_at is not None
                and now - self._unknown_kid_refetch_at < self._cooldown
            ):
                return None
            self._unknown_kid_refetch_at = now
            await self._refresh()
            return self._lookup(kid)

    def _lookup(self, kid: str | None) -> PyJWK | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        try:
            async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS, follow_redirects=False) as http:
                url = self._jwks_url or await self._discover(http)
                document = await _get_json(http, url)
            keys = _signing_keys(document)
        except (httpx2.HTTPError, ValueError, PyJWKSetError) as error:
            if self._keys:
                logger.warning("kept the cached signing keys: refreshing them failed: %s", error)
                self._fetched_at = self._clock()
                return
            raise KeysUnavailable(f"the issuer's signing keys could not be read: {error}") from error
        self.fetches += 1
        self._keys = keys
        self._fetched_at = self._clock()
        self._jwks_url = url
        logger.info("read %d signing key(s) from %s", len(keys), url, extra={"kids": sorted(map(str, keys))})

    async def _discover(self, http: httpx2.AsyncClient) -> str:
        parts = urlsplit(self._issuer)
        candidates = [
            f"{self._issuer.rstrip('/')}/.well-known/openid-configuration",
            f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path.rstrip('/')}",
        ]
        problems = []
        for url in candidates:
            try:
                metadata = await _get_json(http, url)
            except (httpx2.HTTPError, ValueError) as error:
                problems.append(f"{url}: {error}")
                continue
            if metadata.get("issuer") != self._issuer:
                raise ValueError(f"{url} names issuer {metadata.get('issuer')!r}, not {self._issuer!r}")
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise ValueError(f"{url} has no jwks_uri")
            return jwks_uri
        raise ValueError("no issuer metadata found (" + "; ".join(problems) + ")")


async def _get_json(http: httpx2.AsyncClient, url: str) -> dict[str, Any]:
    response = await http.get(url, headers={"Accept": "application/json"})
    response.raise_for_status()
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
    document = response.json()
    if not isinstance(document, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    return document


def _signing_keys(document: dict[str, Any]) -> dict[str | None, PyJWK]:
    """Public signature keys only: symmetric (``oct``) and encryption keys are never used to verify."""
    usable = [
        key
        for key in document.get("keys", [])
        if isinstance(key, dict) and key.get("kty") != "oct" and key.get("use", "sig") == "sig"
    ]
    return {key.key_id: key for key in PyJWKSet(usable).keys}
