"""The MCP server's published contract: argument and response models, and each tool's declaration.

Importable with pydantic alone (no mcp, boto3 or langchain), so the supervisor, the tests and any other
client can validate tool calls and answers without the server's dependencies. One module per tool family
declares its tools; ``mcp_server.contract.registry`` finds them all. This package re-exports the models.
"""

from __future__ import annotations

from mcp_server.contract.changes import (
    ChangedResource,
    ChangeEvent,
    ChangeEventDetail,
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
    ErrorDetail,
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
    "AccountAlias",
    "AttachedPolicy",
    "ChangeEvent",
    "ChangeEventDetail",
    "ChangedResource",
    "ContractModel",
    "EgressVerdict",
    "ErrorDetail",
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
    "VpcConfig",
    "function_name_of",
    "validate_lambda_name",
]
