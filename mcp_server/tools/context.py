"""What a tool function gets besides its arguments: its target's clients, its reads (deadline and gaps)
and the server's settings."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_server.aws import TargetClients
from mcp_server.reads import Reads
from mcp_server.settings import ServerSettings
from mcp_server.targets import Target


@dataclass(frozen=True)
class ToolContext:
    clients: TargetClients
    reads: Reads
    settings: ServerSettings

    @property
    def target(self) -> Target:
        return self.clients.target
