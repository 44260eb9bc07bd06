"""Every diagnostic tool, found in the contract's family modules: each module declares its tools as
``ToolDeclaration`` values, and everything else (the server, the supervisor, the permission sources, the
docs, the benchmark) reads them from here. Adding a tool touches its family module and nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

import mcp_server.contract as contract_package
from mcp_server.contract.declaration import DeclarationError, ToolDeclaration


def _discover() -> Mapping[str, ToolDeclaration]:
    found: dict[str, ToolDeclaration] = {}
    for module in pkgutil.iter_modules(contract_package.__path__):
        if module.name == __name__.rpartition(".")[2]:
            continue
        namespace = vars(importlib.import_module(f"{contract_package.__name__}.{module.name}"))
        for tool in (value for value in namespace.values() if isinstance(value, ToolDeclaration)):
            if found.setdefault(tool.name, tool) is not tool:
                raise DeclarationError(f"two tools are named {tool.name!r} (one in {module.name})")
    ordered = sorted(found.values(), key=lambda tool: (tool.order, tool.name))
    return MappingProxyType({tool.name: tool for tool in ordered})


TOOLS: Final[Mapping[str, ToolDeclaration]] = _discover()
TOOL_NAMES: Final[tuple[str, ...]] = tuple(TOOLS)

if TYPE_CHECKING:
    ToolName = str
else:
    ToolName = Literal[TOOL_NAMES]  # the names as a type: responses that cite a tool are checked against it
