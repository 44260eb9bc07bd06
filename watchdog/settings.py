"""Configuration of the watchdog: one pydantic-settings class, read from the environment."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from supervisor.incident.notify_settings import NotificationSettings
from supervisor.incident.recheck_settings import RecheckQueueSettings
from supervisor.incident.resources import CONTEXT_TABLE, STATE_TABLE
from supervisor.remediation.queue import RemediationQueueSettings


class WatchdogSettings(BaseSettings, NotificationSettings, RecheckQueueSettings, RemediationQueueSettings):
    model_config = SettingsConfigDict(env_prefix="WATCHDOG_", extra="ignore", populate_by_name=True)

    incident_state_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_STATE_TABLE", "incident_state_table"),
        default=STATE_TABLE,
        min_length=3,
        description="DynamoDB table of incident states (GSI status-updated_at-index).",
    )
    incident_context_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_CONTEXT_TABLE", "incident_context_table"),
        default=CONTEXT_TABLE,
        min_length=3,
        description="DynamoDB table of diagnoses: read (GetItem) only, to notify a DIAGNOSED incident "
        "and to finish a stale investigation whose outcome is stored.",
    )
    stale_after_seconds: int = Field(
        default=600,
        ge=60,
        description="An incident RECEIVED or INVESTIGATING without an update for this long is failed; one "
        "PLANNING this long ends NO_PLAN.",
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
    recheck_grace_seconds: int = Field(
        default=600,
        ge=60,
        description="A provisional diagnosis whose re-check time is this far past gets its re-check sent "
        "again (once); still provisional this long after that, it is made final as it stands.",
    )
    executor_lease_seconds: int = Field(
        default=900,
        ge=60,
        le=3600,
        description="The executor's lease (EXECUTOR_LEASE_SECONDS): a run APPLYING or VERIFYING this long "
        "without an update died; the executor is asked to undo it, and a lease later it ends UNDO_FAILED.",
    )
