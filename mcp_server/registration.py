"""Tools registered from the contract: the published input schema is the argument model's (no unknown
argument, strict types, no generated titles), and arguments are validated against it as sent.

The SDK's own signature-based tools drop unknown arguments, coerce types (``true`` to 1) and pre-parse
JSON inside strings (``"null"`` becomes None); a tool whose arguments the model misspells must instead
say which arguments exist. Validation errors are written in plain words for the model that reads them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from mcp_server.answer_log import AnswerLog, incident_of
from mcp_server.contract.declaration import ToolDeclaration
from mcp_server.contract.published_schema import published_schema


class _NoSignature(ArgModelBase):
    """Placeholder: a contract tool validates its arguments with its own model."""


def _plain(error: ErrorDetails) -> str:
    field = str(error["loc"][0]) if error["loc"] else "arguments"
    if error["type"] == "missing":
        return f"`{field}` is required"
    message = error["msg"].removeprefix("Value error, ")
    shown = json.dumps(error.get("input"), default=str)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"`{field}`: {message[0].lower()}{message[1:]} (got {shown})"


def parse_arguments(tool: str, model: type[BaseModel], arguments: dict[str, Any]) -> BaseModel:
    """``arguments`` as ``model`` exactly as sent, or a ToolError that names what is wrong."""
    allowed = list(model.model_fields)
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise ToolError(f"{tool} has no argument {names}; its arguments are: {', '.join(allowed)}")
    try:
        return model.model_validate(arguments, strict=True)
    except ValidationError as error:
        seen: dict[str, str] = {}
        for detail in error.errors(include_url=False):
            seen.setdefault(str(detail["loc"][0]) if detail["loc"] else "", _plain(detail))
        raise ToolError(f"invalid arguments for {tool}: {'; '.join(seen.values())}") from None


DEADLINE_META_KEY = "incident-response/deadline-seconds"  # the supervisor's McpToolProvider sends it


def caller_deadline(context: Any) -> float | None:
    """The seconds the caller will wait, from the request's ``_meta``, if it said (and said it sanely)."""
    meta = getattr(getattr(context, "request_context", None), "meta", None)
    value = meta.get(DEADLINE_META_KEY) if isinstance(meta, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 3600:
        return float(value)
    return None


class ContractTool(Tool):
    """A tool whose arguments are a contract model and whose answer is a contract response model; with an
    ``answer_log``, every answer (or error) it sends is recorded there."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    contract: type[BaseModel] = Field(exclude=True)
    response: type[BaseModel] = Field(exclude=True)
    answer_log: AnswerLog | None = Field(default=None, exclude=True)

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            result = await self._answer(arguments, context)
        except Exception as error:
            if self.answer_log is not None:
                self.answer_log.record(self.name, arguments, incident_of(context), error=str(error))
            raise
        if not convert_result:
            return result
        if not isinstance(result, self.response):  # an instance is valid already: no second validation
            mismatch = TypeError(f"answered {type(result).__name__}, not {self.response.__name__}")
            raise UnexpectedToolError(f"Error executing tool {self.name}") from mismatch
        sent = _as_call_result(result)
        if self.answer_log is not None:
            self.answer_log.record(self.name, arguments, incident_of(context), answer=sent.structured_content)
        return sent

    async def _answer(self, arguments: dict[str, Any], context: Any) -> Any:
        args = parse_arguments(self.name, self.contract, arguments)
        try:
            return await self.fn(args, caller_deadline(context))
        except MCPError:
            raise
        except ToolError as error:
            raise ToolError(f"Error executing tool {self.name}: {error}") from error
        except Exception as error:  # a crash: its text stays in the server log
            raise UnexpectedToolError(f"Error executing tool {self.name}") from error


def answer_text(answer: BaseModel) -> str:
    """The answer's text copy, for hosts that read text: compact JSON. The SDK's own is indented, which more
    than doubles a large answer on the wire and in a model's context."""
    return answer.model_dump_json(by_alias=True)


def _as_call_result(answer: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=answer_text(answer))],
        structured_content=answer.model_dump(mode="json", by_alias=True),
    )


def contract_tool(
    tool: ToolDeclaration,
    handler: Callable[[Any, float | None], Awaitable[BaseModel]],
    answer_log: AnswerLog | None = None,
) -> ContractTool:
    hints = tool.hints
    return ContractTool(
        fn=handler,
        name=tool.name,
        title=tool.title,
        description=tool.description,
        parameters=published_schema(tool.arguments),
        fn_metadata=FuncMetadata(
            arg_model=_NoSignature, output_model=tool.response, output_schema=published_schema(tool.response)
        ),
        is_async=True,
        annotations=ToolAnnotations(
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
        ),
        contract=tool.arguments,
        response=tool.response,
        answer_log=answer_log,
    )
