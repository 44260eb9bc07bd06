"""``get_lambda_config``: arguments and answer, in Lambda's own field casing."""

from __future__ import annotations

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments, omitted_when_null
from mcp_server.contract.declaration import ToolDeclaration


class GetLambdaConfigArgs(TargetArguments):
    """Arguments of ``get_lambda_config``: the function's configuration, concurrency, versions, aliases."""


class VpcConfig(ContractModel):
    """The function's VPC attachment, in Lambda's own casing."""

    SubnetIds: list[str] = Field(default_factory=list)
    SecurityGroupIds: list[str] = Field(default_factory=list)
    VpcId: str | None = None


class Layer(ContractModel):
    Arn: str
    CodeSize: int | None = None


class LoggingConfig(ContractModel):
    LogFormat: str | None = None
    LogGroup: str | None = None
    ApplicationLogLevel: str | None = omitted_when_null()  # null in the Text format
    SystemLogLevel: str | None = omitted_when_null()


class FunctionVersion(ContractModel):
    """A published version (``$LATEST`` included) as ListVersionsByFunction describes it."""

    Version: str
    CodeSha256: str | None = None
    Description: str | None = None
    LastModified: str | None = None


class FunctionAlias(ContractModel):
    """An alias: the version it points at, and the weights of any extra versions it routes to."""

    Name: str
    FunctionVersion: str
    AdditionalVersionWeights: dict[str, float] = Field(default_factory=dict)
    Description: str | None = None


class EnvironmentKey(ContractModel):
    """The customer managed key of ``KMSKeyArn``, as KMS describes it: whether Lambda can decrypt the
    environment variables with it when an execution environment starts."""

    KeyState: str | None = Field(default=None, description="Enabled, Disabled, PendingDeletion, ...")
    DeletionDate: str | None = omitted_when_null()
    DecryptGrantees: list[str] | None = Field(
        default=None, description="Principals a grant on the key lets decrypt (Lambda's is the role)."
    )


_VpcConfig = VpcConfig  # the field below is also named VpcConfig and would shadow the class
_LoggingConfig = LoggingConfig
_EnvironmentKey = EnvironmentKey


class LambdaConfigResponse(ContractModel):
    """Answer of ``get_lambda_config``. Environment variable values are never returned, only names."""

    FunctionName: str
    FunctionArn: str | None = None
    Version: str | None = Field(default=None, description="The version these settings are of.")
    Runtime: str | None = None
    Handler: str | None = None
    Role: str | None = None
    MemorySize: int | None = None
    Timeout: int | None = None
    State: str | None = None
    StateReason: str | None = omitted_when_null()
    StateReasonCode: str | None = omitted_when_null()
    LastModified: str | None = None
    LastUpdateStatus: str | None = None
    PackageType: str | None = None
    CodeSha256: str | None = None
    CodeSize: int | None = None
    Architectures: list[str] = Field(default_factory=list)
    Layers: list[Layer] = Field(default_factory=list)
    EnvironmentVariableNames: list[str] = Field(
        default_factory=list, description="Names of the function's environment variables (values withheld)."
    )
    LoggingConfig: _LoggingConfig | None = None
    KMSKeyArn: str | None = omitted_when_null()
    EnvironmentKey: _EnvironmentKey | None = omitted_when_null()
    TracingMode: str | None = None
    EphemeralStorageMb: int | None = None
    DeadLetterTargetArn: str | None = omitted_when_null()
    OnFailureDestination: str | None = omitted_when_null("Asynchronous invocations' on-failure.")
    OnSuccessDestination: str | None = omitted_when_null()
    ReservedConcurrentExecutions: int | None = Field(
        default=None, ge=0, description="Reserved concurrency; None when none is configured (0 = throttled)."
    )
    VpcConfig: _VpcConfig | None = None
    Versions: list[FunctionVersion] = Field(default_factory=list, description="Newest first (at most 20).")
    Aliases: list[FunctionAlias] = Field(default_factory=list)
    error: str | None = omitted_when_null()
    gaps: Gaps = Field(default_factory=list)


GET_LAMBDA_CONFIG = ToolDeclaration(
    name="get_lambda_config",
    title="Function configuration",
    description=(
        "The function's configuration: runtime, handler, memory, timeout, state, code hash, environment "
        "variable names (never values), layers, logging, VPC, reserved concurrency (0: all throttled), "
        "versions and aliases."
    ),
    arguments=GetLambdaConfigArgs,
    response=LambdaConfigResponse,
    implementation="mcp_server.tools.lambda_config:lambda_config",
    reads=(
        ("lambda", "GetFunctionConfiguration"),
        ("lambda", "GetFunctionConcurrency"),
        ("lambda", "GetFunctionEventInvokeConfig"),
        ("lambda", "ListVersionsByFunction"),
        ("lambda", "ListAliases"),
        ("kms", "DescribeKey"),
        ("kms", "ListGrants"),
    ),
    order=30,
)
