"""``get_lambda_config``: the function's configuration, concurrency, destinations, versions and aliases;
also the GetFunctionConfiguration read that the other tools start from."""

from __future__ import annotations

from itertools import islice
from typing import Any

from mcp_server.contract import (
    FunctionAlias,
    FunctionVersion,
    GetLambdaConfigArgs,
    LambdaConfigResponse,
    VpcConfig,
)
from mcp_server.contract.config import EnvironmentKey, Layer, LoggingConfig
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext

MAX_VERSIONS = 20
VERSIONS_PAGE = 50  # ListVersionsByFunction's largest page
# Contract fields filled from GetFunctionConfiguration under the same name.
_COPIED = (
    "FunctionName",
    "FunctionArn",
    "Version",
    "Runtime",
    "Handler",
    "Role",
    "MemorySize",
    "Timeout",
    "State",
    "StateReason",
    "StateReasonCode",
    "LastModified",
    "LastUpdateStatus",
    "PackageType",
    "CodeSha256",
    "CodeSize",
    "KMSKeyArn",
)


def function_read(ctx: ToolContext) -> Read:
    target = ctx.target
    params = {"FunctionName": target.function_name} | (
        {"Qualifier": target.qualifier} if target.qualifier else {}
    )
    return Read(
        "lambda:GetFunctionConfiguration",
        f"function {target.function} ({target.account})",
        lambda: ctx.clients.lambda_.get_function_configuration(**params),
        "the function's configuration, role and network attachment are unknown",
    )


def function_configuration(ctx: ToolContext) -> dict[str, Any]:
    """GetFunctionConfiguration of the target; a function that cannot be read fails the tool."""
    config: dict[str, Any] = ctx.reads.required(function_read(ctx))
    return config


def log_group(config: dict[str, Any], function_name: str) -> str:
    """The log group the function writes to: its ``LoggingConfig``'s, else Lambda's default."""
    return str((config.get("LoggingConfig") or {}).get("LogGroup") or f"/aws/lambda/{function_name}")


def _versions(lambda_client: Any, name: str) -> list[FunctionVersion]:
    """The newest published versions, read page by page (``Marker``) until the cap."""
    pages = lambda_client.get_paginator("list_versions_by_function").paginate(
        FunctionName=name, PaginationConfig={"PageSize": VERSIONS_PAGE}
    )
    listed = [v for page in pages for v in page.get("Versions", [])]
    published = sorted((v for v in listed if v["Version"] != "$LATEST"), key=lambda v: -int(v["Version"]))
    latest = [v for v in listed if v["Version"] == "$LATEST"]
    return [
        FunctionVersion(
            Version=v["Version"],
            CodeSha256=v.get("CodeSha256"),
            Description=v.get("Description") or None,
            LastModified=v.get("LastModified"),
        )
        for v in islice([*latest, *published], MAX_VERSIONS)
    ]


def _aliases(lambda_client: Any, name: str) -> list[FunctionAlias]:
    pages = lambda_client.get_paginator("list_aliases").paginate(FunctionName=name)
    return [
        FunctionAlias(
            Name=a["Name"],
            FunctionVersion=a["FunctionVersion"],
            AdditionalVersionWeights=(a.get("RoutingConfig") or {}).get("AdditionalVersionWeights") or {},
            Description=a.get("Description") or None,
        )
        for page in pages
        for a in page.get("Aliases", [])
    ]


def event_invoke_config(ctx: ToolContext) -> dict[str, Any] | None:
    """GetFunctionEventInvokeConfig; a function without one answers ResourceNotFoundException."""
    target = ctx.target
    params = {"FunctionName": target.function_name} | (
        {"Qualifier": target.qualifier} if target.qualifier else {}
    )
    try:
        config: dict[str, Any] = ctx.clients.lambda_.get_function_event_invoke_config(**params)
    except ctx.clients.lambda_.exceptions.ResourceNotFoundException:
        return None
    return config


def _decrypt_grantees(kms: Any, key_arn: str) -> list[str]:
    pages = kms.get_paginator("list_grants").paginate(KeyId=key_arn)
    grants = [grant for page in pages for grant in page["Grants"]]
    return sorted({grant["GranteePrincipal"] for grant in grants if "Decrypt" in grant["Operations"]})


