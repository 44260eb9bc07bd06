"""What the executor may do, declared once: the deploy template's role and the sandbox's identity are built
from it. Writes are the allowlisted operations (``supervisor.remediation.operations``), each its own IAM
action, on the watched functions' own resources only; reads are the operations' fresh reads."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from supervisor.remediation.operations import OPERATIONS, READ_ACTIONS

WRITE_ACTIONS: Final[tuple[str, ...]] = tuple(sorted({operation.action for operation in OPERATIONS}))
PLAN_READ_ACTIONS: Final[tuple[str, ...]] = READ_ACTIONS
MAPPING_ACTIONS: Final[frozenset[str]] = frozenset({"lambda:UpdateEventSourceMapping"})
TABLE_ACTIONS: Final[tuple[str, ...]] = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",  # an automatic approval, when a risk may apply without a person
    "dynamodb:UpdateItem",
)
PARAMETER_ACTIONS: Final[tuple[str, ...]] = ("ssm:GetParameter",)  # the MCP key, to verify recovery
WATCHED_TAG: Final[str] = "incident-response:watched"  # on a watched function's VPC resources and keys
QUEUE_ACTIONS: Final[tuple[str, ...]] = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")


def write_statements(
    function_arns: Iterable[str], role_arns: Iterable[str], *, conditions: bool = True
) -> list[dict[str, Any]]:
    """The writes, each family on its own resources: a function's operations on the watched functions (any
    version or alias), the role-policy operations on their roles; with ``conditions``, a mapping's on the
    mappings of those functions (``lambda:FunctionArn``) and the network and key operations on resources
    tagged ``WATCHED_TAG``. Without (the sandbox, whose emulator evaluates no condition key), those two
    families are on every mapping and on ``*`` (docs/limitations.md)."""
    functions = sorted(function_arns)
    by_prefix: dict[str, list[str]] = {}
    for action in WRITE_ACTIONS:
        if action not in MAPPING_ACTIONS:
            by_prefix.setdefault(action.split(":")[0], []).append(action)
    function_resources = functions + [f"{arn}:*" for arn in functions]
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Action": by_prefix.pop("lambda"), "Resource": function_resources},
        {"Effect": "Allow", "Action": by_prefix.pop("iam"), "Resource": sorted(role_arns)},
        {
            "Effect": "Allow",
            "Action": sorted(MAPPING_ACTIONS),
            "Resource": "arn:aws:lambda:*:*:event-source-mapping:*",
        },
    ]
    statements += [{"Effect": "Allow", "Action": actions, "Resource": "*"} for actions in by_prefix.values()]
    if conditions:
        statements[2]["Condition"] = {"ArnLike": {"lambda:FunctionArn": function_resources}}
        for statement in statements[3:]:
            statement["Condition"] = {"StringEquals": {f"aws:ResourceTag/{WATCHED_TAG}": "true"}}
    return statements
