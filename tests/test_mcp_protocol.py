"""Protocol and connection hygiene of the shipped server: it advertises only what it serves, answers
what it does not serve with "method not found", and does not hold idle or slow connections open."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from chaos.mcp_process import ServerProcess, server_process
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from tests.mcp_support import (
    check_idle_connection_closed_after_keep_alive,
    check_idle_connection_served_again,
    check_unfinished_later_head_cut_off,
    closed_within,
)

HEADER_TIMEOUT = 1.0
KEEP_ALIVE = 6  # seconds; well beyond the header deadline, so each test tells the two apart
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {
        "AWS_PROFILE": names.MCP_SERVER,
        "MCP_REQUEST_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
        "MCP_KEEP_ALIVE_TIMEOUT": str(KEEP_ALIVE),
    }
    with server_process(
        env, tmp_path_factory.mktemp("protocol") / "server.log", "--insecure-no-auth"
    ) as process:
        yield process


def _rpc(
    http: httpx.Client, url: str, method: str, params: dict[str, Any], session: str | None
) -> httpx.Response:
    headers = HEADERS | ({"mcp-session-id": session} if session else {})
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return http.post(f"{url}/mcp", headers=headers, content=json.dumps(body))


@dataclass
class Session:
    http: httpx.Client
    id: str
    capabilities: dict[str, Any]


@pytest.fixture
def session(server: ServerProcess) -> Iterator[Session]:
    """An initialized Streamable HTTP session."""
    with httpx.Client(timeout=10) as http:
        hello = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        response = _rpc(http, server.url, "initialize", hello, None)
        session_id = response.headers["mcp-session-id"]
        http.post(
            f"{server.url}/mcp",
            headers=HEADERS | {"mcp-session-id": session_id},
            content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        )
        yield Session(http, session_id, response.json()["result"]["capabilities"])


def test_only_tools_are_advertised(session: Session) -> None:
    assert session.capabilities == {"tools": {"listChanged": False}}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("prompts/get", {"name": "anything"}),
        ("prompts/list", {}),
        ("resources/list", {}),
        ("resources/read", {"uri": "file:///etc/passwd"}),
        ("resources/templates/list", {}),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}},
        ),
        ("logging/setLevel", {"level": "debug"}),
    ],
)
def test_unserved_methods_are_method_not_found_without_a_traceback(
    server: ServerProcess, session: Session, method: str, params: dict[str, Any]
) -> None:
    before = len(server.log_path.read_text())
    response = _rpc(session.http, server.url, method, params, session.id)
    assert response.json()["error"]["code"] == -32601, response.text
    assert response.json()["error"]["message"] == "Method not found"
    logged = server.log_path.read_text()[before:]
    assert "Traceback" not in logged
    assert '"level": "ERROR"' not in logged


def test_a_connection_that_sends_nothing_is_closed(server: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        waited = closed_within(sock, HEADER_TIMEOUT + 3)
    assert waited >= HEADER_TIMEOUT - 0.1


def test_a_request_head_sent_byte_by_byte_is_cut_off(server: ServerProcess) -> None:
    """Slowloris: every byte arrives in time, the head as a whole does not."""
    head = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Slow: {'a' * 40}\r\n\r\n".encode()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        try:
            for byte in head:
                sock.sendall(bytes([byte]))
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed by the server: the point
        else:
            pytest.fail(f"the server waited {len(head) * 0.1:.0f}s for a whole request head")
    assert time.monotonic() - started < HEADER_TIMEOUT + 2


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive(server: ServerProcess) -> None:
    check_idle_connection_closed_after_keep_alive(server.port, KEEP_ALIVE)


def test_an_idle_keep_alive_connection_outlives_the_header_deadline(server: ServerProcess) -> None:
    check_idle_connection_served_again(server.port, idle_seconds=HEADER_TIMEOUT * 2)


def test_a_later_request_head_left_unfinished_is_cut_off(server: ServerProcess) -> None:
    check_unfinished_later_head_cut_off(server.port, HEADER_TIMEOUT, KEEP_ALIVE)


def test_long_lived_streams_outlast_the_header_timeout(server: ServerProcess) -> None:
    """The deadline is for the request head only: an SSE stream stays open and keeps answering."""
    with httpx.Client(timeout=10) as http, http.stream("GET", f"{server.url}/sse") as stream:
        lines = stream.iter_lines()
        endpoint = next(line for line in lines if line.startswith("data:"))[5:].strip()
        time.sleep(HEADER_TIMEOUT * 2.5)
        hello = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": hello}
        assert (
            http.post(f"{server.url}{endpoint}", headers=HEADERS, content=json.dumps(body)).status_code == 202
        )
        answer = next(line for line in lines if line.startswith("data:"))
    assert json.loads(answer[5:])["id"] == 7
