"""Configuration of incident-console: one pydantic-settings class, read from CONSOLE_<FIELD>. The sign-in
settings it shares with the MCP server (keys, OAuth issuer, audience, scopes, JWKS) are read from the MCP
server's names too, so one environment configures both; the CONSOLE_ name wins when both are set."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Self
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from executor.approvals import CONSOLE, approver_names
from mcp_server.https_urls import checked_url
from mcp_server.settings import SCOPE_PATTERN, proxy_list
from supervisor.incident.resources import APPROVALS_TABLE, CONTEXT_TABLE, STATE_TABLE
from supervisor.remediation.queue import RemediationQueueSettings

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
MIN_SESSION_SECRET = 32


def _shared(name: str) -> AliasChoices:
    """CONSOLE_<name>, else the MCP server's MCP_<name>."""
    return AliasChoices(f"CONSOLE_{name}", f"MCP_{name}")


class ConsoleSettings(BaseSettings, RemediationQueueSettings):
    model_config = SettingsConfigDict(env_prefix="CONSOLE_", extra="ignore", populate_by_name=True)

    host: str = Field(
        default="127.0.0.1",
        description="Address to bind. Loopback is open; any other address requires a sign-in (bearer "
        "keys or OAuth).",
    )
    port: int = Field(default=8088, ge=1, le=65535, description="Port to listen on.")
    state_table: str = Field(default=STATE_TABLE, min_length=1, description="The incident-state table.")
    context_table: str = Field(default=CONTEXT_TABLE, min_length=1, description="The incident-context table.")
    page_size: int = Field(default=25, ge=1, le=100, description="Incidents per page of the list.")
    refresh_seconds: int = Field(
        default=10,
        ge=2,
        le=3600,
        description="Seconds between reloads of a page that shows open incidents.",
    )
    drill_report: Path = Field(
        default=Path("drill-report/drill-report.json"),
        description="The JSON report of the last `make drill`, shown at /drill.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        validation_alias=_shared("API_KEY"),
        description="Comma-separated bearer keys (the MCP server's MCP_API_KEY), for scripts and the "
        "key sign-in form; a non-loopback bind needs these or OAuth. Ignored on loopback.",
    )
    oauth_issuer: str | None = Field(
        default=None,
        validation_alias=_shared("OAUTH_ISSUER"),
        description="OAuth mode (MCP_OAUTH_ISSUER): the identity provider's issuer URL. Browsers sign in "
        "there (authorization code with PKCE); scripts send its access tokens as bearer tokens.",
    )
    oauth_audience: str | None = Field(
        default=None,
        validation_alias=_shared("OAUTH_AUDIENCE"),
        description="The audience access tokens must name (MCP_OAUTH_AUDIENCE; Cognito: the app client).",
    )
    oauth_scopes: str = Field(
        default="",
        validation_alias=_shared("OAUTH_SCOPES"),
        description="Scopes every access token must carry, also asked for at sign-in (MCP_OAUTH_SCOPES).",
    )
    oauth_jwks_url: str | None = Field(
        default=None,
        validation_alias=_shared("OAUTH_JWKS_URL"),
        description="The issuer's JWKS (MCP_OAUTH_JWKS_URL); default: from its metadata.",
    )
    oauth_client_id: str | None = Field(
        default=None,
        description="The console's client id at the issuer (browser sign-in); required in OAuth mode "
        "off loopback.",
    )
    oauth_client_secret: SecretStr | None = Field(
        default=None,
        description="The client's secret, if the issuer gave it one (sent with HTTP Basic).",
    )
    public_url: str | None = Field(
        default=None,
        description="The console's public URL (https://console.example.com); the issuer sends browsers "
        "back to its /auth/callback. Required in OAuth mode off loopback.",
    )
    session_secret: SecretStr | None = Field(
        default=None,
        description=f"Signs the session cookie (at least {MIN_SESSION_SECRET} characters). Unset: a random "
        "key per process, so sessions end when the console restarts.",
    )
    session_hours: float = Field(
        default=12.0,
        gt=0,
        le=168,
        description="Lifetime of a session opened with a key (an OAuth session ends with its token).",
    )
    session_cookie_minutes: int = Field(
        default=10,
        ge=1,
        le=60,
        description="Lifetime of one session cookie: each signed-in request gets a new one, until the "
        "session ends; a cookie not used for this long (or copied and left) no longer signs in.",
    )
    sign_in_failures_per_minute: int = Field(
        default=10,
        ge=1,
        le=10_000,
        description="Wrong keys or bearer credentials a client may send at once, and then per minute; "
        "beyond that it is refused with 429 and Retry-After, unchecked. Counted per task.",
    )
    trusted_proxies: str = Field(
        default="",
        validation_alias=_shared("TRUSTED_PROXIES"),
        description="Load balancers or proxies (addresses or CIDR blocks, comma-separated; "
        "MCP_TRUSTED_PROXIES) whose X-Forwarded-For names the client; from anyone else the "
        "connection's address is the client.",
    )

    approvers: str = Field(
        default="",
        validation_alias=AliasChoices("CONSOLE_APPROVERS", "REMEDIATION_APPROVERS"),
        description="The executor's REMEDIATION_APPROVERS: a person it names as console:<subject> (the "
        "OAuth token's sub) may approve or reject a plan on its incident page, signed in through the "
        "identity provider. Empty: the page shows the plan and the incident-remediate command only.",
    )
    approvals_table: str = Field(
        default=APPROVALS_TABLE,
        min_length=3,
        validation_alias=AliasChoices("CONSOLE_APPROVALS_TABLE", "INCIDENT_APPROVALS_TABLE"),
        description="The incident-approvals table a decision is written to (the console's one write).",
    )
    decision_sign_in_minutes: int = Field(
        default=15,
        ge=1,
        le=720,
        description="A decision on a plan needs a sign-in at most this old: an older session is asked "
        "to sign in again first.",
    )

    @field_validator("approvers")
    @classmethod
    def _approvers(cls, value: str) -> str:
        approver_names(value)
        return value

    def console_approvers(self) -> frozenset[str]:
        """The ``console:<subject>`` approvers: who may decide on a plan here."""
        return frozenset(name for name in approver_names(self.approvers) if name.startswith(CONSOLE))

    @field_validator("oauth_issuer", "oauth_jwks_url", "public_url")
    @classmethod
    def _url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        checked = checked_url(f"CONSOLE_{str(info.field_name).upper()}", value)
        return checked.rstrip("/") if info.field_name == "public_url" else checked  # `iss` is exact

    @field_validator("oauth_scopes")
    @classmethod
    def _scope_tokens(cls, value: str) -> str:
        bad = [scope for scope in value.replace(",", " ").split() if not re.fullmatch(SCOPE_PATTERN, scope)]
        if bad:
            raise ValueError(
                f"CONSOLE_OAUTH_SCOPES: {bad} are not scopes (ASCII, no space, quote or backslash)"
            )
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: str) -> str:
        try:
            proxy_list(value)
        except ValueError as error:
            raise ValueError(f"CONSOLE_TRUSTED_PROXIES: {error}") from None
        return value

    @field_validator("session_secret")
    @classmethod
    def _strong_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_SESSION_SECRET:
            raise ValueError(f"CONSOLE_SESSION_SECRET must be at least {MIN_SESSION_SECRET} characters")
        return value

    @model_validator(mode="after")
    def _oauth_complete(self) -> Self:
        if self.oauth_issuer is not None and not self.oauth_audience:
            raise ValueError(
                "MCP_OAUTH_AUDIENCE (or CONSOLE_OAUTH_AUDIENCE) is required with the OAuth issuer"
            )
        return self

    def api_keys(self) -> list[str]:
        if self.api_key is None:
            return []
        return [key.strip() for key in self.api_key.get_secret_value().split(",") if key.strip()]

    def scopes(self) -> tuple[str, ...]:
        return tuple(scope for scope in self.oauth_scopes.replace(",", " ").split() if scope)

    def proxies(self) -> list[str]:
        return proxy_list(self.trusted_proxies)

    def loopback(self) -> bool:
        return self.host in LOOPBACK

    def host_names(self) -> list[str]:
        """The configured Host names, and the public URL's."""
        names = [host.strip() for host in self.allowed_hosts.split(",") if host.strip()]
        return names + ([urlsplit(self.public_url).netloc] if self.public_url else [])

    allowed_hosts: str = Field(
        default="",
        validation_alias=_shared("ALLOWED_HOSTS"),
        description="Host names the console answers besides the loopback names, its bind address and "
        "the public URL's (MCP_ALLOWED_HOSTS; comma-separated 'name', 'name:port' or 'name:*'). Any "
        "other Host gets 421 (DNS rebinding).",
    )
    request_header_timeout: float = Field(
        default=10.0,
        gt=0,
        le=300,
        validation_alias=_shared("REQUEST_HEADER_TIMEOUT"),
        description="Seconds a connection has to send a complete request head (MCP_REQUEST_HEADER_TIMEOUT).",
    )
    keep_alive_timeout: int = Field(
        default=75,
        ge=1,
        le=4000,
        validation_alias=_shared("KEEP_ALIVE_TIMEOUT"),
        description="Seconds an idle keep-alive connection stays open (MCP_KEEP_ALIVE_TIMEOUT): longer than "
        "the idle timeout of any load balancer in front (an ALB's is 60 s by default).",
    )
