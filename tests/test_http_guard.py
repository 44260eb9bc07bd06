"""The request-guard layer on its own (mcp_server/http_guard.py), around a small Starlette app: a stream
passes through as it is written, an exception is one ERROR line and a plain 500, and the Host allow-list
spares the open paths."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from chaos.loopback import served_in_thread
from mcp_server.http_guard import GuardPolicy, api_headers, guarded, host_allow_list

released = threading.Event()


async def _stream(_: Request) -> Response:
    async def events() -> AsyncIterator[bytes]:
        yield b"data: first\n\n"
        for _ in range(1000):  # until the client has read the first event (10 s at most)
            if released.is_set():
                yield b"data: second\n\n"
                return
            await asyncio.sleep(0.01)
        yield b"data: buffered\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def _fail(_: Request) -> Response:
    raise RuntimeError("a bug")


async def _healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _app() -> ASGIApp:
    routes = [Route("/healthz", _healthz), Route("/stream", _stream), Route("/fail", _fail)]
    policy = GuardPolicy(host_allow_list("127.0.0.1", []), frozenset({"/healthz"}), api_headers(), 1024)
    return guarded(Starlette(routes=routes), policy)


def test_a_stream_passes_through_as_it_is_written() -> None:
    """The second event is written only after the client has read the first: a layer that buffered the
    response would deliver nothing until the stream gave up."""
    released.clear()
    with (
        served_in_thread(_app()) as url,
        httpx.Client(timeout=20) as http,
        http.stream("GET", f"{url}/stream") as stream,
    ):
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert "content-encoding" not in stream.headers
        assert stream.headers["x-content-type-options"] == "nosniff"
        lines = (line for line in stream.iter_lines() if line)
        assert next(lines) == "data: first"
        released.set()
        assert next(lines) == "data: second"


def test_an_exception_is_one_error_line_and_a_plain_500(caplog: pytest.LogCaptureFixture) -> None:
    client = TestClient(_app(), base_url="http://127.0.0.1:8080")
    with caplog.at_level("INFO"):
        response = client.get("/fail")
    assert response.status_code == 500
    assert response.text == "Internal Server Error"
    assert "a bug" not in response.text
    assert response.headers["cache-control"] == "no-store"
    (error,) = [record for record in caplog.records if record.levelname == "ERROR"]
    assert error.getMessage() == "failed to answer GET /fail"
    assert error.exc_info is not None  # inside the JSON line, with the request's id


def test_a_foreign_host_is_421_except_on_the_open_paths() -> None:
    client = TestClient(_app(), base_url="http://127.0.0.1:8080")
    assert client.get("/stream", headers={"Host": "evil.example"}).status_code == 421
    assert client.get("/fail", headers={"Host": "evil.example"}).status_code == 421
    assert client.get("/healthz", headers={"Host": "10.0.0.5:8080"}).status_code == 200
