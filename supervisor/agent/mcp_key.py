"""The bearer key the supervisor presents to the MCP server: MCP_API_KEY, else the SSM SecureString."""

from __future__ import annotations

import boto3
from aws_lambda_powertools.utilities.parameters import SSMProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from supervisor.agent.mcp_settings import McpClientSettings
from supervisor.schemas import AgentError


def resolve_mcp_key(settings: McpClientSettings, session: boto3.Session | None = None) -> str:
    """The first key, when the value holds several (comma-separated) during a rotation. A parameter that
    cannot be read fails closed with AgentError('config')."""
    if settings.mcp_api_key is not None and settings.mcp_api_key.get_secret_value().strip():
        value: object = settings.mcp_api_key.get_secret_value()
    else:
        parameter = settings.mcp_api_key_ssm_parameter
        try:
            value = SSMProvider(boto3_session=session or boto3.Session()).get(parameter, decrypt=True)
        except GetParameterError as error:
            raise AgentError(
                "config",
                f"MCP_API_KEY is not set and SSM parameter {parameter} could not be read ({error}). "
                "Set MCP_API_KEY, or create the parameter and allow ssm:GetParameter on it.",
            ) from error
    key = str(value).split(",")[0].strip()
    if not key:
        raise AgentError("config", "the MCP key is empty: set MCP_API_KEY or the SSM parameter's value")
    return key
