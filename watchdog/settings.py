"""Configuration of the watchdog: one pydantic-settings class, read from the environment."""

from __future__ import annotations

from urllib.parse import urlparse

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class WatchdogSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WATCHDOG_", extra="ignore", populate_by_name=True)

    incident_state_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_STATE_TABLE", "incident_state_table"),
        default="incident-state",
        min_length=3,
        description="DynamoDB table of incident states (GSI status-updated_at-index).",
    )
    incident_context_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_CONTEXT_TABLE", "incident_context_table"),
        default="incident-context",
        min_length=3,
        description="DynamoDB table of diagnoses: read (GetItem) only to notify a DIAGNOSED incident.",
    )
    stale_after_seconds: int = Field(
        default=600,
        ge=60,
        description="An incident RECEIVED or INVESTIGATING without an update for this long is failed.",
    )
    diagnoses_topic_arn: str | None = Field(
        default=None,
        description="SNS topic that gets one message per incident outcome (the supervisor's); the "
        "watchdog publishes the incidents it fails and retries unsent ones there. Unset or empty: the "
        "watchdog publishes nothing.",
    )
    console_url: str | None = Field(
        default=None,
        description="Base URL of the incident console; notifications link to <base>/incidents/<id>. "
        "Unset: they say there is no link.",
    )
    notify_retry_hours: int = Field(
        default=24,
        ge=0,
        description="Each sweep notifies terminal incidents updated this recently whose notification was "
        "never sent (0: no retries).",
    )
    notify_grace_seconds: int = Field(
        default=60,
        ge=0,
        description="A terminal incident is retried only once it is this old, so that the orchestrator "
        "normally sends its own notification.",
    )

    @field_validator("diagnoses_topic_arn", "console_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value  # a template parameter left empty

    @field_validator("diagnoses_topic_arn")
    @classmethod
    def _topic_arn(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("arn:") or value.split(":")[2:3] != ["sns"]):
            raise ValueError(f"WATCHDOG_DIAGNOSES_TOPIC_ARN must be an SNS topic ARN, not {value!r}")
        return value

    @field_validator("console_url")
    @classmethod
    def _console(cls, value: str | None) -> str | None:
        if value is not None:
            url = urlparse(value)
            if url.scheme not in ("http", "https") or not url.netloc:
                raise ValueError(f"WATCHDOG_CONSOLE_URL must be an http(s) URL, not {value!r}")
        return value.rstrip("/") if value else value
