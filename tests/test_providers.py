"""McpToolProvider against a real in-memory MCP server: structured content, text, empty answers, errors."""

from __future__ import annotations

import json

from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientSession
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult
from pydantic import BaseModel

from supervisor.agent.providers import EMPTY_RESPONSE, McpToolProvider, ToolCallFailed


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
