"""`incident-console` as it is served (its own process, the CLI's uvicorn): JSON log lines that a hostile
request path cannot forge, and deadlines for request heads and idle connections."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

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
KEY = "console-key-0123456789-abcdefghijklmnop"
FORGED = "2026-01-01 00:00:00,000 CRITICAL forged"
# A newline and an ANSI escape (red, then "erase the line") in a request path, percent-encoded.
HOSTILE_PATH = "/incidents/x%0A2026-01-01%2000:00:00,000%20CRITICAL%20forged%1B[31m%1B[2K"


def _env(sandbox: Sandbox, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.CONSOLE}
    timeouts = {
        "CONSOLE_REQUEST_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
        "CONSOLE_KEEP_ALIVE_TIMEOUT": str(KEEP_ALIVE),
    }
    return env | timeouts | extra


@pytest.fixture(scope="module")
def console(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The console on loopback (open), with a one-second deadline for request heads."""
    log = tmp_path_factory.mktemp("console") / "console.log"
    with server_process(_env(sandbox), log, module="console.cli") as process:
        yield process


def _raw_request(server: ServerProcess, request_line: str) -> int:
    """Send exactly ``request_line`` (no client-side re-encoding); the response's status code."""
    host = server.url.removeprefix("http://")
    head = f"{request_line}\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    with socket.create_connection((host.rsplit(":", 1)[0], server.port), timeout=10) as sock:
        sock.sendall(head.encode())
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
    return int(response.split(b" ", 2)[1])


def test_a_hostile_path_cannot_forge_a_log_line(sandbox: Sandbox, tmp_path: Path) -> None:
    """Off loopback (127.0.0.2 is no loopback name to the console: sign-in required) the refusal of an
    unauthenticated request is logged with its path: inside a JSON string, newline and escapes escaped."""
    env = _env(sandbox, CONSOLE_API_KEY=KEY, CONSOLE_SESSION_SECRET="s" * 40)
    log = tmp_path / "console.log"
    with server_process(env, log, module="console.cli", host="127.0.0.2") as server:
        assert _raw_request(server, f"GET {HOSTILE_PATH} HTTP/1.1") == 401
    text = log.read_text()
    assert "\x1b" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all(line.isascii() for line in lines)
    (refusal,) = [entry for entry in entries if FORGED in entry["message"]]
    assert refusal["level"] == "WARNING"
    assert "\x1b[31m\x1b[2K" in refusal["message"]
    assert refusal["request_id"]


def test_a_connection_that_sends_no_request_head_is_closed(console: ServerProcess) -> None:
    with socket.create_connection(("127.0.0.1", console.port)) as sock:
        sock.sendall(b"GET /incidents HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        waited = closed_within(sock, HEADER_TIMEOUT + 3)
    assert waited >= HEADER_TIMEOUT - 0.1


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive(console: ServerProcess) -> None:
    check_idle_connection_closed_after_keep_alive(console.port, KEEP_ALIVE)


def test_an_idle_keep_alive_connection_outlives_the_header_deadline(console: ServerProcess) -> None:
    check_idle_connection_served_again(console.port, idle_seconds=HEADER_TIMEOUT * 2)


def test_a_later_request_head_left_unfinished_is_cut_off(console: ServerProcess) -> None:
    check_unfinished_later_head_cut_off(console.port, HEADER_TIMEOUT, KEEP_ALIVE)
