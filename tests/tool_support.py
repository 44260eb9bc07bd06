"""Call a tool function directly (no MCP) against the sandbox, as the server would: the target resolved,
the clients of that target, the tool's reads with their deadline."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mcp_server.aws import AwsClients
from mcp_server.contract import TargetArguments
from mcp_server.reads import Reads
from mcp_server.settings import ServerSettings
from mcp_server.tools.context import ToolContext

_EXECUTOR = ThreadPoolExecutor(max_workers=16, thread_name_prefix="test-aws-read")


def tool_context(
    aws: AwsClients, args: TargetArguments, settings: ServerSettings | None = None
) -> ToolContext:
    settings = settings or ServerSettings()
    target = aws.resolver.resolve(args)
    return ToolContext(
        aws.for_target(target), Reads(_EXECUTOR, settings.mcp_tool_deadline_seconds, target.region), settings
    )


def call_tool(
    aws: AwsClients, function: Any, args: TargetArguments, settings: ServerSettings | None = None
) -> Any:
    """``function(context, args)`` as the server runs it."""
    return function(tool_context(aws, args, settings), args)
