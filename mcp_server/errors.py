"""AWS failures, mapped once to a small family of tool errors that say what was queried and what to check."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from mcp.server.mcpserver.exceptions import ToolError


class DiagnosticToolError(ToolError):
    """A tool failed in a way we anticipated; the message is written for the model reading it."""


class ReadOnlyViolation(DiagnosticToolError):
    """The server refused to send an AWS operation outside its read-only allowlist."""


_NOT_FOUND = {
    "ResourceNotFoundException",
    "NoSuchEntity",
    "InvalidGroup.NotFound",
    "InvalidSubnetID.NotFound",
    "AWS.SimpleQueueService.NonExistentQueue",  # SQS, query protocol
    "QueueDoesNotExist",  # SQS, JSON protocol
    "NotFound",  # SNS: no such topic
}
_DENIED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}
_THROTTLED = {"Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded"}
_CREDENTIALS = {
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "ExpiredToken",
    "ExpiredTokenException",
    "SignatureDoesNotMatch",
}
_UNREACHABLE = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)


def describe_aws_failure(
    error: ClientError | BotoCoreError, *, queried: str, region: str | None
) -> DiagnosticToolError:
    """Turn a botocore failure into a tool error naming the AWS code, what was queried, and what to check."""
    where = f"{queried} in region {region or '(unset)'}"
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", "Unknown"))
        message = str(error.response.get("Error", {}).get("Message", ""))
        if code in _NOT_FOUND:
            hint = (
                "check the name and the server's region; if the function references it, "
                "the resource itself may have been deleted"
            )
        elif code in _DENIED:
            hint = (
                "the MCP server's AWS identity lacks this permission: see README 'Required IAM permissions'"
            )
        elif code in _THROTTLED:
            hint = "AWS throttled the request after retries: try again shortly"
        elif code in _CREDENTIALS:
            hint = "the MCP server's AWS credentials are invalid or expired"
        else:
            hint = "see the AWS error message"
        return DiagnosticToolError(f"AWS error {code} while reading {where}: {message} ({hint})")
    if isinstance(error, _UNREACHABLE):
        return DiagnosticToolError(
            f"AWS is unreachable while reading {where}: {error} "
            "(check network access to the AWS endpoint, or AWS_ENDPOINT_URL)"
        )
    if isinstance(error, NoCredentialsError):
        return DiagnosticToolError(
            f"no AWS credentials while reading {where} (configure the server's identity, e.g. AWS_PROFILE)"
        )
    return DiagnosticToolError(f"AWS client error while reading {where}: {error}")


@contextmanager
def aws_errors(queried: str, region: str | None) -> Iterator[None]:
    """Re-raise botocore failures inside the block as a ``DiagnosticToolError`` naming ``queried``."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        raise describe_aws_failure(error, queried=queried, region=region) from error