def _described(kms: Any, key_arn: str) -> dict[str, Any]:
    described: dict[str, Any] = kms.describe_key(KeyId=key_arn)["KeyMetadata"]
    return described


def _key_reads(ctx: ToolContext, key_arn: str | None) -> list[Read]:
    """The environment variables' key, when they have a customer managed one: its state, its grants."""
    if not key_arn:
        return []
    kms, unknown = ctx.clients.kms, "whether Lambda can decrypt the environment variables is unknown"
    return [
        Read("kms:DescribeKey", f"key {key_arn}", lambda: _described(kms, key_arn), unknown),
        Read("kms:ListGrants", f"key {key_arn}", lambda: _decrypt_grantees(kms, key_arn), unknown),
    ]


def _environment_key(described: dict[str, Any] | None, grantees: list[str] | None) -> EnvironmentKey:
    deletion = (described or {}).get("DeletionDate")
    return EnvironmentKey(
        KeyState=(described or {}).get("KeyState"),
        DeletionDate=deletion.isoformat() if deletion else None,
        DecryptGrantees=grantees,  # None: the grants could not be read (a gap says why)
    )


def _function_reads(ctx: ToolContext) -> list[Read]:
    """Concurrency, destinations, versions and aliases, in this order."""
    lambda_client, name = ctx.clients.lambda_, ctx.target.function_name
    return [
        Read(
            "lambda:GetFunctionConcurrency",
            f"function {name}",
            lambda: lambda_client.get_function_concurrency(FunctionName=name),
            "whether reserved concurrency limits (or throttles) the function is unknown",
        ),
        Read(
            "lambda:GetFunctionEventInvokeConfig",
            f"function {name}",
            lambda: event_invoke_config(ctx),
            "the asynchronous invocations' destinations are unknown",
        ),
        Read(
            "lambda:ListVersionsByFunction",
            f"function {name}",
            lambda: _versions(lambda_client, name),
            "the published versions (and what changed between them) are unknown",
        ),
        Read(
            "lambda:ListAliases",
            f"function {name}",
            lambda: _aliases(lambda_client, name),
            "which version each alias serves is unknown",
        ),
    ]


def lambda_config(ctx: ToolContext, args: GetLambdaConfigArgs) -> LambdaConfigResponse:
    config = function_configuration(ctx)
    concurrency, destinations, versions, aliases, *key = ctx.reads.many(
        [*_function_reads(ctx), *_key_reads(ctx, config.get("KMSKeyArn"))]
    )
    vpc = config.get("VpcConfig") or {}
    attached = bool(vpc.get("SubnetIds") or vpc.get("SecurityGroupIds"))
    failure = (destinations or {}).get("DestinationConfig") or {}
    return LambdaConfigResponse(
        **{key: config[key] for key in _COPIED if config.get(key) is not None},
        Architectures=config.get("Architectures") or [],
        Layers=[
            Layer(Arn=layer["Arn"], CodeSize=layer.get("CodeSize")) for layer in config.get("Layers") or []
        ],
        EnvironmentVariableNames=sorted((config.get("Environment") or {}).get("Variables") or {}),
        LoggingConfig=LoggingConfig(**config["LoggingConfig"]) if config.get("LoggingConfig") else None,
        EnvironmentKey=_environment_key(*key) if key else None,
        TracingMode=(config.get("TracingConfig") or {}).get("Mode"),
        EphemeralStorageMb=(config.get("EphemeralStorage") or {}).get("Size"),
        DeadLetterTargetArn=(config.get("DeadLetterConfig") or {}).get("TargetArn"),
        OnFailureDestination=(failure.get("OnFailure") or {}).get("Destination"),
        OnSuccessDestination=(failure.get("OnSuccess") or {}).get("Destination"),
        ReservedConcurrentExecutions=(concurrency or {}).get("ReservedConcurrentExecutions"),
        VpcConfig=VpcConfig(
            SubnetIds=vpc.get("SubnetIds") or [],
            SecurityGroupIds=vpc.get("SecurityGroupIds") or [],
            VpcId=vpc.get("VpcId") or None,
        )
        if attached
        else None,
        Versions=versions or [],
        Aliases=aliases or [],
        gaps=ctx.reads.gaps,
    )
