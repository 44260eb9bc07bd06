"""The server through a real in-memory MCP client: tool declarations, argument validation, read-only guard."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import UnexpectedToolError
from pydantic import BaseModel

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract.registry import SERVED_TOOLS, TOOL_NAMES, TOOLS
from mcp_server.errors import ReadOnlyViolation
from mcp_server.registration import contract_tool
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings


class RequestCounter:
    """Counts HTTP requests the AWS clients made from one boto3 session actually send."""

    def __init__(self, session: boto3.Session) -> None:
        self.sent = 0
        session.events.register("before-send", self._count)

    def _count(self, **_: Any) -> None:
        self.sent += 1


@pytest.fixture
def session(sandbox: Sandbox) -> boto3.Session:
    return sandbox.session(names.MCP_SERVER)


@pytest.fixture
def clients(session: boto3.Session) -> AwsClients:
    return AwsClients.create(ServerSettings(), session)


@pytest.fixture
def server(clients: AwsClients) -> MCPServer:
    return build_server(ServerSettings(), clients)


@pytest.fixture
def counter(session: boto3.Session) -> RequestCounter:
    return RequestCounter(session)


async def test_tools_are_declared_read_only_with_input_and_output_schemas(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(tools) == sorted(SERVED_TOOLS)
    for tool in tools.values():
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.description
        assert len(tool.description) > 80
        assert tool.output_schema is not None
        subject = "lambda_name" if SERVED_TOOLS[tool.name].about_function else "source"
        assert "pattern" in tool.input_schema["properties"][subject]
        assert tool.input_schema["required"] == [subject]


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_structured_content_and_text_carry_the_same_validated_json(
    server: MCPServer, tool: str
) -> None:
    async with Client(server) as client:
        result = await client.call_tool(tool, {"lambda_name": names.FUNCTION_NAME})
    assert not result.is_error
    assert result.structured_content is not None
    model = TOOLS[tool].response.model_validate(result.structured_content)
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == model.model_dump(mode="json")
    assert "\n" not in text  # compact: the SDK's own text copy is indented, twice the size on the wire


async def test_an_answer_of_another_type_than_the_contract_s_is_an_error_not_an_answer() -> None:
    async def wrong(args: Any, deadline: float | None) -> BaseModel:
        return TOOLS["get_iam_state"].response.model_validate(
            {"role_name": "r", "inline_policies": {}, "attached_policies": []}
        )

    tool = contract_tool(TOOLS["get_function_metrics"], wrong)
    with pytest.raises(UnexpectedToolError) as raised:
        await tool.run({"lambda_name": names.FUNCTION_NAME}, context=None, convert_result=True)
    assert "not FunctionMetricsResponse" in str(raised.value.__cause__)


BAD_NAMES = ["../etc", "x" * 200, "", "data\x00processor", "arn:aws:s3:::data-processor-input", "a b"]


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_invalid_lambda_names_are_refused_with_zero_aws_calls(
    server: MCPServer, counter: RequestCounter, tool: str
) -> None:
    async with Client(server) as client:
        for bad in BAD_NAMES:
            result = await client.call_tool(tool, {"lambda_name": bad})
            assert result.is_error, bad
            assert "lambda_name must be" in result.content[0].text  # type: ignore[union-attr]
        assert counter.sent == 0
        ok = await client.call_tool(tool, {"lambda_name": names.FUNCTION_NAME})
    assert not ok.is_error
    assert counter.sent > 0  # the counter does see real calls


async def test_unknown_function_is_a_tool_error_naming_the_aws_code(server: MCPServer) -> None:
    async with Client(server) as client:
        result = await client.call_tool("get_lambda_config", {"lambda_name": "no-such-function"})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "ResourceNotFoundException" in text
    assert "no-such-function" in text
    assert names.DEFAULT_REGION in text


def test_read_only_guard_refuses_a_mutating_call_before_sending(
    clients: AwsClients, counter: RequestCounter
) -> None:
    with pytest.raises(ReadOnlyViolation, match="PutFunctionConcurrency"):
        clients.client("lambda").put_function_concurrency(
            FunctionName=names.FUNCTION_NAME, ReservedConcurrentExecutions=0
        )
    with pytest.raises(ReadOnlyViolation, match="DeleteRolePolicy"):
        clients.client("iam").delete_role_policy(
            RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME
        )
    assert counter.sent == 0
