"""The AWS operations the diagnostic tools may call: the single source for the client-side
read-only allowlist, the README's "Required IAM permissions" and every IAM policy we write."""

from __future__ import annotations

# (botocore service name, operation name); the IAM action is "<service>:<operation>".
READ_OPERATIONS: tuple[tuple[str, str], ...] = (
    ("logs", "FilterLogEvents"),
    ("cloudwatch", "GetMetricData"),
    ("iam", "GetRole"),
    ("iam", "ListRolePolicies"),
    ("iam", "GetRolePolicy"),
    ("iam", "ListAttachedRolePolicies"),
    ("iam", "GetPolicy"),
    ("iam", "GetPolicyVersion"),
    ("lambda", "GetFunctionConfiguration"),
    ("lambda", "GetFunctionConcurrency"),
    ("ec2", "DescribeSecurityGroups"),
    ("ec2", "DescribeSubnets"),
    ("ec2", "DescribeNetworkAcls"),
    ("cloudtrail", "LookupEvents"),
)

# Called once at startup, only when MCP_API_KEY is unset.
STARTUP_OPERATIONS: tuple[tuple[str, str], ...] = (("ssm", "GetParameter"),)


def required_iam_actions() -> list[str]:
    """Every IAM action the MCP server's identity needs, sorted."""
    return sorted(f"{service}:{operation}" for service, operation in READ_OPERATIONS + STARTUP_OPERATIONS)
