"""Every tool over SSE and Streamable HTTP (key from SSM, read-only identity): healthy and per fault."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from chaos.faults.chaos import Fault
from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.contract import IAMStateResponse, LambdaConfigResponse, LogsResponse, NetworkStateResponse
from mcp_server.contract.registry import TOOL_NAMES, TOOLS
from tests.conftest import Inject
from tests.mcp_support import TRANSPORTS, Transport, mcp_session


def _check_healthy(r: dict[str, Any]) -> None:
    assert names.INLINE_POLICY_NAME in r["iam"].inline_policies
    assert r["config"].ReservedConcurrentExecutions is None
    assert r["network"].https_egress_allowed is True


def _new_lines(r: dict[str, Any]) -> list[str]:
    """Log lines written since this test's invocation (the log group is shared by the whole session)."""
    invoked_at: datetime = r["invoked_at"]
    since = invoked_at.replace(microsecond=invoked_at.microsecond // 1000 * 1000)  # log timestamps are in ms
    return [e.message for e in r["logs"].events if datetime.fromisoformat(e.timestamp) >= since]


def _check_s3(r: dict[str, Any]) -> None:
    assert names.INLINE_POLICY_NAME not in r["iam"].inline_policies
    assert any("AccessDenied" in line for line in _new_lines(r))


def _check_logs(r: dict[str, Any]) -> None:
    assert names.LOGS_POLICY_NAME not in {p.policy_name for p in r["iam"].attached_policies}
    assert _new_lines(r) == []


def _check_concurrency(r: dict[str, Any]) -> None:
    assert r["config"].ReservedConcurrentExecutions == 0


def _check_egress(r: dict[str, Any]) -> None:
    assert r["network"].https_egress_allowed is False
    assert any("Task timed out" in line for line in _new_lines(r))


INJECTIONS: dict[str, tuple[Fault, dict[str, Any]] | None] = {
    "healthy": None,
    "s3_policy_deleted": (REVOKE_S3, {}),
    "logs_policy_detached": (REVOKE_CLOUDWATCH, {}),
    "concurrency_0": (THROTTLE, {"concurrency": 0}),
    "egress_removed": (BLOCK_EGRESS, {}),
}
CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "healthy": _check_healthy,
    "s3_policy_deleted": _check_s3,
    "logs_policy_detached": _check_logs,
    "concurrency_0": _check_concurrency,
    "egress_removed": _check_egress,
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("fault", list(CHECKS))
async def test_every_tool_returns_validated_output(
    mcp_server_url: str,
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    inject: Inject,
    fault: str,
    transport: Transport,
) -> None:
    if injection := INJECTIONS[fault]:
        inject(injection[0], **injection[1])
    invoked_at = datetime.now(UTC)
    runtime.invoke(names.FUNCTION_NAME, names.input_event())
    results: dict[str, Any] = {}
    async with mcp_session(transport, mcp_server_url, sandbox.world.mcp_api_key) as session:
        for tool in TOOL_NAMES:
            result = await session.call_tool(tool, {"lambda_name": names.FUNCTION_NAME})
            assert not result.is_error, result.content
            results[tool] = TOOLS[tool].response.model_validate(result.structured_content)
    shaped = {
        "logs": results["get_recent_logs"],
        "iam": results["get_iam_state"],
        "config": results["get_lambda_config"],
        "network": results["get_network_state"],
        "invoked_at": invoked_at,
    }
    assert isinstance(shaped["logs"], LogsResponse)
    assert isinstance(shaped["iam"], IAMStateResponse)
    assert isinstance(shaped["config"], LambdaConfigResponse)
    assert isinstance(shaped["network"], NetworkStateResponse)
    CHECKS[fault](shaped)
