"""Configuration of the executor: one pydantic-settings class, read from the environment."""

from __future__ import annotations

from typing import Final

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from executor.approvals import approver_names
from supervisor.agent.mcp_settings import McpClientSettings
from supervisor.incident.notify_settings import NotificationSettings
from supervisor.incident.resources import APPROVALS_TABLE, CONTEXT_TABLE, STATE_TABLE
from supervisor.remediation.plan import Risk
from supervisor.remediation.queue import RemediationQueueSettings

RISKS: Final[frozenset[str]] = frozenset({"low", "high"})


def _names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class ExecutorSettings(BaseSettings, McpClientSettings, RemediationQueueSettings, NotificationSettings):
    model_config = SettingsConfigDict(env_prefix="EXECUTOR_", extra="ignore", populate_by_name=True)

    incident_state_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_STATE_TABLE", "incident_state_table"),
        default=STATE_TABLE,
        min_length=3,
        description="DynamoDB table of incident states: the executor moves an incident through its run.",
    )
    incident_context_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_CONTEXT_TABLE", "incident_context_table"),
        default=CONTEXT_TABLE,
        min_length=3,
        description="DynamoDB table of diagnoses: the plan is read there, and what the run did recorded.",
    )
    incident_approvals_table: str = Field(
        validation_alias=AliasChoices("INCIDENT_APPROVALS_TABLE", "incident_approvals_table"),
        default=APPROVALS_TABLE,
        min_length=3,
        description="DynamoDB table of people's decisions on plans (one per plan digest).",
    )
    approvers: str = Field(
        validation_alias=AliasChoices("REMEDIATION_APPROVERS", "approvers"),
        default="",
        description="Comma-separated IAM users and roles (ARNs; a role's sessions count as the role) and "
        "console sign-ins (console:<subject>) whose decisions count. Empty: no person can approve; only "
        "what auto-apply allows runs.",
    )
    auto_apply: str = Field(
        default="",
        description="Comma-separated risks ('low', 'high') whose plans apply without a person: a plan runs "
        "on its own only when every step's risk, read from the allowlist, is one of these. Empty: none.",
    )
    lease_seconds: int = Field(
        default=900,
        ge=60,
        le=3600,
        description="A run APPLYING or VERIFYING without an update for this long died: the next run undoes "
        "what it recorded. At least the executor function's timeout.",
    )
    poll_seconds: float = Field(default=5.0, gt=0, le=60, description="Seconds between recovery checks.")
    min_invocations: int = Field(
        default=2, ge=1, le=50, description="Invocations after the fix, none failing, that show recovery."
    )

    @field_validator("approvers")
    @classmethod
    def _approvers(cls, value: str) -> str:
        approver_names(value)
        return value

    @field_validator("auto_apply")
    @classmethod
    def _risks(cls, value: str) -> str:
        wrong = [risk for risk in _names(value) if risk not in RISKS]
        if wrong:
            raise ValueError(f"EXECUTOR_AUTO_APPLY takes 'low' and 'high', not {', '.join(map(repr, wrong))}")
        return value

    @property
    def approver_arns(self) -> frozenset[str]:
        return approver_names(self.approvers)

    @property
    def auto_apply_risks(self) -> frozenset[Risk]:
        return frozenset(risk for risk in ("low", "high") if risk in _names(self.auto_apply))
