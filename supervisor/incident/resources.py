"""The default names of the incident pipeline's AWS resources: the deploy template creates the tables and
topics under these names, the components' settings default to them, and the sandbox provisions them. The
MCP server's key parameter is the server's own setting."""

from __future__ import annotations

from typing import Final

from mcp_server.settings import MCP_KEY_PARAMETER

__all__ = [
    "ALERTS_TOPIC",
    "APPROVALS_TABLE",
    "CONTEXT_TABLE",
    "DIAGNOSES_TOPIC",
    "MCP_KEY_PARAMETER",
    "RECHECK_QUEUE",
    "REMEDIATION_QUEUE",
    "STATE_TABLE",
]

STATE_TABLE: Final = "incident-state"
CONTEXT_TABLE: Final = "incident-context"
APPROVALS_TABLE: Final = (
    "incident-approvals"  # people's decisions on plans: only approvers and the executor write
)
ALERTS_TOPIC: Final = "incident-alerts"  # the workload's alarms notify it; the supervisor subscribes
DIAGNOSES_TOPIC: Final = "incident-diagnoses"  # the supervisor's notifications, one per incident outcome
RECHECK_QUEUE: Final = "incident-rechecks"  # re-checks of provisional diagnoses, delayed until their time
REMEDIATION_QUEUE: Final = "incident-remediations"  # the executor's requests (executor.handler)
