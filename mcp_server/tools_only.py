"""An MCPServer that advertises tools and nothing else.

MCPServer registers handlers for prompts, resources and completions whether or not any exist, so
``initialize`` advertises empty ``prompts`` and ``resources`` capabilities and ``prompts/get`` fails with an
internal error. Without those handlers the server advertises ``tools`` alone and answers the others with
JSON-RPC "method not found" (-32601), as the protocol expects of a method it does not serve.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

UNSERVED_METHODS = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
)


class ToolsOnlyServer(MCPServer[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # mcp 2.3 has no public way to unregister a handler (tests/test_mcp_protocol.py notices a change).
        for method in UNSERVED_METHODS:
            self._lowlevel_server._request_handlers.pop(method, None)
