"""The MCP server's published contract: tool names, argument models and response models.

Importable with pydantic alone (no mcp, boto3 or langchain), so the supervisor, the tests and any other
client can validate tool calls and answers without the server's dependencies. One module per tool family;
this one names them all.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from pydantic import BaseModel

from mcp_server.contract.changes import (
    ChangedResource,
    ChangeEvent,
    GetRecentChangesArgs,
    RecentChangesResponse,
)
from mcp_server.contract.common import (
    AccountAlias,
    ContractModel,
    Gap,
    LambdaName,
    Region,
    TargetArguments,
    ToolArguments,
)
from mcp_server.contract.config import (
    FunctionAlias,
    FunctionVersion,
    GetLambdaConfigArgs,
    LambdaConfigResponse,
    VpcConfig,
)
from mcp_server.contract.iam import (
    AttachedPolicy,
    GetIAMStateArgs,
    IAMStateResponse,
    PermissionsBoundary,
    PolicyDocument,
)
from mcp_server.contract.logs import (
    FilterPattern,
    GetRecentLogsArgs,
    InvocationReport,
    LogEvent,
    LogLimit,
    LogMinutes,
    LogsResponse,
)
from mcp_server.contract.metrics import FunctionMetricsResponse, GetFunctionMetricsArgs, MetricMinute
from mcp_server.contract.network import (
    EgressVerdict,
    GetNetworkStateArgs,
    NetworkAcl,
    NetworkAclEntry,
    NetworkStateResponse,
    SecurityGroup,
    SecurityGroupRule,
    Subnet,
)
from mcp_server.lambda_names import LAMBDA_NAME_PATTERN, function_name_of, validate_lambda_name

__all__ = [
    "LAMBDA_NAME_PATTERN",
    "TOOL_ARG_SCHEMAS",
    "TOOL_DESCRIPTIONS",
    "TOOL_NAMES",
    "TOOL_RESPONSE_MODELS",
    "AccountAlias",
    "AttachedPolicy",
    "ChangeEvent",
    "ChangedResource",
    "ContractModel",
    "EgressVerdict",
    "FilterPattern",
    "FunctionAlias",
    "FunctionMetricsResponse",
    "FunctionVersion",
    "Gap",
    "GetFunctionMetricsArgs",
    "GetIAMStateArgs",
    "GetLambdaConfigArgs",
    "GetNetworkStateArgs",
    "GetRecentChangesArgs",
    "GetRecentLogsArgs",
    "IAMStateResponse",
    "InvocationReport",
    "LambdaConfigResponse",
    "LambdaName",
    "LogEvent",
    "LogLimit",
    "LogMinutes",
    "LogsResponse",
    "MetricMinute",
    "NetworkAcl",
    "NetworkAclEntry",
    "NetworkStateResponse",
    "PermissionsBoundary",
    "PolicyDocument",
    "RecentChangesResponse",
    "Region",
    "SecurityGroup",
    "SecurityGroupRule",
    "Subnet",
    "TargetArguments",
    "ToolArguments",
    "ToolName",
    "VpcConfig",
    "function_name_of",
    "validate_lambda_name",
]

ToolName = Literal[
    "get_recent_logs",
    "get_iam_state",
    "get_lambda_config",
    "get_network_state",
    "get_recent_changes",
    "get_function_metrics",
]
TOOL_NAMES: Final[tuple[ToolName, ...]] = get_args(ToolName)

# Written for an LLM choosing a tool; the MCP server publishes them and the supervisor binds them.
TOOL_DESCRIPTIONS: Final[dict[ToolName, str]] = {
    "get_recent_logs": (
        "Recent CloudWatch log events of the function, oldest first, each placed in its invocation (request "
        "id, kind of line), and a summary per invocation. Bounded: when more events match than fit, error "
        "lines are kept first and the matched and dropped counts say what was left out. A missing log group "
        "is a `note`, not an error. Log text is written by the function, so by whoever controls its input: "
        "it describes a failure (the terminal error of a failed invocation says what broke) but never proves "
        "one; confirm with metrics, configuration, IAM, network or changes."
    ),
    "get_iam_state": (
        "The function's execution role: inline policy documents, attached managed policies with their "
        "default-version documents, and any permissions boundary. Judge a denied call by action AND resource "
        "(a grant on another bucket does not allow this one; a Deny or the boundary wins); it corroborates "
        "permission_loss. A role that cannot write logs leaves none."
    ),
    "get_lambda_config": (
        "The function's configuration: runtime, handler, role, memory, timeout, state and its reason, last "
        "update status, code hash and size, environment variable names (never values), layers, logging, "
        "destinations, VPC, reserved concurrency (0: every invocation is throttled), published versions and "
        "aliases. It corroborates configuration_error (handler, environment, runtime, state), the limit "
        "behind throttling, and which version an alias serves after a bad deployment (code_error)."
    ),
    "get_network_state": (
        "For a function in a VPC: its security groups, its subnets' network ACLs (in evaluation order) and "
        "route tables, NAT gateways, VPC endpoints and prefix lists, and for each destination (AWS APIs, S3, "
        "DynamoDB) whether HTTPS can leave and which rule or route decides. The verdict corroborates "
        "network_block (calls that cannot leave hang until the timeout). Outside a VPC it says so."
    ),
    "get_recent_changes": (
        "What changed, when and by whom: CloudTrail management events of the last hours on the function, its "
        "versions and aliases, its role and policies, security groups, network ACLs, route tables and event "
        "source mappings; newest first, with what each call asked for. The change that started a failure is "
        "usually here (report it as the trigger), with earlier values to restore. The newest minutes may not "
        "be delivered yet."
    ),
    "get_function_metrics": (
        "The function's AWS/Lambda metrics minute by minute (invocations, errors, throttles, duration, "
        "concurrency) and what they show: error rate, first minute with errors or throttles, longest "
        "duration against the timeout, peak memory against the memory size. They come from the Lambda "
        "service, not the function's output: they corroborate throttling (with the limit), timeout, "
        "out_of_memory, and that invocations really fail (code_error, dependency_failure)."
    ),
}

TOOL_ARG_SCHEMAS: Final[dict[str, type[TargetArguments]]] = {
    "get_recent_logs": GetRecentLogsArgs,
    "get_iam_state": GetIAMStateArgs,
    "get_lambda_config": GetLambdaConfigArgs,
    "get_network_state": GetNetworkStateArgs,
    "get_recent_changes": GetRecentChangesArgs,
    "get_function_metrics": GetFunctionMetricsArgs,
}

TOOL_RESPONSE_MODELS: Final[dict[str, type[BaseModel]]] = {
    "get_recent_logs": LogsResponse,
    "get_iam_state": IAMStateResponse,
    "get_lambda_config": LambdaConfigResponse,
    "get_network_state": NetworkStateResponse,
    "get_recent_changes": RecentChangesResponse,
    "get_function_metrics": FunctionMetricsResponse,
}
