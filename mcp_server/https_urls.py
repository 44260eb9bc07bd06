"""URLs the server trusts for authorization (issuer, JWKS, its own resource URL): https, except on
loopback where a local identity provider or test setup may use plain http."""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback_http(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "http" and parts.hostname in LOOPBACK_NAMES


def checked_url(name: str, url: str) -> str:
    """``url`` unchanged if acceptable for ``name``, else ValueError saying why."""
    if not url.isascii() or not url.isprintable() or any(c in url for c in ' "<>\\'):
        raise ValueError(f"{name} must be an ASCII URL without spaces, quotes or backslashes (got {url!r})")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as error:
        raise ValueError(f"{name} is not a valid URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{name} must be an absolute https:// URL (got {url!r})")
    if parts.scheme == "http" and not is_loopback_http(url):
        raise ValueError(f"{name} must use https (plain http only on loopback); got {url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"{name} must not have a query string or fragment (got {url!r})")
    return url
