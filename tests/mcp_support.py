"""MCP client sessions over the network, for tests of the server."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import pytest
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

Transport = Literal["sse", "http"]
TRANSPORTS: tuple[Transport, ...] = ("sse", "http")


@asynccontextmanager
async def mcp_session(transport: Transport, base_url: str, key: str | None) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session over SSE (/sse) or Streamable HTTP (/mcp)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if transport == "sse":
        async with (
            sse_client(f"{base_url}/sse", headers=headers) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            yield s
    else:
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            yield s


def closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the server closes ``sock`` (fails if it is still open after ``seconds``)."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for more than {seconds:g}s")
    return time.monotonic() - started


def get_healthz(sock: socket.socket, port: int) -> bytes:
    """``GET /healthz`` on an open connection (kept alive); the start of the response."""
    sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    return sock.recv(4096)
