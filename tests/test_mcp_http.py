"""The server over the network: bearer auth (wrong credentials throttled per client), Host/Origin checks,
body limits, malformed requests, the CLI (short keys refused off loopback)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from chaos.loopback import served_in_thread
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.app import build_app
from mcp_server.aws import AwsClients
from mcp_server.contract.registry import SERVED_TOOLS
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from tests.mcp_support import TRANSPORTS, Transport, mcp_session

OLD, NEW = "key-old-0123456789", "key-new-9876543210"
WRONG = {"Authorization": "Bearer not-the-key"}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
)


LOCAL = "http://127.0.0.1"  # a Host the server answers (bound to loopback)


def _app(sandbox: Sandbox, keys: list[str], **values: object) -> ASGIApp:
    """The app; the shared servers below allow many wrong credentials (several tests send them)."""
    settings = ServerSettings(**({"mcp_auth_failures_per_minute": 1000} | values))  # type: ignore[arg-type]
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
    return build_app(server, settings, host="127.0.0.1", keys=keys)


@pytest.fixture(scope="module")
def rotating(sandbox: Sandbox) -> Iterator[str]:
    """A server accepting the old and the new key, as during a rotation."""
    with served_in_thread(_app(sandbox, [OLD, NEW])) as url:
        yield url


@pytest.fixture(scope="module")
def rotated(sandbox: Sandbox) -> Iterator[str]:
    """The same server after the rotation finished: only the new key."""
    with served_in_thread(_app(sandbox, [NEW])) as url:
        yield url


def _request(
    base: str, method: str, path: str, headers: dict[str, str], body: bytes | None = None
) -> httpx.Response:
    with (
        httpx.Client(timeout=5) as client,
        client.stream(method, base + path, headers=headers, content=body) as r,
    ):
        r.read() if r.status_code != 200 else None
        return r


ENDPOINTS = [
    ("GET", "/sse"),
    ("POST", "/mcp"),
    ("POST", "/messages/?session_id=0123456789abcdef0123456789abcdef"),
]
BAD_CREDENTIALS = {
    "no header": {},
    "basic": {"Authorization": "Basic dXNlcjpwYXNz"},
    "empty bearer": {"Authorization": "Bearer"},
    "wrong key": {"Authorization": "Bearer not-the-key"},
    "old key after rotation": {"Authorization": f"Bearer {OLD}"},
}


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@pytest.mark.parametrize("credential", list(BAD_CREDENTIALS))
def test_bad_credentials_get_401_with_a_bearer_challenge(
    rotated: str, method: str, path: str, credential: str
) -> None:
    response = _request(rotated, method, path, {**MCP_HEADERS, **BAD_CREDENTIALS[credential]}, INITIALIZE)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith('Bearer realm="incident-response"')
    assert response.json()["error"] == "unauthorized"


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_key_in_the_query_string_is_not_accepted(rotated: str, method: str, path: str) -> None:
    separator = "&" if "?" in path else "?"
    response = _request(
        rotated, method, f"{path}{separator}api_key={NEW}&access_token={NEW}", MCP_HEADERS, INITIALIZE
    )
    assert response.status_code == 401


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("key", [OLD, NEW])
async def test_both_keys_work_during_rotation(rotating: str, transport: Transport, key: str) -> None:
    async with mcp_session(transport, rotating, key) as session:
        tools = await session.list_tools()
    assert len(tools.tools) == len(SERVED_TOOLS)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_new_key_works_after_rotation(rotated: str, transport: Transport) -> None:
    async with mcp_session(transport, rotated, NEW) as session:
        result = await session.call_tool("get_lambda_config", {"lambda_name": names.FUNCTION_NAME})
    assert not result.is_error


def test_healthz_needs_no_key(rotated: str) -> None:
    response = httpx.get(f"{rotated}/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize(("method", "path"), ENDPOINTS[:2])
def test_foreign_host_and_origin_are_refused(rotated: str, method: str, path: str) -> None:
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {NEW}"}
    assert _request(rotated, method, path, {**auth, "Host": "evil.example"}, INITIALIZE).status_code == 421
    assert (
        _request(rotated, method, path, {**auth, "Origin": "http://evil.example"}, INITIALIZE).status_code
        == 403
    )


def test_oversized_body_is_refused(rotated: str) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 400_000 + b'"}}'
    response = _request(rotated, "POST", "/mcp", {**MCP_HEADERS, "Authorization": f"Bearer {NEW}"}, body)
    assert response.status_code == 413


async def test_malformed_json_rpc_gets_an_error_and_the_server_keeps_serving(rotated: str) -> None:
    response = _request(
        rotated, "POST", "/mcp", {**MCP_HEADERS, "Authorization": f"Bearer {NEW}"}, b"{not json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700  # JSON-RPC parse error
    async with mcp_session("http", rotated, NEW) as session:
        assert len((await session.list_tools()).tools) == len(SERVED_TOOLS)


def _run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "mcp_server.cli", "--port", "9", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_refuses_http_without_a_key(sandbox: Sandbox) -> None:
    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"}
    result = _run_cli(
        {**env, "AWS_PROFILE": names.MCP_SERVER, "MCP_API_KEY_SSM_PARAMETER": "/no/such/parameter"}
    )
    assert result.returncode == 2
    assert "refusing to start without a bearer key" in result.stderr
    assert "ParameterNotFound" in result.stderr


def test_cli_refuses_no_auth_off_loopback() -> None:
    result = _run_cli({}, "--insecure-no-auth", "--host", "0.0.0.0")  # noqa: S104
    assert result.returncode == 2
    assert "only allowed on a loopback address" in result.stderr


def test_cli_reports_invalid_configuration() -> None:
    result = _run_cli({"MCP_API_KEY_SSM_PARAMETER": "no-leading-slash"})
    assert result.returncode == 2
    assert "MCP_API_KEY_SSM_PARAMETER must be a parameter path" in result.stderr


def test_keys_never_reach_the_log(sandbox: Sandbox, tmp_path: Path) -> None:
    from chaos.mcp_process import server_process

    env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"} | {"AWS_PROFILE": names.MCP_SERVER}
    log = tmp_path / "server.log"
    with server_process(env, log, "--log-level", "DEBUG") as server:
        url = server.url
        _request(url, "GET", f"/sse?api_key={sandbox.world.mcp_api_key}", {})
        _request(url, "GET", "/sse", {"Authorization": "Bearer wrong-key-value"})
    text = log.read_text()
    assert "401 GET /sse" in text  # rejections are logged ...
    assert sandbox.world.mcp_api_key not in text  # ... without the keys
    assert "wrong-key-value" not in text


def _post(client: TestClient, headers: dict[str, str]) -> int:
    return client.post("/mcp", headers={**MCP_HEADERS, **headers}, content=INITIALIZE).status_code


def test_wrong_keys_are_throttled_per_client_and_meanwhile_even_the_right_key_is_not_checked(
    sandbox: Sandbox,
) -> None:
    app = _app(sandbox, [NEW], mcp_auth_failures_per_minute=2)  # two at once, then one per 30 s
    guesser = TestClient(app, base_url=LOCAL, client=("203.0.113.9", 40000))
    statuses = [_post(guesser, WRONG) for _ in range(60)]
    assert statuses[:2] == [401, 401]
    assert set(statuses[2:]) == {429}

    refused = guesser.post(
        "/mcp", headers={**MCP_HEADERS, "Authorization": f"Bearer {NEW}"}, content=INITIALIZE
    )
    assert refused.status_code == 429  # unchecked: the answer says nothing about the key
    assert 0 < int(refused.headers["retry-after"]) <= 30
    assert refused.json()["error"] == "too_many_requests"
    assert _post(guesser, {}) == 401  # no credential, nothing to throttle
    assert guesser.get("/healthz").status_code == 200

    other = TestClient(app, base_url=LOCAL, client=("198.51.100.4", 40000))
    assert _post(other, WRONG) == 401  # another client has its own allowance
    neighbour = TestClient(app, base_url=LOCAL, client=("2001:db8::1", 40000))
    same_block = TestClient(app, base_url=LOCAL, client=("2001:db8::2", 40000))
    assert [_post(neighbour, WRONG), _post(neighbour, WRONG), _post(same_block, WRONG)] == [401, 401, 429]


def test_behind_a_trusted_proxy_the_client_is_the_first_address_the_proxy_did_not_add(
    sandbox: Sandbox,
) -> None:
    app = _app(sandbox, [NEW], mcp_auth_failures_per_minute=1, mcp_trusted_proxies="10.0.0.0/8")
    balancer = TestClient(app, base_url=LOCAL, client=("10.0.3.7", 40000))

    def wrong_via(forwarded_for: str) -> int:
        return _post(balancer, WRONG | {"X-Forwarded-For": forwarded_for})

    assert wrong_via("203.0.113.9") == 401
    assert wrong_via("203.0.113.9") == 429
    assert wrong_via("198.51.100.7, 203.0.113.9") == 429  # what the client wrote on the left is not believed
    assert wrong_via("198.51.100.4") == 401  # another client behind the same balancer

    direct = TestClient(
        app, base_url=LOCAL, client=("203.0.113.50", 40000)
    )  # not a proxy: its X-Forwarded-For is ignored
    assert _post(direct, WRONG | {"X-Forwarded-For": "192.0.2.1"}) == 401
    assert _post(direct, WRONG | {"X-Forwarded-For": "192.0.2.2"}) == 429


def test_cli_refuses_short_keys_off_loopback() -> None:
    env = {"MCP_API_KEY": "abc123, " + "k" * 40, "AWS_REGION": "ca-central-1"}
    result = _run_cli(env, "--host", "0.0.0.0")  # noqa: S104
    assert result.returncode == 2
    assert "refuses bearer keys shorter than 32 characters (key 1 of 2 has 6)" in result.stderr
    assert "secrets.token_urlsafe(32)" in result.stderr
    assert "abc123" not in result.stderr
