"""Infrastructure faults on loopback: a listener that never answers, a port that refuses and then
forwards, and small helpers to serve an ASGI app in a thread."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Self

import httpx
import uvicorn
from starlette.types import ASGIApp

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(base_url: str, timeout: float = 60.0, alive: object = None, path: str = "/healthz") -> None:
    """Poll ``{base_url}{path}`` until it answers 200; ``alive()`` (if given) False stops the wait. A minute:
    a server's cold start in a clean environment took over 20 s on a busy 2-core machine."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1) as client:  # one client: each new one loads the CA bundle again
        while time.monotonic() < deadline:
            if callable(alive) and not alive():
                raise RuntimeError(f"the server behind {base_url} exited before it became healthy")
            try:
                if client.get(f"{base_url}{path}").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    raise TimeoutError(f"{base_url}{path} did not answer within {timeout:g}s")


@contextmanager
def served_in_thread(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a background thread; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host=LOOPBACK, port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base_url = f"http://{LOOPBACK}:{port}"
    try:
        wait_healthy(base_url)
        yield base_url
    finally:
        server.should_exit = True
        thread.join(10)


class _Listener:
    """A TCP socket bound to a free loopback port; closed on leaving a ``with`` block."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind((LOOPBACK, 0))
        self._sock.settimeout(0.2)

    @property
    def port(self) -> int:
        port: int = self._sock.getsockname()[1]
        return port

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class BlackHole(_Listener):
    """Accepts TCP connections and never answers: a peer that hangs. Counts the connections."""

    def __init__(self) -> None:
        super().__init__()
        self._sock.listen(256)
        self.accepted: list[socket.socket] = []
        self._running = True
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while self._running:
            try:
                self.accepted.append(self._sock.accept()[0])
            except (TimeoutError, OSError):
                continue

    def close(self) -> None:
        self._running = False
        self._thread.join(2)
        for conn in self.accepted:
            conn.close()
        super().close()


class FlappingProxy(_Listener):
    """A port whose first ``resets`` connections are reset as soon as they are accepted (a server that is
    not ready yet: the client's request fails), then forwards each connection to ``target_port``. Counted
    in connections, not seconds, so the client's retry is what finds it open, however slow the machine."""

    def __init__(self, target_port: int, resets: int = 1) -> None:
        super().__init__()
        self._target_port = target_port
        self._resets = resets
        self.reset = 0
        self.forwarded = 0
        self._running = True
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._sock.listen(64)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self._running:
            try:
                client = self._sock.accept()[0]
            except (TimeoutError, OSError):
                continue
            if self.reset < self._resets:
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
                client.close()
                self.reset += 1
                continue
            try:
                upstream = socket.create_connection((LOOPBACK, self._target_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self.forwarded += 1
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=pump, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        self._running = False
        self._thread.join(2)
        with self._lock:
            for conn in self._open:
                conn.close()
        super().close()


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes one way until either side closes."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
