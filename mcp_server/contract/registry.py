"""Every diagnostic tool, found in the contract's family modules: each module declares its tools as
``ToolDeclaration`` values, and everything else (the server, the supervisor, the permission sources, the
docs, the benchmark) reads them from here. Adding a tool touches its family module and its function.

``SERVED_TOOLS`` is everything the server publishes (and needs permissions for); ``TOOLS`` the function
tools among them offered to the agent, which take ``lambda_name``: what the supervisor's agent binds, its
prompt names, its evidence may cite and the benchmark records. ``get_incident_history`` is served but not
offered: a past incident is no evidence of the current failure. A source tool (``get_source_consumers``)
answers the pipeline, and any MCP host, which functions a queue or topic is tied to; the agent investigates
one function and is not offered it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

import mcp_server.contract as contract_package
from mcp_server.contract.declaration import ToolDeclaration
from mcp_server.contract.discovery import declarations


def _discover() -> Mapping[str, ToolDeclaration]:
    found = declarations(contract_package, ToolDeclaration, lambda tool: tool.name)
    ordered = sorted(found.values(), key=lambda tool: (tool.order, tool.name))
    return MappingProxyType({tool.name: tool for tool in ordered})


SERVED_TOOLS: Final[Mapping[str, ToolDeclaration]] = _discover()
TOOLS: Final[Mapping[str, ToolDeclaration]] = MappingProxyType(
    {name: tool for name, tool in SERVED_TOOLS.items() if tool.about_function and tool.offered_to_agent}
)
TOOL_NAMES: Final[tuple[str, ...]] = tuple(TOOLS)
# What a run's answers can come from, and a diagnosis cite: the tools offered, and the function's history,
# which the supervisor's graph reads itself before the model's first turn.
RUN_TOOLS: Final[Mapping[str, ToolDeclaration]] = MappingProxyType(
    {name: tool for name, tool in SERVED_TOOLS.items() if tool.about_function}
)

if TYPE_CHECKING:
    ToolName = str
else:
    ToolName = Literal[tuple(RUN_TOOLS)]  # the names as a type: a cited tool is checked against it
