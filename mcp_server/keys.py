"""Where the accepted bearer keys come from: MCP_API_KEY, else the SSM SecureString, read once at startup;
and how strong they must be off loopback."""

from __future__ import annotations

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from mcp_server.aws import default_session, read_only_client
from mcp_server.errors import describe_aws_failure
from mcp_server.settings import ServerSettings

MIN_KEY_LENGTH = 32  # characters; secrets.token_urlsafe(32) makes 43


class WeakKeyError(ValueError):
    """A bearer key too short to be served off loopback."""


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


def require_strong_keys(keys: list[str], where: str) -> None:
    """WeakKeyError when a key is shorter than MIN_KEY_LENGTH (the caller checks only off loopback, where
    anyone who reaches the port may guess). Never says the key, only which one and how long."""
    short = [f"key {n} of {len(keys)} has {len(k)}" for n, k in enumerate(keys, 1) if len(k) < MIN_KEY_LENGTH]
    if short:
        raise WeakKeyError(
            f"{where} refuses bearer keys shorter than {MIN_KEY_LENGTH} characters ({'; '.join(short)}): "
            "make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'` and put it in "
            "MCP_API_KEY (or the SSM parameter), or bind to 127.0.0.1"
        )
