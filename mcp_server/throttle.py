"""Wrong credentials per client: a token bucket of failures, shared by the MCP server's bearer check and
the console's sign-in.

Each client may get ``per_minute`` credentials wrong at once (the bucket's size), then one more each
``60 / per_minute`` seconds; while its bucket is empty every credential it sends is refused (429 with
``Retry-After``) before it is checked, right or wrong, so the refusal tells a guesser nothing. Successes
cost nothing: a client with a right key is never slowed. The client is ``scope["client"]``, which
``trusting_proxies`` sets from ``X-Forwarded-For`` for connections from the configured proxies only; an
IPv6 client is its /64, the block one host usually holds.

Buckets live in the process (the console and the server may run as several tasks, with no shared store):
behind a load balancer spreading requests over N tasks a client gets N times the allowance.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import cast

from starlette.types import ASGIApp, Scope
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

logger = logging.getLogger(__name__)

MAX_CLIENTS = 10_000  # buckets kept; beyond that the least recently failed client is forgotten


class FailureThrottle:
    """Per-client buckets of allowed failures; ``clock`` is monotonic seconds."""

    def __init__(
        self,
        per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1")
        self._size = float(per_minute)
        self._refill = per_minute / 60.0  # failures allowed back per second
        self._clock = clock
        self._max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client: (left, at)

    def retry_after(self, client: str) -> int:
        """0 when ``client`` may present a credential now, else whole seconds until it may."""
        left = self._left(client)
        return 0 if left >= 1 else math.ceil((1 - left) / self._refill)

    def failed(self, client: str) -> None:
        """Counts one wrong credential from ``client``."""
        left = max(self._left(client) - 1, 0.0)
        self._buckets[client] = (left, self._clock())
        self._buckets.move_to_end(client)
        if left < 1:
            logger.warning("throttling credentials from %s", client, extra={"client": client})
        while len(self._buckets) > self._max_clients:
            self._buckets.popitem(last=False)

    def _left(self, client: str) -> float:
        if client not in self._buckets:
            return self._size
        left, at = self._buckets[client]
        return min(self._size, left + (self._clock() - at) * self._refill)


def client_of(scope: Scope) -> str:
    """The client a request counts against: its address (an IPv6 address as its /64)."""
    host = str((scope.get("client") or ("unknown", 0))[0])
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def trusting_proxies(app: ASGIApp, proxies: list[str]) -> ASGIApp:
    """``app`` with the client (and scheme) taken from ``X-Forwarded-For`` (``X-Forwarded-Proto``) when
    the connection comes from one of ``proxies`` (addresses or CIDR blocks): uvicorn's middleware, which
    walks the header from the right and takes the first address that is not a trusted proxy, so a value a
    client wrote itself on the left is never believed. No proxies: ``app`` as it is."""
    if not proxies:
        return app
    return cast(ASGIApp, ProxyHeadersMiddleware(app, trusted_hosts=proxies))  # type: ignore[arg-type]
