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
    """``GET /healthz`` on an open connection (kept alive); the whole response, read to its end so that the
    connection is ready for the next request."""
    sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            return response
        response += chunk
    head, _, body = response.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length and (chunk := sock.recv(4096)):
        body += chunk
    return head + b"\r\n\r\n" + body


def check_idle_connection_closed_after_keep_alive(port: int, keep_alive: float) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert get_healthz(sock, port).startswith(b"HTTP/1.1 200")
        waited = closed_within(sock, keep_alive + 3)
    assert waited >= keep_alive - 0.1


def check_idle_connection_served_again(port: int, idle_seconds: float) -> None:
    """Idle between requests is the keep-alive's to end, not the head deadline's: a client (or a load
    balancer) reusing its connection within the keep-alive is served, never reset."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert get_healthz(sock, port).startswith(b"HTTP/1.1 200")
        time.sleep(idle_seconds)
        assert get_healthz(sock, port).startswith(b"HTTP/1.1 200")


def check_unfinished_later_head_cut_off(port: int, header_timeout: float, keep_alive: float) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert get_healthz(sock, port).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # and never the rest
        waited = closed_within(sock, header_timeout + 3)
    assert waited < keep_alive - 1  # the head deadline, not the keep-alive
