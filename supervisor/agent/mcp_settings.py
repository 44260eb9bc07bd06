"""How a component reaches the MCP server as a client: the URL, the bearer key (or its SSM parameter) and
the timeouts. A mixin of the settings of the supervisor and the executor (which verifies recovery through
the same tools), read from the same variables (no prefix: the deploy template sets them once)."""

from __future__ import annotations

from urllib.parse import urlparse

from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator

from supervisor.incident.resources import MCP_KEY_PARAMETER


class McpClientSettings(BaseModel):
    mcp_server_url: str = Field(
        validation_alias=AliasChoices("MCP_SERVER_URL", "mcp_server_url"),
        default="http://127.0.0.1:8080/sse",
        description="The MCP server: '.../sse' for SSE, '.../mcp' for Streamable HTTP.",
    )
    mcp_api_key: SecretStr | None = Field(
        validation_alias=AliasChoices("MCP_API_KEY", "mcp_api_key"),
        default=None,
        description="Bearer key for the MCP server; read from SSM when unset.",
    )
    mcp_api_key_ssm_parameter: str = Field(
        validation_alias=AliasChoices("MCP_API_KEY_SSM_PARAMETER", "mcp_api_key_ssm_parameter"),
        default=MCP_KEY_PARAMETER,
        description="SecureString holding the MCP key, read when MCP_API_KEY is unset.",
    )
    mcp_connect_timeout: float = Field(default=10.0, gt=0, description="Seconds to open the MCP connection.")
    mcp_init_timeout: float = Field(default=10.0, gt=0, description="Seconds for the MCP handshake.")

    @field_validator("mcp_server_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        url = urlparse(value)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ValueError(
                f"MCP_SERVER_URL must be an http(s) URL such as http://host:8080/sse, not {value!r}"
            )
        return value

    @property
    def mcp_transport(self) -> str:
        """'http' for a Streamable HTTP endpoint (path ending in /mcp), else 'sse'."""
        return "http" if urlparse(self.mcp_server_url).path.rstrip("/").endswith("/mcp") else "sse"
