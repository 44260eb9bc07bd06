"""The AWS actions the supervisor needs: its two tables and the MCP key parameter, nothing else."""

from __future__ import annotations

TABLE_ACTIONS: tuple[str, ...] = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
)
PARAMETER_ACTIONS: tuple[str, ...] = ("ssm:GetParameter",)
