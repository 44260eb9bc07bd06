"""Configuration of incident-console: one pydantic-settings class, read from CONSOLE_<FIELD>."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


class ConsoleSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONSOLE_", extra="ignore", populate_by_name=True)

    host: str = Field(
        default="127.0.0.1",
        description="Address to bind. Any address other than loopback requires the MCP server's bearer keys.",
    )
    port: int = Field(default=8088, ge=1, le=65535, description="Port to listen on.")
    state_table: str = Field(default="incident-state", min_length=1, description="The incident-state table.")
    context_table: str = Field(
        default="incident-context", min_length=1, description="The incident-context table."
    )
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
        validation_alias=AliasChoices("CONSOLE_API_KEY", "MCP_API_KEY"),
        description="Comma-separated bearer keys (the MCP server's MCP_API_KEY); required on a "
        "non-loopback bind, ignored on loopback.",
    )

    def api_keys(self) -> list[str]:
        if self.api_key is None:
            return []
        return [key.strip() for key in self.api_key.get_secret_value().split(",") if key.strip()]

    def loopback(self) -> bool:
        return self.host in LOOPBACK
