"""The AWS operations the MCP server may call: the single source for the client-side
read-only allowlist, "Required IAM permissions" in docs/tools.md and every IAM policy we write."""

from __future__ import annotations

from mcp_server.contract.declaration import Operation
from mcp_server.contract.registry import SERVED_TOOLS

# (botocore service name, operation name); the IAM action is "<service>:<operation>" (but see iam_action).
# The tools' reads are each tool's own declaration.
READ_OPERATIONS: tuple[Operation, ...] = tuple(
    dict.fromkeys(op for tool in SERVED_TOOLS.values() for op in tool.reads)
)

# Called once at startup, only when MCP_API_KEY is unset.
STARTUP_OPERATIONS: tuple[Operation, ...] = (("ssm", "GetParameter"),)

# Reading another account: only the roles named in MCP_ACCOUNTS, and only when it is set.
ASSUME_OPERATIONS: tuple[Operation, ...] = (("sts", "AssumeRole"),)

# Needs no IAM permission: which account the server is in (to honour function ARNs).
IDENTITY_OPERATIONS: tuple[Operation, ...] = (("sts", "GetCallerIdentity"),)

ALLOWED_OPERATIONS: frozenset[Operation] = frozenset(
    READ_OPERATIONS + STARTUP_OPERATIONS + ASSUME_OPERATIONS + IDENTITY_OPERATIONS
)


# Services whose IAM actions are not named after their operations. API Gateway's management API is
# authorized by HTTP method, and every read is a GET
# (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-control-access-using-iam-policies-to-create-and-manage-api.html).
_ACTION_BY_SERVICE = {"apigateway": "apigateway:GET", "apigatewayv2": "apigateway:GET"}


def iam_action(service: str, operation: str) -> str:
    """The IAM action that authorizes one of the server's reads."""
    return _ACTION_BY_SERVICE.get(service, f"{service}:{operation}")


def iam_actions(*groups: tuple[Operation, ...]) -> list[str]:
    """The IAM actions of some groups of operations, sorted, each once."""
    return sorted({iam_action(service, operation) for group in groups for service, operation in group})


def required_iam_actions() -> list[str]:
    """Every IAM action the MCP server's identity needs, sorted."""
    return iam_actions(READ_OPERATIONS, STARTUP_OPERATIONS, ASSUME_OPERATIONS)
