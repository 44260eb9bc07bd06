"""The MCP server's published contract: tool names, argument models and response models.

Importable with pydantic alone (no mcp, boto3 or langchain), so the supervisor, the tests and
any other client can validate tool calls and answers without the server's dependencies.
Every model forbids unknown fields, so malformed or fabricated data fails validation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from mcp_server.lambda_names import (
    FUNCTION_ARN,
    FUNCTION_NAME,
    LAMBDA_NAME_PATTERN,
    function_name_of,
    validate_lambda_name,
)

__all__ = [
    "LAMBDA_NAME_PATTERN",
    "TOOL_ARG_SCHEMAS",
    "TOOL_DESCRIPTIONS",
    "TOOL_NAMES",
    "TOOL_RESPONSE_MODELS",
    "AttachedPolicy",
    "FilterPattern",
    "GetIAMStateArgs",
    "GetLambdaConfigArgs",
    "GetNetworkStateArgs",
    "GetRecentLogsArgs",
    "IAMStateResponse",
    "LambdaConfigResponse",
    "LambdaName",
    "LogEvent",
    "LogLimit",
    "LogMinutes",
    "LogsResponse",
    "NetworkAcl",
    "NetworkAclEntry",
    "NetworkStateResponse",
    "PermissionsBoundary",
    "PolicyDocument",
    "SecurityGroup",
    "SecurityGroupRule",
    "Subnet",
    "ToolName",
    "VpcConfig",
    "function_name_of",
    "validate_lambda_name",
]

# --------------------------------------------------------------------------- tool names

ToolName = Literal["get_recent_logs", "get_iam_state", "get_lambda_config", "get_network_state"]
TOOL_NAMES: Final[tuple[ToolName, ...]] = (
    "get_recent_logs",
    "get_iam_state",
    "get_lambda_config",
    "get_network_state",
)

# --------------------------------------------------------------------------- lambda_name

# The same language for JSON Schema (ECMA-262) clients: anchored, no Python-only named groups.
_JSON_SCHEMA_PATTERN: Final[str] = f"^(?:{FUNCTION_NAME}|{FUNCTION_ARN.replace('?P<arn_name>', '?:')})$"


LambdaName = Annotated[
    str,
    AfterValidator(validate_lambda_name),
    Field(
        description=(
            "The Lambda function to inspect: its name, e.g. 'data-processor', or its full function ARN, "
            "e.g. 'arn:aws:lambda:ca-central-1:123456789012:function:data-processor' "
            "(an optional ':<version or alias>' qualifier is allowed)."
        ),
        json_schema_extra={"pattern": _JSON_SCHEMA_PATTERN},
    ),
]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("filter_pattern must not contain NUL characters")
    return value


# --------------------------------------------------------------------------- arguments

# Field definitions shared by the argument models and the server's tool signatures.
LogMinutes = Annotated[
    int,
    Field(
        ge=1,
        le=1440,
        description="How far back to search, in minutes, ending now (1-1440, default 30). "
        "Widen the window if the failure may have started earlier.",
    ),
]
LogLimit = Annotated[
    int, Field(ge=1, le=1000, description="Maximum number of log events to return (1-1000, default 100).")
]
FilterPattern = Annotated[
    Annotated[str, Field(max_length=1024), AfterValidator(_no_nul)] | None,
    Field(
        description="Optional CloudWatch Logs filter pattern to keep only matching events, e.g. 'ERROR' or "
        "'?AccessDenied ?Timeout' (at most 1024 characters). Omit it to get every event in the window.",
    ),
]


class _ContractModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetRecentLogsArgs(_ContractModel):
    """Arguments of ``get_recent_logs``: recent CloudWatch log events of the function."""

    lambda_name: LambdaName
    minutes: LogMinutes = 30
    limit: LogLimit = 100
    filter_pattern: FilterPattern = None


class GetIAMStateArgs(_ContractModel):
    """Arguments of ``get_iam_state``: the execution role of the function and its policies."""

    lambda_name: LambdaName


class GetLambdaConfigArgs(_ContractModel):
    """Arguments of ``get_lambda_config``: the function's configuration and reserved concurrency."""

    lambda_name: LambdaName


