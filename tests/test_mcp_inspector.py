"""MCP Inspector's CLI (``@modelcontextprotocol/inspector --cli``), the tool people reach for first,
lists and calls the tools over Streamable HTTP, SSE and stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from tests.node_tools import bin_script, run_node

CORE_TOOLS = {"get_recent_logs", "get_iam_state", "get_lambda_config", "get_network_state"}


def _inspector(home: Path, *args: str) -> dict[str, Any]:
    """Run the CLI with its catalog and state in ``home``; its JSON answer."""
    script = bin_script("@modelcontextprotocol/inspector", "mcp-inspector")
    env = {"HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}
    result = run_node(script, "--cli", *args, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_inspector_lists_the_tools_over_streamable_http(
    mcp_server_url: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    auth = f"Authorization: Bearer {sandbox.world.mcp_api_key}"
    answer = _inspector(tmp_path, f"{mcp_server_url}/mcp", "--header", auth, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in answer["tools"]}
    assert set(tools) >= CORE_TOOLS
    assert all(tool["annotations"]["readOnlyHint"] for tool in tools.values())


def test_inspector_calls_a_tool_over_sse(mcp_server_url: str, sandbox: Sandbox, tmp_path: Path) -> None:
    auth = f"Authorization: Bearer {sandbox.world.mcp_api_key}"
    answer = _inspector(
        tmp_path,
        f"{mcp_server_url}/sse",
        "--header",
        auth,
        "--method",
        "tools/call",
        "--tool-name",
        "get_lambda_config",
        "--tool-arg",
        f"lambda_name={names.FUNCTION_NAME}",
    )
    assert not answer.get("isError")
    assert answer["structuredContent"]["FunctionName"] == names.FUNCTION_NAME


def test_inspector_spawns_the_server_over_stdio(sandbox: Sandbox, tmp_path: Path) -> None:
    env = [f"{name}={sandbox.env[name]}" for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")]
    answer = _inspector(
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "get_iam_state",
        "--tool-arg",
        f"lambda_name={names.FUNCTION_NAME}",
        *[arg for pair in env for arg in ("-e", pair)],
        "-e",
        f"AWS_PROFILE={names.MCP_SERVER}",
        "--",
        sys.executable,
        "-m",
        "mcp_server.cli",
        "--transport",
        "stdio",
    )
    assert not answer.get("isError")
    assert names.INLINE_POLICY_NAME in json.dumps(answer["structuredContent"])
