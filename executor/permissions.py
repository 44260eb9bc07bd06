"""What the executor may do, declared once: the deploy template's role and the sandbox's identity are built
from it. Writes are the allowlisted operations (``supervisor.remediation.operations``), each its own IAM
action, on the watched functions' own resources only; reads are the operations' fresh reads."""

from __future__ import annotations

from typing import Any, Final

from supervisor.remediation.operations import OPERATIONS, READ_ACTIONS

WRITE_ACTIONS: Final[tuple[str, ...]] = tuple(sorted({operation.action for operation in OPERATIONS}))
PLAN_READ_ACTIONS: Final[tuple[str, ...]] = READ_ACTIONS
# A mapping's operations: authorized on the mapping's ARN, a creation on "*", each scoped to the mapping's
# function by the lambda:FunctionArn condition
# (https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html).
MAPPING_ACTIONS: Final[frozenset[str]] = frozenset(
    {"lambda:CreateEventSourceMapping", "lambda:DeleteEventSourceMapping", "lambda:UpdateEventSourceMapping"}
)
TABLE_ACTIONS: Final[tuple[str, ...]] = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",  # an automatic approval, when a risk may apply without a person
    "dynamodb:UpdateItem",
)
PARAMETER_ACTIONS: Final[tuple[str, ...]] = ("ssm:GetParameter",)  # the MCP key, to verify recovery
WATCHED_TAG: Final[str] = "incident-response:watched"  # on a watched function's VPC resources and keys
QUEUE_ACTIONS: Final[tuple[str, ...]] = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
TOPIC_ACTIONS: Final[tuple[str, ...]] = ("sns:Publish",)  # each end's notice, on the diagnoses topic only


def write_statements(
    functions: list[Any], roles: list[Any], *, conditions: bool = True
) -> list[dict[str, Any]]:
    """The writes, each family on its own resources: a function's operations on ``functions`` (the watched
    functions' ARNs, and each with ``:*`` for its versions and aliases), the role-policy operations on
    ``roles``; with ``conditions``, a mapping's on the mappings of those functions (``lambda:FunctionArn``)
    and the network and key operations on resources tagged ``WATCHED_TAG``. Without (the sandbox, whose
    emulator evaluates no condition key), those two families are on ``*``
    (docs/limitations.md). Resources are strings, or CloudFormation expressions in the deploy template."""
    by_prefix: dict[str, list[str]] = {}
    for action in WRITE_ACTIONS:
        if action not in MAPPING_ACTIONS:
            by_prefix.setdefault(action.split(":")[0], []).append(action)
    statements: list[dict[str, Any]] = [
        {
            "Sid": "WatchedFunctions",
            "Effect": "Allow",
            "Action": by_prefix.pop("lambda"),
            "Resource": functions,
        },
        {"Sid": "WatchedRoles", "Effect": "Allow", "Action": by_prefix.pop("iam"), "Resource": roles},
        {
            "Sid": "WatchedMappings",
            "Effect": "Allow",
            "Action": sorted(MAPPING_ACTIONS),
            "Resource": "*",
        },
    ]
    sids = {"ec2": "WatchedNetwork", "kms": "WatchedKeys"}
    statements += [
        {"Sid": sids[prefix], "Effect": "Allow", "Action": actions, "Resource": "*"}
        for prefix, actions in by_prefix.items()
    ]
    if conditions:
        statements[2]["Condition"] = {"ArnLike": {"lambda:FunctionArn": functions}}
        for statement in statements[3:]:
            statement["Condition"] = {"StringEquals": {f"aws:ResourceTag/{WATCHED_TAG}": "true"}}
    return statements
