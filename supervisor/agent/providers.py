"""Tool providers: the MCP client the agent uses in production, and canned responses for graph tests."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from mcp.client.session import ClientSession
from mcp_types import RequestParamsMeta, TextContent

from supervisor.schemas import ToolResult

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

EMPTY_RESPONSE = json.dumps({"error": "Tool returned empty response"})


class ToolCallFailed(Exception):
    """The tool ran and reported an error (an MCP ``isError`` result); the message is shown to the model."""


# The request ``_meta`` keys that tell the MCP server how long the caller will wait for a tool's answer,
# and which incident the call is for (the server's answer log keeps it).
DEADLINE_META_KEY = "incident-response/deadline-seconds"
INCIDENT_META_KEY = "incident-response/incident-id"


class SchemaCachingSession(ClientSession):
    """An MCP client session whose compiled output-schema validators outlive it, keyed by tool name and
    schema: the SDK checks each tool's schema against the JSON Schema metaschema once per session (about
    0.4 s of CPU for the seven tools), and every investigation opens a session of its own, the re-check's
    and a warm Lambda's next one among them. A tool whose schema changes gets a validator of its own."""

    _validators: ClassVar[dict[tuple[str, str], Validator]] = {}

    def _output_schema_validator(self, name: str, output_schema: dict[str, Any]) -> Validator:
        key = (name, json.dumps(output_schema, sort_keys=True))
        validator = self._validators.get(key)
        if validator is None:
            validator = super()._output_schema_validator(name, output_schema)
            self._validators[key] = validator
        return validator


class McpToolProvider:
    """Calls the diagnostic tools over an initialized MCP session. With ``deadline_seconds``, each call
    asks the server to answer within it (with what it could read, and the rest as gaps); with
    ``incident_id``, each call names the incident it is for."""

    def __init__(
        self, session: ClientSession, deadline_seconds: float | None = None, incident_id: str | None = None
    ) -> None:
        self._session = session
        meta: dict[str, Any] = {DEADLINE_META_KEY: deadline_seconds} if deadline_seconds else {}
        meta |= {INCIDENT_META_KEY: incident_id} if incident_id else {}
        self._meta = cast(RequestParamsMeta, meta) if meta else None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self._session.call_tool(name, arguments, meta=self._meta)
        text = next((c.text for c in result.content if isinstance(c, TextContent)), None)
        if result.is_error:
            raise ToolCallFailed(text or f"{name} failed without a message")
        if result.structured_content is not None:
            return json.dumps(result.structured_content)
        return text if text else EMPTY_RESPONSE


class MockToolProvider:
    """Canned responses by tool name, for unit tests of the graph; records every call it gets."""

    def __init__(self, responses: Mapping[str, str]) -> None:
        self._responses = dict(responses)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls.append((name, arguments))
        if name not in self._responses:
            raise ToolCallFailed(f"unknown tool {name!r}")
        return self._responses[name]


class RecordedToolProvider:
    """Serves the tool results recorded for an incident (a replay); anything not recorded is an error."""

    def __init__(self, results: Iterable[ToolResult]) -> None:
        self._answers: dict[tuple[str, str], str] = {
            (r.tool, json.dumps(r.arguments, sort_keys=True)): json.dumps(r.result) for r in results
        }

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        answer = self._answers.get((name, json.dumps(arguments, sort_keys=True)))
        if answer is not None:
            return answer
        recorded = [args for tool, args in self._answers if tool == name]
        if recorded:
            raise ToolCallFailed(
                f"{name} was recorded for this incident only with arguments {', '.join(recorded)}"
            )
        raise ToolCallFailed(f"{name} was not called in the recorded investigation, so there is no answer")
