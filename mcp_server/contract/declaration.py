"""A diagnostic tool, declared once: what the server publishes, what the supervisor binds, which AWS reads
it needs (the allowlist and every IAM policy), what the docs list and what the benchmark records.

The function that answers is named by its import path, not imported: the contract stays importable with
pydantic alone, so clients can validate calls and answers without the server's dependencies.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from pydantic import BaseModel

from mcp_server.contract.common import SourceArguments, TargetArguments

Operation = tuple[
    str, str
]  # (botocore service name, operation name); the IAM action is "<service>:<operation>"

# A tool only reads: each operation it declares must be named as a read. The client-side allowlist, built
# from these declarations, refuses every other call.
_READ_OPERATION: Final = re.compile(r"(Get|List|Describe|Lookup|Filter)[A-Z]\w*|Query")  # Query: DynamoDB's
_TOOL_NAME: Final = re.compile(r"[a-z][a-z0-9_]{2,63}")
_REFERENCE: Final = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


class DeclarationError(ValueError):
    """A tool declaration that cannot be served as it stands."""


@dataclass(frozen=True)
class ToolHints:
    """The MCP tool annotations every client sees. A diagnostic tool reads and changes nothing."""

    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = True  # it reads an AWS account, a world outside the server


@dataclass(frozen=True)
class ToolDeclaration:
    name: str
    title: str
    description: str  # written for an LLM choosing a tool: the server publishes it, the supervisor binds it
    # A function tool takes ``lambda_name``; a source tool takes ``source`` (a queue or a topic) instead.
    arguments: type[TargetArguments] | type[SourceArguments]
    response: type[BaseModel]
    implementation: str  # "module:function", called as function(ToolContext, arguments) -> response
    reads: tuple[Operation, ...]
    order: int  # its place in every listing: the server's tools, the model's specs, the docs
    # Argument sets the benchmark records for every case, besides lambda_name; the first is the default call.
    benchmark_arguments: tuple[Mapping[str, Any], ...] = ({},)
    hints: ToolHints = field(default_factory=ToolHints)
    # Whether the supervisor's model is offered it (a function tool only); False: the graph reads it itself.
    offered_to_agent: bool = True

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise DeclarationError(f"tool {self.name!r}: {'; '.join(problems)}")
        frozen = tuple(MappingProxyType(dict(arguments)) for arguments in self.benchmark_arguments)
        object.__setattr__(self, "benchmark_arguments", frozen)

    @property
    def about_function(self) -> bool:
        """Whether it reads one function (what the supervisor's agent binds and the benchmark records)."""
        return issubclass(self.arguments, TargetArguments)

    def function(self) -> Callable[[Any, Any], BaseModel]:
        """The implementation, imported now (the server calls this once, when it builds its tools)."""
        module, _, name = self.implementation.partition(":")
        function: Callable[[Any, Any], BaseModel] = getattr(importlib.import_module(module), name)
        return function


def _problems(tool: ToolDeclaration) -> list[str]:
    problems = []
    if not _TOOL_NAME.fullmatch(tool.name):
        problems.append(f"name {tool.name!r} is not snake_case")
    if not (tool.title and tool.description):
        problems.append("the title and the description must not be empty")
    if not _REFERENCE.fullmatch(tool.implementation):
        problems.append(f"implementation {tool.implementation!r} is not 'module:function'")
    if not tool.reads:
        problems.append("it declares no AWS read")
    problems += [f"{s}:{op} is not a read" for s, op in tool.reads if not _READ_OPERATION.fullmatch(op)]
    if not tool.hints.read_only or tool.hints.destructive:
        problems.append("a diagnostic tool must be read-only and not destructive")
    if not tool.benchmark_arguments:
        problems.append("benchmark_arguments needs at least the default call")
    return problems
