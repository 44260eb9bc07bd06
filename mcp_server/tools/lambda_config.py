"""``get_lambda_config``: the function's configuration and reserved concurrency; also the
GetFunctionConfiguration call that the IAM and network tools start from."""

from __future__ import annotations

from typing import Any

from mcp_server.contract import GetLambdaConfigArgs, LambdaConfigResponse, VpcConfig
from mcp_server.errors import aws_errors

# Contract fields filled from GetFunctionConfiguration under the same name.
_COPIED_FIELDS = tuple(
    name
    for name in LambdaConfigResponse.model_fields
    if name not in {"ReservedConcurrentExecutions", "VpcConfig", "error"}
)


def function_configuration(lambda_client: Any, lambda_name: str, *, region: str | None) -> dict[str, Any]:
    """GetFunctionConfiguration of ``lambda_name`` (a name or an ARN)."""
    with aws_errors(f"function {lambda_name}", region):
        config: dict[str, Any] = lambda_client.get_function_configuration(FunctionName=lambda_name)
    return config


def lambda_config(
    lambda_client: Any, args: GetLambdaConfigArgs, *, region: str | None
) -> LambdaConfigResponse:
    """The function's configuration, its VPC attachment and its reserved concurrency (None when unset)."""
    config = function_configuration(lambda_client, args.lambda_name, region=region)
    with aws_errors(f"reserved concurrency of function {args.lambda_name}", region):
        concurrency = lambda_client.get_function_concurrency(FunctionName=args.lambda_name)
    vpc = config.get("VpcConfig") or {}
    attached = bool(vpc.get("SubnetIds") or vpc.get("SecurityGroupIds"))
    return LambdaConfigResponse(
        **{name: config[name] for name in _COPIED_FIELDS if name in config},
        ReservedConcurrentExecutions=concurrency.get("ReservedConcurrentExecutions"),
        VpcConfig=VpcConfig(
            SubnetIds=vpc.get("SubnetIds") or [],
            SecurityGroupIds=vpc.get("SecurityGroupIds") or [],
            VpcId=vpc.get("VpcId") or None,
        )
        if attached
        else None,
    )
