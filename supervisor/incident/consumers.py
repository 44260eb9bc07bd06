"""The functions an alarm on a queue or topic is about, asked of the MCP server before anything is written.

An alarm on an ``AWS/SQS`` or ``AWS/SNS`` metric names a queue or a topic, not a function. The supervisor
reads AWS only through the MCP server, so it asks the server's ``get_source_consumers`` (one call, within
RESOLVE_SECONDS) which functions the resource is tied to: each gets its own signal, which opens or joins
that function's incident as any alarm does.

- Functions found: one signal per function (sorted by name), each keeping the alarmed resource.
- The resource does not exist, or nothing is tied to it and every read succeeded: a definite "no
  function", so the record is rejected (logged ``rejected_message``, counted ``RejectedMessages``, nothing
  written).
- The server cannot be reached, refuses, answers late, or found nothing while some reads failed (gaps):
  no verdict, and the alarm must not be lost. ``ConsumersUnknown`` is raised; the pipeline reports the
  record ``unrecorded`` and fails the handler, so Lambda redelivers the event (as for DynamoDB failures:
  ``IncidentsNotRecorded``). Lambda retries an asynchronous SNS invocation twice, so an outage longer than
  the retries sends the event to the supervisor's on-failure handling, not into silence.

Imports the agent stack's MCP client when called: only a resource alarm pays for it.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from supervisor.incident.signals import AlarmedResource, Signal

if TYPE_CHECKING:
    from supervisor.settings import SupervisorSettings

RESOLVE_SECONDS: Final[float] = 10.0  # the whole question: session, handshake and one tool call
TOOL: Final[str] = "get_source_consumers"
# How the MCP server reports a queue or topic that does not exist (mcp_server.errors.describe_aws_failure).
_NOT_FOUND: Final[tuple[str, ...]] = (
    "AWS error AWS.SimpleQueueService.NonExistentQueue ",
    "AWS error QueueDoesNotExist ",
    "AWS error NotFound ",
)


class ConsumersUnknown(RuntimeError):
    """The MCP server could not say which functions the resource is tied to: try the record again."""


class NoConsumer(ValueError):
    """The resource does not exist, or no function is tied to it: the record is not an incident."""


async def _ask(settings: SupervisorSettings, api_key: str, resource: AlarmedResource) -> tuple[bool, str]:
    """(answered, text): the tool's answer, or its error message (the tool ran and failed)."""
    from supervisor.agent.mcp_client import mcp_session
    from supervisor.agent.providers import McpToolProvider, ToolCallFailed

    async with mcp_session(settings, api_key) as session:
        try:  # inside the session: its task group would wrap the error
            return True, await McpToolProvider(session, RESOLVE_SECONDS).call_tool(
                TOOL, {"source": resource.arn}
            )
        except ToolCallFailed as failed:
            return False, str(failed)


def _answer(settings: SupervisorSettings, api_key: str, resource: AlarmedResource) -> str:
    loop = asyncio.new_event_loop()  # never reuse a loop a previous invocation left behind
    try:
        answered, text = loop.run_until_complete(
            asyncio.wait_for(_ask(settings, api_key, resource), RESOLVE_SECONDS)
        )
    except TimeoutError:
        raise ConsumersUnknown(f"{TOOL} did not answer within {RESOLVE_SECONDS:g} s") from None
    except Exception as error:  # unreachable, refused: no verdict on the resource
        raise ConsumersUnknown(f"{TOOL} could not be asked: {_why(error)}"[:400]) from None
    finally:
        loop.close()
    if answered:
        return text
    if any(marker in text for marker in _NOT_FOUND):
        raise NoConsumer(f"{resource.arn} does not exist ({text[:300]})")
    raise ConsumersUnknown(f"{TOOL} failed: {text[:300]}")


def _why(error: BaseException) -> str:
    """The first leaf of an exception group, or the error itself, as 'Type: message'."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


def consumer_signals(settings: SupervisorSettings, api_key: str, signal: Signal) -> list[Signal]:
    """One signal per function the signal's alarmed resource is tied to. NoConsumer when there is none;
    ConsumersUnknown when the MCP server could not tell."""
    from pydantic import ValidationError

    from mcp_server.contract.consumers import SourceConsumersResponse

    resource = signal.alarmed_resource
    if resource is None:
        return [signal]
    try:
        answer = SourceConsumersResponse.model_validate_json(_answer(settings, api_key, resource))
    except ValidationError as error:
        raise ConsumersUnknown(
            f"{TOOL} answered outside its contract: {error.error_count()} errors"
        ) from None
    functions = sorted({consumer.function_name for consumer in answer.consumers})
    if not functions and answer.gaps:
        unread = "; ".join(f"{gap.source}: {gap.meaning}" for gap in answer.gaps)
        raise ConsumersUnknown(
            f"no function found for {resource.arn}, and some reads failed ({unread})"[:500]
        )
    if not functions:
        raise NoConsumer(
            f"no Lambda function is tied to {resource.arn}: no event source mapping polls it or a queue it "
            f"is the dead-letter queue of, no subscription delivers to a function, and none of the "
            f"{answer.functions_scanned} functions names it as dead-letter queue or destination"
        )
    return [replace(signal, function_name=function) for function in functions]
