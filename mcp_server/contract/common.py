"""What every tool shares: the strict base models, the target of a call (function, region, account) and
the gaps an answer reports."""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from mcp_server.lambda_names import FUNCTION_ARN, FUNCTION_NAME, validate_lambda_name
from mcp_server.source_names import SOURCE_PATTERN, parse_source


class ContractModel(BaseModel):
    """Responses: unknown fields are refused, so malformed or fabricated data fails validation."""

    model_config = ConfigDict(extra="forbid")


class ToolArguments(BaseModel):
    """Arguments: unknown names and values of another type than the schema says are refused (no coercion of
    ``true`` to 1 or ``"100"`` to 100)."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _null(value: object) -> bool:
    return value is None


def omitted_when_null(description: str | None = None) -> Any:
    """A field that says nothing while it is null: the answer leaves it out then, to spare every reader's
    tokens. Not for fields whose null is itself a finding (no reserved concurrency, no boundary)."""
    return Field(default=None, exclude_if=_null, description=description)


# The same language for JSON Schema (ECMA-262) clients: anchored, no Python-only named groups.
_JSON_SCHEMA_PATTERN: Final[str] = f"^(?:{FUNCTION_NAME}|{FUNCTION_ARN.replace('?P<arn_name>', '?:')})$"

LambdaName = Annotated[
    str,
    AfterValidator(validate_lambda_name),
    Field(
        description=("Function name or ARN, optionally with ':<version or alias>'."),
        json_schema_extra={"pattern": _JSON_SCHEMA_PATTERN},
    ),
]

REGION_PATTERN: Final[str] = r"^[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}$"
_REGION = re.compile(REGION_PATTERN)
ACCOUNT_ALIAS_PATTERN: Final[str] = r"^[a-z0-9][a-z0-9-]{0,31}$"
_ACCOUNT_ALIAS = re.compile(ACCOUNT_ALIAS_PATTERN)


def _region(value: str) -> str:
    if not _REGION.fullmatch(value):
        raise ValueError("region must be an AWS region name such as 'ca-central-1' or 'us-east-1'")
    return value


def _account_alias(value: str) -> str:
    if not _ACCOUNT_ALIAS.fullmatch(value):
        raise ValueError("account must be an account alias configured on the server, e.g. 'production'")
    return value


Region = Annotated[
    Annotated[str, AfterValidator(_region)] | None,
    Field(
        description="Default: the ARN's, else the server's.",
        json_schema_extra={"pattern": REGION_PATTERN},
    ),
]
AccountAlias = Annotated[
    Annotated[str, AfterValidator(_account_alias)] | None,
    Field(
        description="A configured account alias; default: the server's.",
        json_schema_extra={"pattern": ACCOUNT_ALIAS_PATTERN},
    ),
]


class TargetArguments(ToolArguments):
    """Which function a tool reads: ``lambda_name``, and optionally where."""

    lambda_name: LambdaName
    region: Region = None
    account: AccountAlias = None


def _source(value: str) -> str:
    parse_source(value)
    return value


SourceText = Annotated[
    str,
    AfterValidator(_source),
    Field(
        description=(
            "An SQS queue's name (e.g. 'orders-queue'), URL or ARN, or an SNS topic's ARN. An ARN's or URL's "
            "region and account are used (the account must be the server's own or a configured one)."
        ),
        json_schema_extra={"pattern": SOURCE_PATTERN},
    ),
]


class SourceArguments(ToolArguments):
    """Which event source a tool reads (a queue or a topic, instead of a function), and optionally where."""

    source: SourceText
    region: Region = None
    account: AccountAlias = None


class Gap(ContractModel):
    """A part of the answer that could not be read: what was tried, why it failed, what that means."""

    source: str = Field(description="What was tried, e.g. 'iam:GetPolicyVersion of policy arn:...'.")
    error_code: str | None = Field(
        default=None, description="The AWS error code, or 'Timeout' when the tool's deadline passed first."
    )
    meaning: str = Field(description="What the missing part means for the investigation.")


Gaps = Annotated[
    list[Gap],
    Field(
        description="Parts that could not be read, each with its reason. An empty list: nothing is missing."
    ),
]
