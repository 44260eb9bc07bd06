"""The server's answer log (``MCP_ANSWER_LOG``): every answer as the client received it, with the incident
the supervisor's provider named, and every error as the client saw it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from pydantic import ValidationError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from supervisor.agent.providers import McpToolProvider, ToolCallFailed


async def test_each_answer_is_logged_as_sent_with_the_incident_the_caller_named(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    path = tmp_path / "answers" / "log.jsonl"
    settings = ServerSettings(mcp_answer_log=path)
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
    async with Client(server) as client:
        provider = McpToolProvider(client.session, deadline_seconds=5, incident_id="orders-api@1")
        target = {"lambda_name": names.FUNCTION_NAME}
        received = json.loads(await provider.call_tool("get_lambda_config", target))
        with pytest.raises(ToolCallFailed) as refused:
            await provider.call_tool("get_lambda_config", {"lambda_name": names.FUNCTION_NAME, "minutes": 5})
        await McpToolProvider(client.session).call_tool("get_iam_state", {"lambda_name": names.FUNCTION_NAME})

    answered, failed, anonymous = [json.loads(line) for line in path.read_text().splitlines()]
    assert answered["tool"] == "get_lambda_config"
    assert answered["arguments"] == {"lambda_name": names.FUNCTION_NAME}
    assert answered["incident_id"] == "orders-api@1"
    assert answered["answer"] == received
    assert failed["incident_id"] == "orders-api@1"
    assert failed["error"] == str(refused.value)
    assert "answer" not in failed
    assert anonymous["tool"] == "get_iam_state"
    assert anonymous["incident_id"] is None


def test_no_answer_log_unless_one_is_set() -> None:
    assert ServerSettings().mcp_answer_log is None


def test_an_answer_log_that_cannot_be_written_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="is a directory: name a file"):
        ServerSettings(mcp_answer_log=tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ValidationError, match="a-file is not a writable directory"):
        ServerSettings(mcp_answer_log=blocker / "answers.jsonl")
    assert ServerSettings(mcp_answer_log=tmp_path / "new" / "answers.jsonl").mcp_answer_log is not None


async def test_a_failed_write_loses_the_record_not_the_answer(
    sandbox: Sandbox, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "answers.jsonl"
    settings = ServerSettings(mcp_answer_log=path)
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
    path.mkdir()  # the file's place taken after start: every append now fails
    async with Client(server) as client:
        provider = McpToolProvider(client.session, incident_id="i-1")
        answer = json.loads(
            await provider.call_tool("get_lambda_config", {"lambda_name": names.FUNCTION_NAME})
        )
    assert answer["FunctionName"] == names.FUNCTION_NAME
    assert "get_lambda_config was not recorded" in caplog.text
