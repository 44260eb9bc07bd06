"""Configuration of the MCP server: one pydantic-settings class, read from the environment."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Final, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mcp_server.contract.common import ACCOUNT_ALIAS_PATTERN
from mcp_server.https_urls import checked_url
from mcp_server.pacing import LOOKUP_EVENTS_PER_SECOND

MCP_KEY_PARAMETER: Final = "/incident-response/mcp-api-key"  # a SecureString the operator creates

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SCOPE_PATTERN = r"[\x21\x23-\x5b\x5d-\x7e]+"  # RFC 6749 §3.3
ROLE_ARN_PATTERN = r"^arn:aws(?:-cn|-us-gov)?:iam::(?P<account>[0-9]{12}):role/[A-Za-z0-9+=,.@_/-]+$"


def proxy_list(value: str) -> list[str]:
    """The comma-separated setting as a list; ValueError naming an entry that is not an address or block."""
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    for entry in entries:
        if entry == "*":
            raise ValueError("'*' would believe any X-Forwarded-For: name the proxies (addresses or blocks)")
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or CIDR block") from None
    return entries


class AccountRole(BaseModel):
    """The read-only role the server assumes to read another account."""

    model_config = ConfigDict(extra="forbid")

    role_arn: str = Field(
        pattern=ROLE_ARN_PATTERN, max_length=2048, description="arn:aws:iam::<account>:role/<name>"
    )
    external_id: str | None = Field(default=None, min_length=2, max_length=1224)

    @property
    def account_id(self) -> str:
        match = re.match(ROLE_ARN_PATTERN, self.role_arn)
        assert match is not None  # the field's pattern
        return match.group("account")


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    mcp_api_key: SecretStr | None = Field(
        default=None,
        description="Accepted bearer keys, comma-separated (old and new together while rotating).",
    )
    mcp_api_key_ssm_parameter: str = Field(
        default=MCP_KEY_PARAMETER,
        description="SecureString holding the key, read at startup when MCP_API_KEY is unset.",
    )
    mcp_allowed_hosts: str = Field(
        default="",
        description="Extra Host header values accepted (comma-separated, 'name' or 'name:port' or 'name:*').",
    )
    mcp_oauth_issuer: str | None = Field(
        default=None,
        description="OAuth 2.1 resource-server mode: the identity provider's issuer URL, exactly as in "
        "the tokens' `iss`. Static keys keep working beside it.",
    )
    mcp_oauth_audience: str | None = Field(
        default=None,
        description="The audience access tokens must name in `aud` (Cognito access tokens: `client_id`).",
    )
    mcp_oauth_jwks_url: str | None = Field(
        default=None,
        description="The issuer's JWKS; default: from its OpenID Connect or RFC 8414 metadata.",
    )
    mcp_oauth_scopes: str = Field(
        default="", description="Scopes every access token must carry (comma- or space-separated)."
    )
    mcp_oauth_resource: str | None = Field(
        default=None,
        description="This server's public URL, published as `resource` in its protected-resource "
        "metadata; default http://<host>:<port> when bound to loopback.",
    )
    mcp_request_header_timeout: float = Field(
        default=10.0, gt=0, le=300, description="Seconds a connection has to send a complete request head."
    )
    mcp_keep_alive_timeout: int = Field(
        default=75,
        ge=1,
        le=4000,
        description="Seconds an idle keep-alive connection stays open: longer than the idle timeout of any "
        "load balancer in front (an ALB's is 60 s by default), so the balancer, never the server, closes it.",
    )
    aws_connect_timeout: float = Field(default=3.0, gt=0, description="Seconds to open a connection to AWS.")
    aws_read_timeout: float = Field(default=10.0, gt=0, description="Seconds to wait for an AWS response.")
    aws_max_attempts: int = Field(
        default=3, ge=1, le=10, description="Attempts per AWS call (standard retries)."
    )
    aws_max_pool_connections: int = Field(
        default=64, ge=10, le=1000, description="Connections per AWS client (more than the worker threads)."
    )
    logs_byte_cap: int = Field(
        default=8 * 1024, ge=1024, description="Total bytes of log messages per answer."
    )
    logs_message_cap: int = Field(default=1024, ge=128, description="Bytes kept of one log message.")
    logs_scan_limit: int = Field(default=20_000, ge=100, description="Most log events read per call.")
    max_request_body_bytes: int = Field(
        default=256 * 1024, ge=1024, description="Largest accepted request body."
    )
    mcp_accounts: dict[str, AccountRole] = Field(
        default_factory=dict,
        description='Other accounts the tools may read, as JSON: {"alias": {"role_arn": "arn:aws:iam::'
        '<account>:role/<read-only role>", "external_id": "..."}}. Callers name an alias, never a role.',
    )
    mcp_tool_deadline_seconds: float = Field(
        default=20.0,
        gt=0,
        le=300,
        description="Each tool answers within this many seconds, with what it read and the rest as gaps "
        "(below the supervisor's 30 s tool timeout).",
    )
    mcp_cloudtrail_lookups_per_second: float = Field(
        default=LOOKUP_EVENTS_PER_SECOND,
        gt=0,
        le=1000,
        description="CloudTrail LookupEvents requests the server starts per second in each account and "
        "Region: AWS allows 2 (more only against an emulator whose clock runs faster).",
    )
    mcp_incident_state_table: str = Field(
        default="incident-state",
        min_length=3,
        max_length=255,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The supervisor's incident-state table, which get_incident_history queries (in the "
        "account and Region of the function asked about).",
    )
    mcp_redact: bool = Field(
        default=True,
        description="Replace secrets and personal data in tool answers (e-mail addresses, tokens, AWS keys "
        "and session tokens, card numbers, private keys, passwords in URLs, values whose key names a secret) "
        "with typed placeholders before an answer leaves the server, counted in its gaps. Off (false) only "
        "where answers may be shown as they are.",
    )
    mcp_answer_log: Path | None = Field(
        default=None,
        description="A file to append every tool answer to as it is sent (JSON lines: tool, arguments, the "
        "caller's incident id, the answer after redaction, or the error): the server's own record of what "
        "reached a model. Unset: none is kept.",
    )
    mcp_auth_failures_per_minute: int = Field(
        default=10,
        ge=1,
        le=10_000,
        description="Wrong bearer credentials a client may send at once, and then per minute; beyond that "
        "its credentials get 429 with Retry-After, unchecked. Counted per task.",
    )
    mcp_trusted_proxies: str = Field(
        default="",
        description="Load balancers or proxies (addresses or CIDR blocks, comma-separated) whose "
        "X-Forwarded-For names the client; from anyone else the connection's address is the client.",
    )

    @field_validator("mcp_accounts")
    @classmethod
    def _aliases(cls, value: dict[str, AccountRole]) -> dict[str, AccountRole]:
        for alias in value:
            if not re.fullmatch(ACCOUNT_ALIAS_PATTERN, alias):
                raise ValueError(
                    f"MCP_ACCOUNTS alias {alias!r} must be 1-32 lowercase letters, digits or '-'"
                )
        return value

    @field_validator("mcp_answer_log")
    @classmethod
    def _answer_log(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        if value.is_dir():
            raise ValueError(f"MCP_ANSWER_LOG {value} is a directory: name a file to append to")
        existing = next(parent for parent in value.absolute().parents if parent.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK):
            raise ValueError(f"MCP_ANSWER_LOG {value}: {existing} is not a writable directory")
        if value.exists() and not os.access(value, os.W_OK):
            raise ValueError(f"MCP_ANSWER_LOG {value} is not writable")
        return value

    @field_validator("mcp_trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        try:
            proxy_list(value)
        except ValueError as error:
            raise ValueError(f"MCP_TRUSTED_PROXIES: {error}") from None
        return value

    @field_validator("mcp_api_key_ssm_parameter")
    @classmethod
    def _parameter_name(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("MCP_API_KEY_SSM_PARAMETER must be a parameter path starting with '/'")
        return value

    @field_validator("mcp_oauth_issuer", "mcp_oauth_jwks_url", "mcp_oauth_resource")
    @classmethod
    def _oauth_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else checked_url(str(info.field_name).upper(), value)

    @field_validator("mcp_oauth_scopes")
    @classmethod
    def _scope_tokens(cls, value: str) -> str:
        bad = [scope for scope in value.replace(",", " ").split() if not re.fullmatch(SCOPE_PATTERN, scope)]
        if bad:
            raise ValueError(f"MCP_OAUTH_SCOPES: {bad} are not scopes (ASCII, no space, quote or backslash)")
        return value

    @model_validator(mode="after")
    def _oauth_complete(self) -> Self:
        if self.mcp_oauth_issuer is not None and not self.mcp_oauth_audience:
            raise ValueError("MCP_OAUTH_AUDIENCE is required with MCP_OAUTH_ISSUER (the tokens' `aud`)")
        dependent = ("mcp_oauth_audience", "mcp_oauth_jwks_url", "mcp_oauth_scopes", "mcp_oauth_resource")
        orphans = [name.upper() for name in dependent if getattr(self, name)]
        if self.mcp_oauth_issuer is None and orphans:
            raise ValueError(f"{', '.join(orphans)} only apply with MCP_OAUTH_ISSUER, which is not set")
        return self

    def oauth_scopes(self) -> tuple[str, ...]:
        return tuple(scope for scope in self.mcp_oauth_scopes.replace(",", " ").split() if scope)

    def api_keys(self) -> list[str]:
        if self.mcp_api_key is None:
            return []
        return [key.strip() for key in self.mcp_api_key.get_secret_value().split(",") if key.strip()]

    def extra_allowed_hosts(self) -> list[str]:
        return [host.strip() for host in self.mcp_allowed_hosts.split(",") if host.strip()]

    def trusted_proxies(self) -> list[str]:
        return proxy_list(self.mcp_trusted_proxies)
