"""Configuration of the MCP server: one pydantic-settings class, read from the environment."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    mcp_api_key: SecretStr | None = Field(
        default=None,
        description="Accepted bearer keys, comma-separated (old and new together while rotating).",
    )
    mcp_api_key_ssm_parameter: str = Field(
        default="/incident-response/mcp-api-key",
        description="SecureString holding the key, read at startup when MCP_API_KEY is unset.",
    )
    mcp_allowed_hosts: str = Field(
        default="",
        description="Extra Host header values accepted (comma-separated, 'name' or 'name:port' or 'name:*').",
    )
    aws_connect_timeout: float = Field(default=3.0, gt=0, description="Seconds to open a connection to AWS.")
    aws_read_timeout: float = Field(default=10.0, gt=0, description="Seconds to wait for an AWS response.")
    aws_max_attempts: int = Field(
        default=3, ge=1, le=10, description="Attempts per AWS call (standard retries)."
    )
    logs_byte_cap: int = Field(
        default=16 * 1024, ge=1024, description="Total bytes of log messages per answer."
    )
    logs_message_cap: int = Field(default=1024, ge=128, description="Bytes kept of one log message.")
    logs_scan_limit: int = Field(default=20_000, ge=100, description="Most log events read per call.")
    max_request_body_bytes: int = Field(
        default=256 * 1024, ge=1024, description="Largest accepted request body."
    )

    @field_validator("mcp_api_key_ssm_parameter")
    @classmethod
    def _parameter_name(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("MCP_API_KEY_SSM_PARAMETER must be a parameter path starting with '/'")
        return value

    def api_keys(self) -> list[str]:
        if self.mcp_api_key is None:
            return []
        return [key.strip() for key in self.mcp_api_key.get_secret_value().split(",") if key.strip()]

    def extra_allowed_hosts(self) -> list[str]:
        return [host.strip() for host in self.mcp_allowed_hosts.split(",") if host.strip()]
