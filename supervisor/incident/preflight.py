"""Whether the function a direct signal names exists, asked of the MCP server before anything is written.

A direct incident names its function in free text; one that names no function is a bad request, not an
incident: it is rejected like any other malformed record (logged ``rejected_message``, counted
``RejectedMessages``, nothing written, nothing notified) instead of being investigated into an
``unknown`` diagnosis. The supervisor reads AWS only through the MCP server, so that is who is asked (one
``get_lambda_config`` call). Only a definite "no such function" rejects; a check that cannot be made (the
server unreachable, the key unreadable, the budget spent) lets the signal through, and the investigation
reports what is wrong as it always did.

Imports the agent stack's MCP client when called, and is called only for a direct signal whose incident is
not recorded yet: duplicates stay on the cold path.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from supervisor.settings import SupervisorSettings

PREFLIGHT_SECONDS: Final[float] = 5.0  # the whole check: session, handshake and one tool call
# How the MCP server reports a function that does not exist (mcp_server.errors.describe_aws_failure).
_NOT_FOUND: Final[str] = "AWS error ResourceNotFoundException while reading function {function} "


async def _answer(settings: SupervisorSettings, api_key: str, function: str) -> str | None:
    from supervisor.agent.mcp_client import mcp_session
    from supervisor.agent.providers import McpToolProvider, ToolCallFailed

    async with mcp_session(settings, api_key) as session:
        try:
            await McpToolProvider(session).call_tool("get_lambda_config", {"lambda_name": function})
        except ToolCallFailed as failed:
            text = str(failed)
            marker = _NOT_FOUND.format(function=function)
            return text[text.index(marker) + len("AWS error ") :][:300] if marker in text else None
    return None


def missing_function(settings: SupervisorSettings, api_key: str, function: str) -> str | None:
    """The MCP server's answer when ``function`` does not exist; None when it exists or could not be
    checked within PREFLIGHT_SECONDS. Never raises."""
    loop = asyncio.new_event_loop()  # never reuse a loop a previous invocation left behind
    try:
        return loop.run_until_complete(
            asyncio.wait_for(_answer(settings, api_key, function), PREFLIGHT_SECONDS)
        )
    except Exception:  # unreachable, refused, slow: not a verdict on the function
        return None
    finally:
        loop.close()
