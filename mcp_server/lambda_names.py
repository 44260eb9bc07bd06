"""What a Lambda function name or ARN may look like. Plain ``re`` only, so cold paths that must not
import pydantic (the orchestrator's parsing) share the contract's rule."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

FUNCTION_NAME: Final[str] = r"[A-Za-z0-9_-]{1,64}"
FUNCTION_ARN: Final[str] = (
    r"arn:(?:aws|aws-cn|aws-us-gov):lambda:[a-z]{2}(?:-gov)?-[a-z]+-[0-9]{1,2}:[0-9]{12}:function:"
    rf"(?P<arn_name>{FUNCTION_NAME})(?::(?:\$LATEST|[A-Za-z0-9_-]{{1,128}}))?"
)
# An unanchored alternation: apply it with re.fullmatch ("^...$" would also accept a trailing newline).
LAMBDA_NAME_PATTERN: Final[str] = rf"(?P<name>{FUNCTION_NAME})|{FUNCTION_ARN}"
_LAMBDA_NAME_RE: Final[re.Pattern[str]] = re.compile(LAMBDA_NAME_PATTERN)

LAMBDA_NAME_HELP: Final[str] = (
    "a Lambda function name (1-64 characters: letters, digits, '-' or '_', e.g. 'data-processor') "
    "or a function ARN 'arn:<aws|aws-cn|aws-us-gov>:lambda:<region>:<12-digit account>:function:<name>' "
    "with an optional ':<version or alias>' or ':$LATEST' qualifier"
)


def validate_lambda_name(value: str) -> str:
    """Return ``value`` unchanged if it is a valid function name or function ARN, else raise ValueError."""
    if _LAMBDA_NAME_RE.fullmatch(value) is None:
        raise ValueError(f"lambda_name must be {LAMBDA_NAME_HELP}")
    return value


def function_name_of(lambda_name: str) -> str:
    """The bare function name of a valid ``lambda_name`` (for an ARN: its name part, without qualifier)."""
    match = _LAMBDA_NAME_RE.fullmatch(lambda_name)
    if match is None:
        raise ValueError(f"lambda_name must be {LAMBDA_NAME_HELP}")
    name: str = match.group("name") or match.group("arn_name")
    return name


_ARN_PARTS: Final[re.Pattern[str]] = re.compile(
    r"arn:(?P<partition>[a-z-]+):lambda:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):function:"
    r"(?P<name>[^:]+)(?::(?P<qualifier>.+))?"
)


@dataclass(frozen=True)
class FunctionArn:
    partition: str
    region: str
    account: str
    name: str
    qualifier: str | None


def parse_function_arn(lambda_name: str) -> FunctionArn | None:
    """The parts of a valid function ARN; None for a bare function name."""
    validate_lambda_name(lambda_name)
    match = _ARN_PARTS.fullmatch(lambda_name)
    if match is None:
        return None
    return FunctionArn(**match.groupdict())
