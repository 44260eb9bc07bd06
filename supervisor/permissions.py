"""The AWS actions the supervisor needs: its two tables, the MCP key parameter and the diagnoses topic,
nothing else."""

from __future__ import annotations

TABLE_ACTIONS: tuple[str, ...] = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
)
PARAMETER_ACTIONS: tuple[str, ...] = ("ssm:GetParameter",)
NOTIFY_ACTIONS: tuple[str, ...] = ("sns:Publish",)  # one message per incident outcome