class GetNetworkStateArgs(_ContractModel):
    """Arguments of ``get_network_state``: the function's VPC, security groups, subnets and network ACLs."""

    lambda_name: LambdaName


# Written for an LLM choosing a tool; the MCP server publishes them and the supervisor binds them.
TOOL_DESCRIPTIONS: Final[dict[ToolName, str]] = {
    "get_recent_logs": (
        "Recent CloudWatch log events of a Lambda function, oldest first. Start here for an unknown "
        "failure. The answer is bounded: when more events matched than fit, error lines (ERROR, exceptions, "
        "AccessDenied, timeouts, throttles) are kept first and the counts of matched and dropped events say "
        "what was left out. A missing log group is reported in `note`, not as an error."
    ),
    "get_iam_state": (
        "The function's execution role: its inline policy documents, attached managed policies with "
        "their default-version documents, and any permissions boundary. Use it for AccessDenied errors or "
        "missing logs (a role that cannot write logs leaves none)."
    ),
    "get_lambda_config": (
        "The function's configuration: runtime, handler, role, memory, timeout, state and its reason, "
        "last update status, VPC attachment and reserved concurrency (0 means every invocation is "
        "throttled). Use it for throttling, timeouts or deployment problems."
    ),
    "get_network_state": (
        "For a function in a VPC: its security groups with ingress and egress rules, its subnets' "
        "network ACL entries, and whether HTTPS egress (needed to reach AWS APIs) is allowed. Use it for "
        "timeouts. For a function outside a VPC it says so."
    ),
}

TOOL_ARG_SCHEMAS: Final[dict[str, type[BaseModel]]] = {
    "get_recent_logs": GetRecentLogsArgs,
    "get_iam_state": GetIAMStateArgs,
    "get_lambda_config": GetLambdaConfigArgs,
    "get_network_state": GetNetworkStateArgs,
}

# --------------------------------------------------------------------------- responses: logs


def _iso8601(value: str) -> str:
    datetime.fromisoformat(value)  # raises ValueError when the string is not ISO-8601
    return value


class LogEvent(_ContractModel):
    """One CloudWatch log event."""

    timestamp: Annotated[str, AfterValidator(_iso8601)] = Field(description="ISO-8601 event time.")
    message: str
    log_stream: str | None = None


class LogsResponse(_ContractModel):
    """Answer of ``get_recent_logs``."""

    log_group: str
    events: list[LogEvent]
    error: str | None = None
    window_start: str | None = Field(default=None, description="ISO-8601 start of the searched window.")
    window_end: str | None = Field(default=None, description="ISO-8601 end of the searched window.")
    filter_pattern: str | None = None
    matched_events: int = Field(default=0, ge=0, description="Events that matched in the window.")
    returned_events: int = Field(default=0, ge=0, description="Events included in `events`.")
    dropped_events: int = Field(default=0, ge=0, description="Matched events not returned (limit, byte cap).")
    truncated_messages: int = Field(
        default=0,
        ge=0,
        description="Messages cut to the per-message cap (each ends with a truncation marker).",
    )
    byte_cap: int | None = Field(default=None, ge=0, description="Byte budget applied to the messages.")
    note: str | None = Field(
        default=None,
        description="Explanation of an empty or partial answer, e.g. 'log group does not exist: the function "
        "was never invoked or its role cannot write logs'.",
    )


# --------------------------------------------------------------------------- responses: IAM

PolicyDocument = dict[str, Any]


class AttachedPolicy(_ContractModel):
    """A managed policy attached to the role, with its default version's document when readable."""

    policy_name: str
    policy_arn: str
    default_version_id: str | None = None
    document: PolicyDocument | None = None


class PermissionsBoundary(_ContractModel):
    """The role's permissions boundary."""

    type: str | None
    arn: str


