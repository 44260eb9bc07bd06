"""The AWS operations the diagnostic tools may call: the single source for the client-side
read-only allowlist, "Required IAM permissions" in docs/tools.md and every IAM policy we write."""

from __future__ import annotations

# (botocore service name, operation name); the IAM action is "<service>:<operation>".
READ_OPERATIONS: tuple[tuple[str, str], ...] = (
    ("logs", "FilterLogEvents"),
    ("cloudwatch", "GetMetricData"),
    ("cloudtrail", "LookupEvents"),
    ("iam", "GetRole"),
    ("iam", "ListRolePolicies"),
    ("iam", "GetRolePolicy"),
    ("iam", "ListAttachedRolePolicies"),
    ("iam", "GetPolicy"),
    ("iam", "GetPolicyVersion"),
    ("lambda", "GetFunctionConfiguration"),
    ("lambda", "GetFunctionConcurrency"),
    ("lambda", "GetFunctionEventInvokeConfig"),
    ("lambda", "GetAlias"),
    ("lambda", "ListVersionsByFunction"),
    ("lambda", "ListAliases"),
    ("lambda", "ListEventSourceMappings"),
    ("ec2", "DescribeSecurityGroups"),
    ("ec2", "DescribeSubnets"),
    ("ec2", "DescribeNetworkAcls"),
    ("ec2", "DescribeRouteTables"),
    ("ec2", "DescribeNatGateways"),
    ("ec2", "DescribeVpcEndpoints"),
    ("ec2", "DescribeManagedPrefixLists"),
    ("ec2", "GetManagedPrefixListEntries"),
)

# Called once at startup, only when MCP_API_KEY is unset.
STARTUP_OPERATIONS: tuple[tuple[str, str], ...] = (("ssm", "GetParameter"),)

# Reading another account: only the roles named in MCP_ACCOUNTS, and only when it is set.
ASSUME_OPERATIONS: tuple[tuple[str, str], ...] = (("sts", "AssumeRole"),)

# Needs no IAM permission: which account the server is in (to honour function ARNs).
IDENTITY_OPERATIONS: tuple[tuple[str, str], ...] = (("sts", "GetCallerIdentity"),)

ALLOWED_OPERATIONS: frozenset[tuple[str, str]] = frozenset(
    READ_OPERATIONS + STARTUP_OPERATIONS + ASSUME_OPERATIONS + IDENTITY_OPERATIONS
)


def iam_actions(*groups: tuple[tuple[str, str], ...]) -> list[str]:
    """The IAM actions of some groups of operations, sorted."""
    return sorted(f"{service}:{operation}" for group in groups for service, operation in group)


def required_iam_actions() -> list[str]:
    """Every IAM action the MCP server's identity needs, sorted."""
    return iam_actions(READ_OPERATIONS, STARTUP_OPERATIONS, ASSUME_OPERATIONS)
