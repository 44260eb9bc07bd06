"""The server's log under hostile requests: JSON lines that a URL cannot forge, a request id on each, and
no traceback for a request the server refuses correctly, nor for a client that leaves mid-body."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from chaos.mcp_process import ServerProcess, server_process
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox

FORGED = "2026-01-01 00:00:00,000 CRITICAL forged"
FORGED_IN_URL = "x%0A2026-01-01%2000:00:00,000%20CRITICAL%20forged"
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass
class LoggedServer:
    process: ServerProcess
    key: str
    _read: int = 0

    @property
    def url(self) -> str:
        return self.process.url

    def new_lines(self) -> list[str]:
        """Log lines written since the last call."""
        text = self.process.log_path.read_text()
        fresh, self._read = text[self._read :], len(text)
        return [line for line in fresh.splitlines() if line.strip()]

    def new_entries(self) -> list[dict[str, Any]]:
        lines = self.new_lines()
        entries = []
        for line in lines:
            assert not line.startswith(FORGED[:10]), f"forged log line: {line}"
            entries.append(json.loads(line))  # every line is one JSON object
        return entries


@pytest.fixture(scope="module")
def server(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedServer]:
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.MCP_SERVER}
    log = tmp_path_factory.mktemp("logs") / "server.log"
    with server_process(env, log) as process:
        logged = LoggedServer(process, sandbox.world.mcp_api_key)
        logged.new_lines()
        yield logged


def _raw_request(server: LoggedServer, request_line: str, headers: dict[str, str], body: bytes = b"") -> int:
    """Send exactly ``request_line`` (no client-side re-encoding); the response's status code."""
    host = server.url.removeprefix("http://")
    lines = [request_line, f"Host: {host}", "Connection: close", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection(("127.0.0.1", server.process.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
    return int(response.split(b" ", 2)[1])


def test_a_newline_in_the_url_cannot_forge_a_log_line(server: LoggedServer) -> None:
    auth = {"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"}
    assert _raw_request(server, f"GET /{FORGED_IN_URL} HTTP/1.1", {}) == 401
    post = f"POST /messages/?session_id={FORGED_IN_URL} HTTP/1.1"
    assert _raw_request(server, post, {}, PING) == 401
    assert _raw_request(server, post, auth, PING) == 400  # reaches the SDK, which logs the session id
    entries = server.new_entries()  # asserts no line starts with the forged text
    carrying = [entry for entry in entries if FORGED in entry["message"]]
    assert len(carrying) == 2  # the path (ours) and the session id (the SDK's), newline inside a JSON string
    assert all(entry["level"] == "WARNING" and entry["request_id"] for entry in carrying)


def test_the_request_id_is_in_the_log_and_the_response(server: LoggedServer) -> None:
    response = httpx.get(f"{server.url}/sse", headers={"Authorization": "Bearer wrong-key-value"})
    assert response.status_code == 401
    [entry] = [e for e in server.new_entries() if e["logger"] == "mcp_server.auth"]
    assert entry["request_id"] == response.headers["x-request-id"]
    assert entry["status"] == 401
    assert "wrong-key-value" not in json.dumps(entry)


def _assert_refused_without_traceback(server: LoggedServer, expected: str) -> None:
    lines = server.new_lines()
    assert not any("Traceback" in line or "Exception in ASGI application" in line for line in lines), lines
    entries = [json.loads(line) for line in lines]
    assert all("exception" not in entry for entry in entries)
    assert [entry["level"] for entry in entries if expected in entry["message"]] == ["WARNING"]


@pytest.mark.parametrize(
    ("path", "header", "status", "expected"),
    [
        ("/sse", {"Origin": "http://evil.example"}, 403, "Invalid Origin header"),
        ("/sse", {"Host": "evil.example"}, 421, "Invalid Host header"),
        ("/mcp", {"Origin": "http://evil.example"}, 403, "Invalid Origin header"),
        ("/mcp", {"Host": "evil.example"}, 421, "Invalid Host header"),
    ],
)
def test_foreign_origin_or_host_is_refused_without_a_traceback(
    server: LoggedServer, path: str, header: dict[str, str], status: int, expected: str
) -> None:
    headers = {"Authorization": f"Bearer {server.key}", **header}
    method = "GET" if path == "/sse" else "POST"
    response = httpx.request(
        method, f"{server.url}{path}", headers={**JSON_HEADERS, **headers}, content=b"{}"
    )
    assert response.status_code == status
    _assert_refused_without_traceback(server, expected)


def test_invalid_json_on_messages_gets_400_without_a_traceback(server: LoggedServer) -> None:
    auth = {"Authorization": f"Bearer {server.key}"}
    with httpx.Client(timeout=10) as http, http.stream("GET", f"{server.url}/sse", headers=auth) as stream:
        endpoint = next(line for line in stream.iter_lines() if line.startswith("data:"))[5:].strip()
        response = http.post(
            f"{server.url}{endpoint}", headers={**JSON_HEADERS, **auth}, content=b"{not json"
        )
    assert response.status_code == 400
    _assert_refused_without_traceback(server, "refused a request: not a JSON-RPC message")


def test_log_lines_are_ascii_json(server: LoggedServer) -> None:
    """U+2028 (a line break to some viewers) and other non-ASCII arrive escaped."""
    assert _raw_request(server, "GET /%E2%80%A8forged%C2%85 HTTP/1.1", {}) == 401
    lines = server.new_lines()
    assert lines
    assert all(line.isascii() for line in lines)
    assert any("\u2028forged" in json.loads(line)["message"] for line in lines)


def _entries_until(server: LoggedServer, seen: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """New log entries, read until one of them is ``seen`` (fails after 20 s without one)."""
    entries: list[dict[str, Any]] = []
    deadline = time.monotonic() + 20
    while not any(seen(entry) for entry in entries):
        if time.monotonic() > deadline:
            pytest.fail(f"the server logged nothing about the request: {entries}")
        time.sleep(0.05)
        entries += server.new_entries()
    return entries


def test_a_client_that_leaves_mid_body_is_one_info_line(server: LoggedServer) -> None:
    """The body announced 1000 bytes; the client sends 17 and closes. Nothing for the SDK to parse: one
    INFO line, no ERROR, no traceback."""
    port = server.process.port
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {server.key}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode() + b'{"jsonrpc":"2.0",')
    entries = _entries_until(server, lambda e: e["level"] == "ERROR" or "went away" in e["message"])
    assert all(entry["level"] != "ERROR" and "exception" not in entry for entry in entries), entries
    (left,) = [entry for entry in entries if "went away" in entry["message"]]
    assert left["level"] == "INFO"
    assert left["request_id"]
