"""Exact AWS CLI commands for remediation steps, in the function's region."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from supervisor.diagnosis.cli_commands import build_command
from supervisor.diagnosis.rules.conversation import Conversation


def command(c: Conversation, service: str, operation: str, params: Mapping[str, Any]) -> str:
    return build_command(service, operation, params, region=c.region)
