"""Real clients the way users run them: stdio (Claude Desktop local), mcp-proxy to SSE (Claude Desktop
remote), and an AWS outage in the middle of a session."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from chaos.loopback import served_in_thread
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from mcp_server.app import build_app
from mcp_server.aws import AwsClients
from mcp_server.contract.registry import SERVED_TOOLS
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from tests.mcp_support import mcp_session

ROOT = Path(__file__).resolve().parents[1]
MCP_PROXY = Path(os.environ.get("MCP_PROXY_BIN", ROOT / ".venv-mcp-proxy" / "bin" / "mcp-proxy"))


def _server_env(sandbox: Sandbox) -> dict[str, str]:
    return {**os.environ, **sandbox.env, "AWS_PROFILE": names.MCP_SERVER}


async def test_stdio_client_spawns_the_server_and_calls_tools(sandbox: Sandbox) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_server.cli", "--transport", "stdio"],
        env=_server_env(sandbox),
    )
    async with Client(params) as client:
        assert len((await client.list_tools()).tools) == len(SERVED_TOOLS)
        result = await client.call_tool("get_lambda_config", {"lambda_name": names.FUNCTION_NAME})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["FunctionName"] == names.FUNCTION_NAME


async def test_mcp_proxy_bridges_a_stdio_client_to_the_sse_server(sandbox: Sandbox) -> None:
    key = "proxy-test-key-0123456789"
    settings = ServerSettings()
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
    with served_in_thread(build_app(server, settings, host="127.0.0.1", keys=[key])) as url:
        # Exactly what a Claude Desktop config runs: mcp-proxy <url>/sse -H Authorization "Bearer <key>"
        params = StdioServerParameters(
            command=str(MCP_PROXY),
            args=[f"{url}/sse", "-H", "Authorization", f"Bearer {key}"],
            env=dict(os.environ),
        )
        async with Client(params) as client:
            assert len((await client.list_tools()).tools) == len(SERVED_TOOLS)
            result = await client.call_tool("get_iam_state", {"lambda_name": names.FUNCTION_NAME})
    assert not result.is_error
    assert names.INLINE_POLICY_NAME in result.content[0].text  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def outage_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A sandbox of its own: these tests pause and stop its emulator."""
    with running_sandbox(tmp_path_factory.mktemp("outage")) as sandbox:
        yield sandbox


async def test_aws_outage_mid_session_is_reported_and_the_server_recovers(outage_sandbox: Sandbox) -> None:
    settings = ServerSettings(aws_connect_timeout=1, aws_read_timeout=1, aws_max_attempts=1)
    server = build_server(settings, AwsClients.create(settings, outage_sandbox.session(names.MCP_SERVER)))
    arguments = {"lambda_name": names.FUNCTION_NAME}
    with served_in_thread(build_app(server, settings, host="127.0.0.1", keys=["k"])) as url:
        async with mcp_session("sse", url, "k") as session:
            assert not (await session.call_tool("get_lambda_config", arguments)).is_error
            os.kill(outage_sandbox.emulator_pid, signal.SIGSTOP)
            try:
                during = await session.call_tool("get_lambda_config", arguments)
            finally:
                os.kill(outage_sandbox.emulator_pid, signal.SIGCONT)
            after = await session.call_tool("get_lambda_config", arguments)
    assert during.is_error
    assert "AWS is unreachable" in during.content[0].text  # type: ignore[union-attr]
    assert not after.is_error

    outage_sandbox.stop()  # gone for good: connection refused rather than a hang
    async with Client(server) as client:
        gone = await client.call_tool("get_network_state", arguments)
    assert gone.is_error
    assert "AWS is unreachable" in gone.content[0].text  # type: ignore[union-attr]
