"""The default names of the incident pipeline's AWS resources: the deploy template creates the tables and
topics under these names, the components' settings default to them, and the sandbox provisions them."""

from __future__ import annotations

from typing import Final

STATE_TABLE: Final = "incident-state"
CONTEXT_TABLE: Final = "incident-context"
ALERTS_TOPIC: Final = "incident-alerts"  # the workload's alarms notify it; the supervisor subscribes
DIAGNOSES_TOPIC: Final = "incident-diagnoses"  # the supervisor's notifications, one per incident outcome
MCP_KEY_PARAMETER: Final = "/incident-response/mcp-api-key"  # a SecureString the operator creates
