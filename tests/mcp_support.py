"""Helpers for testing the MCP server over the network: a server in a thread or a subprocess, and clients."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Literal, NamedTuple

import httpx
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.types import ASGIApp

Transport = Literal["sse", "http"]
TRANSPORTS: tuple[Transport, ...] = ("sse", "http")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(
    base_url: str, timeout: float = 20.0, process: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{base_url}/healthz did not answer within {timeout}s")


@contextmanager
def served_in_thread(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a background thread; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url)
        yield base_url
    finally:
        server.should_exit = True
        thread.join(10)


class ServerProcess(NamedTuple):
    url: str
    pid: int


@contextmanager
def server_process(env: dict[str, str], log_path: Path, *args: str) -> Iterator[ServerProcess]:
    """Run ``incident-mcp-server`` as a subprocess with ``env`` added to ours, its log in ``log_path``."""
    port = free_port()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_server.cli", "--port", str(port), *args],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, process=process)
        yield ServerProcess(base_url, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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


class BlackHole:
    """Accepts TCP connections and never answers; counts them."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.accepted: list[socket.socket] = []
        self.running = True
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while self.running:
            try:
                self.accepted.append(self.sock.accept()[0])
            except TimeoutError:
                continue

    def close(self) -> None:
        self.running = False
        self.thread.join(2)
        for conn in self.accepted:
            conn.close()
        self.sock.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"
