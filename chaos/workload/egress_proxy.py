"""The network interface of a VPC function's execution environment, as a loopback proxy.

The worker's AWS endpoint is this proxy. Each connection's first request names the AWS service it
calls (the SigV4 credential scope in ``Authorization``); the proxy asks the VPC emulation whether the
function's subnet, network ACL and security groups carry that call *now*, and either forwards it to
the emulator or holds it without an answer, as a dropped packet would, until the caller gives up.
One request per connection (``Connection: close``), so a network change applies to the next call.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Callable

from chaos.loopback import LOOPBACK, pump

MAX_HEAD_BYTES = 64 * 1024
_SCOPE = re.compile(rb"Credential=[^/,\s]+/\d{8}/[^/]+/([a-z0-9-]+)/aws4_request", re.IGNORECASE)
_CONNECTION = re.compile(rb"^connection:.*$", re.IGNORECASE | re.MULTILINE)

Decide = Callable[[str], bool]  # service name -> may the call pass?


def service_of(head: bytes) -> str:
    """The AWS service a signed request is for ("" when it is not signed)."""
    match = _SCOPE.search(head)
    return match.group(1).decode().lower() if match else ""


def closing(head: bytes) -> bytes:
    """The request head with ``Connection: close``, so that the emulator ends the connection after it."""
    lines = [line for line in head.split(b"\r\n") if not _CONNECTION.match(line)]
    return b"\r\n".join([*lines[:-2], b"Connection: close", b"", b""])


class EgressProxy:
    def __init__(self, upstream: tuple[str, int], decide: Decide) -> None:
        self._upstream = upstream
        self._decide = decide
        self._listener = socket.create_server((LOOPBACK, 0))
        self._listener.settimeout(0.2)
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._running = True
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._listener.getsockname()[1]}"

    def close(self) -> None:
        self._running = False
        with self._lock:
            for conn in self._held:
                conn.close()
            self._held.clear()
        self._listener.close()

    def _accept(self) -> None:
        while self._running:
            try:
                client = self._listener.accept()[0]
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head, rest = _read_head(client)
        if head is None:
            client.close()
            return
        try:
            allowed = self._decide(service_of(head))
        except Exception:  # the emulation could not read the VPC: nothing passes, as with no route
            allowed = False
        if not allowed:
            with self._lock:
                self._held.append(client)  # never answered; closed with the environment
            return
        try:
            upstream = socket.create_connection(self._upstream, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        client.settimeout(None)
        upstream.sendall(closing(head) + rest)
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        pump(upstream, client)
        client.close()
        upstream.close()


def _read_head(conn: socket.socket) -> tuple[bytes | None, bytes]:
    conn.settimeout(30)
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data and len(data) < MAX_HEAD_BYTES:
            chunk = conn.recv(65536)
            if not chunk:
                return None, b""
            data += chunk
    if b"\r\n\r\n" not in data:
        return None, b""
    head, rest = data.split(b"\r\n\r\n", 1)
    return head + b"\r\n\r\n", rest
