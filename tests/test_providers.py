"""McpToolProvider against a real in-memory MCP server: structured content, text, empty answers, errors."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientSession
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult
from pydantic import BaseModel

from supervisor.agent.providers import EMPTY_RESPONSE, McpToolProvider, SchemaCachingSession, ToolCallFailed


class Answer(BaseModel):
    value: int


def _server() -> MCPServer:
    server = MCPServer("providers-test")

    @server.tool()
    async def structured() -> Answer:
        return Answer(value=7)

    @server.tool(structured_output=False)
    async def text_only() -> str:
        return '{"value": 8}'

    @server.tool()
    async def empty() -> CallToolResult:
        return CallToolResult(content=[])

    @server.tool()
    async def broken() -> str:
        raise ToolError("the role cannot be read")

    return server


async def _call(tool: str) -> str:
    # The session lives inside the test's own task: anyio cancel scopes cannot span fixture setup/teardown.
    async with InMemoryTransport(_server()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        try:
            return await McpToolProvider(session).call_tool(tool, {})
        except ToolCallFailed as error:  # raised here, the session's task group would wrap it in a group
            return f"ToolCallFailed: {error}"


async def test_prefers_structured_content() -> None:
    assert json.loads(await _call("structured")) == {"value": 7}


async def test_falls_back_to_the_text_content() -> None:
    assert json.loads(await _call("text_only")) == {"value": 8}


async def test_empty_content_is_an_error_object_not_an_index_error() -> None:
    assert await _call("empty") == EMPTY_RESPONSE


async def test_a_tool_error_is_raised_with_its_message() -> None:
    assert await _call("broken") == "ToolCallFailed: Error executing tool broken: the role cannot be read"


class Counted(BaseModel):
    counted: int


class Spelled(BaseModel):
    counted: str


def _answering(value: int | str) -> MCPServer:
    """A server whose one tool, ``counted``, declares an integer output, or a string one for a string."""
    server = MCPServer("schema-cache-test")
    if isinstance(value, int):

        @server.tool(name="counted")
        async def counted() -> Counted:
            return Counted(counted=value)
    else:

        @server.tool(name="counted")
        async def spelled() -> Spelled:
            return Spelled(counted=value)

    return server


async def _structured(server: MCPServer) -> dict[str, object]:
    async with InMemoryTransport(server) as (read, write), SchemaCachingSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("counted", {})
        assert not result.is_error, result.content
        return dict(result.structured_content or {})


async def test_a_tools_output_schema_is_checked_once_across_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[object] = []
    original = Draft202012Validator.check_schema.__func__

    def check_schema(cls: type[Draft202012Validator], schema: object, /, **kwargs: object) -> None:
        checked.append(schema)
        original(cls, schema, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(check_schema))
    monkeypatch.setattr(SchemaCachingSession, "_validators", {})  # as a fresh process starts
    assert await _structured(_answering(1)) == {"counted": 1}
    assert await _structured(_answering(2)) == {"counted": 2}  # a second session, the same schema
    assert len([s for s in checked if "counted" in str(s)]) == 1


async def test_a_tool_whose_schema_changed_is_validated_against_its_new_schema() -> None:
    # A validator kept by tool name alone would hold the answer "two" to the integer schema and refuse it.
    assert await _structured(_answering(3)) == {"counted": 3}
    assert await _structured(_answering("two")) == {"counted": "two"}
