"""The AWS actions the supervisor needs: its two tables, the MCP key parameter, the diagnoses topic, the
re-check queue, the reads a remediation plan's preconditions take and sending to the executor's queue,
nothing else: it never writes to a watched function's resources."""

from __future__ import annotations

from supervisor.remediation.operations import READ_ACTIONS

TABLE_ACTIONS: tuple[str, ...] = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:Query",
)
PARAMETER_ACTIONS: tuple[str, ...] = ("ssm:GetParameter",)
NOTIFY_ACTIONS: tuple[str, ...] = ("sns:Publish",)  # one message per incident outcome
RECHECK_ACTIONS: tuple[str, ...] = ("sqs:SendMessage",)  # a provisional diagnosis's delayed re-check
# What Lambda's event source mapping does with the function's role to deliver the re-checks to it.
RECHECK_POLL_ACTIONS: tuple[str, ...] = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
PLAN_READ_ACTIONS: tuple[str, ...] = READ_ACTIONS  # each allowlisted operation's fresh read (read-only)
REMEDIATION_ACTIONS: tuple[str, ...] = ("sqs:SendMessage",)  # a plan handed to the executor's queue