class IAMStateResponse(_ContractModel):
    """Answer of ``get_iam_state``."""

    role_name: str
    role_arn: str | None = None
    inline_policies: dict[str, PolicyDocument] = Field(description="Policy name -> decoded policy document.")
    attached_policies: list[AttachedPolicy]
    permissions_boundary: PermissionsBoundary | None = None
    error: str | None = None


# --------------------------------------------------------------------------- responses: Lambda config


class VpcConfig(_ContractModel):
    """The function's VPC attachment, in Lambda's own casing."""

    SubnetIds: list[str] = Field(default_factory=list)
    SecurityGroupIds: list[str] = Field(default_factory=list)
    VpcId: str | None = None


_VpcConfig = VpcConfig  # the field below is also named VpcConfig and would shadow the class


class LambdaConfigResponse(_ContractModel):
    """Answer of ``get_lambda_config``, in Lambda's own field casing."""

    FunctionName: str
    FunctionArn: str | None = None
    Runtime: str | None = None
    Handler: str | None = None
    Role: str | None = None
    MemorySize: int | None = None
    Timeout: int | None = None
    State: str | None = None
    StateReason: str | None = None
    StateReasonCode: str | None = None
    LastModified: str | None = None
    LastUpdateStatus: str | None = None
    ReservedConcurrentExecutions: int | None = Field(
        default=None, ge=0, description="Reserved concurrency; None when none is configured (0 = throttled)."
    )
    VpcConfig: _VpcConfig | None = None
    error: str | None = None


# --------------------------------------------------------------------------- responses: network


class SecurityGroupRule(_ContractModel):
    """One ingress or egress rule of a security group."""

    ip_protocol: str = Field(description="'tcp', 'udp', 'icmp', ... or '-1' for all protocols.")
    from_port: int | None
    to_port: int | None
    ipv4_ranges: list[str] = Field(default_factory=list)
    ipv6_ranges: list[str] = Field(default_factory=list)
    prefix_list_ids: list[str] = Field(default_factory=list)
    referenced_group_ids: list[str] = Field(default_factory=list)


class SecurityGroup(_ContractModel):
    """A security group attached to the function."""

    group_id: str
    group_name: str
    vpc_id: str | None
    ingress: list[SecurityGroupRule]
    egress: list[SecurityGroupRule]


class NetworkAclEntry(_ContractModel):
    """One network ACL rule; rules are evaluated in ascending ``rule_number`` order."""

    rule_number: int = Field(ge=1, le=32767)
    protocol: str = Field(description="IANA protocol number as a string, or '-1' for all protocols.")
    rule_action: Literal["allow", "deny"]
    egress: bool
    cidr_block: str | None
    ipv6_cidr_block: str | None = None
    port_from: int | None = None
    port_to: int | None = None


class NetworkAcl(_ContractModel):
    """The network ACL associated with a subnet."""

    network_acl_id: str
    entries: list[NetworkAclEntry]


class Subnet(_ContractModel):
    """A subnet the function is attached to."""

    subnet_id: str
    vpc_id: str
    cidr_block: str | None
    availability_zone: str | None
    network_acl: NetworkAcl | None


class NetworkStateResponse(_ContractModel):
    """Answer of ``get_network_state``."""

    function_name: str
    in_vpc: bool
    vpc_id: str | None = None
    security_groups: list[SecurityGroup] = Field(default_factory=list)
    subnets: list[Subnet] = Field(default_factory=list)
    https_egress_allowed: bool | None = Field(
        default=None,
        description="Whether outbound HTTPS (TCP 443) is allowed by a security-group egress rule and by the "
        "subnets' network ACL egress entries (computed by the server); None outside a VPC.",
    )
    note: str | None = None
    error: str | None = None


TOOL_RESPONSE_MODELS: Final[dict[str, type[BaseModel]]] = {
    "get_recent_logs": LogsResponse,
    "get_iam_state": IAMStateResponse,
    "get_lambda_config": LambdaConfigResponse,
    "get_network_state": NetworkStateResponse,
}
