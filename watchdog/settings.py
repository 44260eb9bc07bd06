"""Configuration of the watchdog: one pydantic-settings class, read from the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class WatchdogSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WATCHDOG_", extra="ignore", populate_by_name=True)

    incident_state_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_STATE_TABLE", "incident_state_table"),
        default="incident-state",
        min_length=3,
        description="DynamoDB table of incident states (GSI status-updated_at-index).",
    )
    stale_after_seconds: int = Field(
        default=600,
        ge=60,
        description="An incident RECEIVED or INVESTIGATING without an update for this long is failed.",
    )
