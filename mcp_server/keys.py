"""Where the accepted bearer keys come from: MCP_API_KEY, else the SSM SecureString, read once at startup."""

from __future__ import annotations

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from mcp_server.aws import default_session, read_only_client
from mcp_server.errors import describe_aws_failure
from mcp_server.settings import ServerSettings


class KeyConfigurationError(RuntimeError):
    """No usable bearer key could be found."""


def resolve_api_keys(settings: ServerSettings, session: boto3.Session | None = None) -> list[str]:
    """The accepted keys. In OAuth mode keys are optional: none unless MCP_API_KEY or an explicit
    MCP_API_KEY_SSM_PARAMETER asks for them."""
    keys = settings.api_keys()
    if keys:
        return keys
    if settings.mcp_oauth_issuer is not None and "mcp_api_key_ssm_parameter" not in settings.model_fields_set:
        return []
    parameter = settings.mcp_api_key_ssm_parameter
    session = session or default_session()
    ssm = read_only_client(session, "ssm", settings)
    try:
        value = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    except (ClientError, BotoCoreError) as error:
        reason = describe_aws_failure(error, queried=f"SSM parameter {parameter}", region=session.region_name)
        raise KeyConfigurationError(
            f"MCP_API_KEY is not set and the key could not be read from SSM: {reason}. "
            "Set MCP_API_KEY, or let the server's identity call ssm:GetParameter on that parameter."
        ) from error
    keys = [key.strip() for key in str(value).split(",") if key.strip()]
    if not keys:
        raise KeyConfigurationError(f"SSM parameter {parameter} is empty")
    return keys
