"""uvicorn as the MCP server and the console run it: JSON logs (no uvicorn log config), a deadline for
request heads, and an idle keep-alive longer than the peer's.

uvicorn's keep-alive timer runs only while a connection is idle between requests, so a connection that
sends a request head slowly, or never, would be held open for ever (slowloris). ``HeaderTimeoutProtocol``
closes a connection whose request head is not complete within ``header_timeout`` seconds of the connection
opening, or of the first byte of a later request (``MCP_REQUEST_HEADER_TIMEOUT``, the console's
``CONSOLE_REQUEST_HEADER_TIMEOUT``).

An idle connection is closed after ``keep_alive`` seconds (``MCP_KEEP_ALIVE_TIMEOUT``). It must outlast the
peer's own idle limit: a load balancer (60 s on an ALB by default) or a client pool (httpx: 5 s) that
reuses a connection the server is closing at that very moment gets a reset. AWS's advice for targets
behind an Application Load Balancer is the same: an application idle timeout larger than the balancer's.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger(__name__)


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a complete request head arrived
            self._disarm()
        elif self._head_deadline is None and (cycle is None or cycle.response_complete):
            self._arm()  # the first bytes of a new request head: it has the deadline to complete

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(self._header_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _timed_out(self) -> None:
        self._head_deadline = None
        if not self.transport.is_closing():
            client = self.client[0] if self.client else "?"
            logger.info(
                "closed a connection that sent no complete request head within %gs",
                self._header_timeout,
                extra={"client": client},
            )
            self.transport.close()


def uvicorn_config(
    app: Any, *, host: str, port: int, header_timeout: float, keep_alive: int, log_level: str
) -> uvicorn.Config:
    """One process, one worker (SSE sessions live in memory); logging is left to ``configure_logging``."""
    protocol = partial(HeaderTimeoutProtocol, header_timeout=header_timeout)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,  # type: ignore[arg-type]
        log_config=None,
        log_level=log_level.lower(),
        access_log=False,
        lifespan="on",
        timeout_keep_alive=keep_alive,
        proxy_headers=False,  # X-Forwarded-For is read in the app, from the configured trusted proxies only
    )
