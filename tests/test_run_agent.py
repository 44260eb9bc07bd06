"""run_agent end to end: Bedrock at the HTTP wire, MCP failures and their categories, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from chaos.bedrock_fake import FakeConverse, aws_error, tool_use
from chaos.loopback import BlackHole, free_port
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from supervisor.agent.models import build_model
from supervisor.agent.run import run_agent
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings

MODEL = "bedrock:anthropic.claude-3-5-sonnet-20241022-v2:0"
FAST_RETRY: dict[str, Any] = {"backoff_base": 0.1, "bedrock_max_attempts": 1}


def _submission() -> dict[str, Any]:
    return {
        "root_cause": "No fault is visible in the function configuration.",
        "fault_types": ["unknown"],
        "affected_resources": [names.FUNCTION_NAME],
        "severity": "low",
        "evidence": [
            {
                "tool": "get_lambda_config",
                "field": "ReservedConcurrentExecutions",
                "value": "null",
                "interpretation": "No concurrency limit.",
                "supports": None,
            }
        ],
        "remediation_plan": [],
        "confidence": 0.3,
    }


async def _run(sandbox: Sandbox, mcp_url: str, **settings: Any) -> Any:
    config = SupervisorSettings(mcp_server_url=f"{mcp_url}/sse", supervisor_model=MODEL, **settings)
    return await run_agent(
        {"AlarmName": "data-processor-errors"},
        "inc-bedrock",
        names.FUNCTION_NAME,
        settings=config,
        api_key=sandbox.world.mcp_api_key,
        model=build_model(MODEL, config),
    )


async def test_a_bedrock_model_drives_a_full_diagnosis(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    bedrock.script += [
        tool_use("get_lambda_config", {"lambda_name": names.FUNCTION_NAME}, "use-1", tokens=900),
        tool_use("submit_diagnosis", _submission(), "use-2", tokens=1200),
    ]
    result = await _run(sandbox, mcp_server_url)
    assert result.diagnosis is not None
    assert result.diagnosis.verification.passed
    assert [u.total_tokens for u in result.token_usage] == [900, 1200]
    assert [r.tool for r in result.tool_calls] == ["get_lambda_config", "submit_diagnosis"]
    first, second = bedrock.requests
    assert first["model"] == "anthropic.claude-3-5-sonnet-20241022-v2:0"
    assert "untrusted data" in first["system"][0]["text"].lower()
    assert {t["toolSpec"]["name"] for t in first["toolConfig"]["tools"]} == {
        "get_recent_logs",
        "get_iam_state",
        "get_lambda_config",
        "get_network_state",
        "get_recent_changes",
        "get_function_metrics",
        "submit_diagnosis",
    }
    result_block = second["messages"][-1]["content"][0]["toolResult"]
    assert result_block["toolUseId"] == "use-1"
    assert result_block["content"][0]["text"].startswith(
        '<tool_result tool="get_lambda_config" trust="data">'
    )


async def test_throttling_is_retried_as_bedrock_transient(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    bedrock.script += [
        aws_error(429, "ThrottlingException", "Rate exceeded"),
        tool_use("get_lambda_config", {"lambda_name": names.FUNCTION_NAME}, "use-1"),
        tool_use("submit_diagnosis", _submission(), "use-2"),
    ]
    result = await _run(sandbox, mcp_server_url, **FAST_RETRY)
    assert result.diagnosis is not None
    assert [e.category for e in result.failed_attempts] == ["bedrock_transient"]
    assert "ThrottlingException" in result.failed_attempts[0].message
    assert len(bedrock.requests) == 3


async def test_access_denied_is_bedrock_auth_and_not_retried(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    bedrock.script += [
        aws_error(403, "AccessDeniedException", "not authorized to perform bedrock:InvokeModel"),
        tool_use("submit_diagnosis", _submission(), "never-reached"),
    ]
    with pytest.raises(AgentError) as raised:
        await _run(sandbox, mcp_server_url, **FAST_RETRY)
    assert raised.value.category == "bedrock_auth"
    assert "bedrock:InvokeModel" in raised.value.message
    assert len(bedrock.requests) == 1


def _rules_settings(url: str, **overrides: Any) -> SupervisorSettings:
    return SupervisorSettings(mcp_server_url=url, supervisor_model="rules", backoff_base=0.1, **overrides)


async def test_mcp_server_down_is_mcp_connection_after_the_retry() -> None:
    url = f"http://127.0.0.1:{free_port()}/sse"  # nothing listens there
    with pytest.raises(AgentError) as raised:
        await run_agent({}, "inc-down", names.FUNCTION_NAME, settings=_rules_settings(url), api_key="k")
    assert raised.value.category == "mcp_connection"
    assert "after 2 attempt(s)" in raised.value.__notes__


async def test_a_server_that_never_answers_times_out_once_retries_then_fails() -> None:
    hole = BlackHole()
    url = f"{hole.url}/sse"
    started = time.monotonic()
    try:
        with pytest.raises(AgentError) as raised:
            await run_agent(
                {},
                "inc-hole",
                names.FUNCTION_NAME,
                settings=_rules_settings(url, mcp_connect_timeout=0.5),
                api_key="k",
            )
    finally:
        hole.close()
    assert raised.value.category == "mcp_connection"
    assert "no answer from" in raised.value.message
    assert "within 0.5 s" in raised.value.message
    assert len(hole.accepted) == 2  # the attempt and one retry
    assert time.monotonic() - started < 5


async def test_a_wrong_key_is_not_retried(sandbox: Sandbox, mcp_server_url: str) -> None:
    settings = _rules_settings(f"{mcp_server_url}/sse")
    with pytest.raises(AgentError) as raised:
        await run_agent({}, "inc-key", names.FUNCTION_NAME, settings=settings, api_key="wrong")
    assert raised.value.category == "mcp_connection"
    assert "check MCP_API_KEY" in raised.value.message
    assert "after 1 attempt(s)" in raised.value.__notes__


def _cli(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | sandbox.env
    return subprocess.run(
        [sys.executable, "-m", "supervisor.agent.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_prints_the_report_with_live_progress(sandbox: Sandbox, mcp_server_url: str) -> None:
    result = _cli(sandbox, "--lambda", names.FUNCTION_NAME, "--mcp-url", f"{mcp_server_url}/sse")
    assert result.returncode == 0, result.stderr
    assert "get_recent_logs ok" in result.stderr  # each tool call as it happens
    for heading in ("Root cause:", "Fault types:", "Severity:", "Confidence:", "Evidence:", "Remediation:"):
        assert heading in result.stdout
    assert "Tools called:" in result.stdout
    assert "LLM calls:" in result.stdout
    assert "Wall time:" in result.stdout


def test_cli_json_is_the_whole_result(sandbox: Sandbox, mcp_server_url: str) -> None:
    result = _cli(sandbox, "--lambda", names.FUNCTION_NAME, "--mcp-url", f"{mcp_server_url}/mcp", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["diagnosis"]["verification"]["pointers"]
    assert {call["tool"] for call in payload["tool_calls"]} >= {"get_recent_logs", "submit_diagnosis"}
    assert payload["stop_reason"] == "diagnosed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lambda", "../etc/passwd"], "invalid input"),
        (["--lambda", "f", "--model", "gpt"], "SUPERVISOR_MODEL must be 'rules' or 'provider:model'"),
        (["--lambda", "f", "--mcp-url", "ftp://x"], "MCP_SERVER_URL must be an http(s) URL"),
        (["--lambda", "f", "--model", "nosuchprovider:model"], "cannot be built"),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(sandbox: Sandbox, args: list[str], message: str) -> None:
    result = _cli(sandbox, *args)
    assert result.returncode == 2
    assert message in result.stderr
