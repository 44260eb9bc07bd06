"""Configuration of the supervisor agent: one pydantic-settings class, read from the environment."""

from __future__ import annotations

from urllib.parse import urlparse

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from supervisor.agent.mcp_settings import McpClientSettings
from supervisor.incident.notify_settings import NotificationSettings
from supervisor.incident.recheck_settings import RecheckQueueSettings
from supervisor.incident.resources import CONTEXT_TABLE, STATE_TABLE
from supervisor.incident.store import RETENTION_DAYS
from supervisor.remediation.queue import RemediationQueueSettings


def _env(name: str) -> AliasChoices:
    """Read from the environment variable ``name`` (no SUPERVISOR_ prefix): names shared with the server
    and the deploy template."""
    return AliasChoices(name, name.lower())


class SupervisorSettings(
    BaseSettings, McpClientSettings, NotificationSettings, RecheckQueueSettings, RemediationQueueSettings
):
    """Everything else is read from SUPERVISOR_<FIELD>, e.g. SUPERVISOR_RECURSION_LIMIT."""

    model_config = SettingsConfigDict(env_prefix="SUPERVISOR_", extra="ignore", populate_by_name=True)

    supervisor_model: str = Field(
        validation_alias=_env("SUPERVISOR_MODEL"),
        default="rules",
        description="'rules' (offline), 'bedrock:<inference-profile or model id>' (current Claude models: "
        "a profile id such as us.anthropic.claude-sonnet-4-5-20250929-v1:0), 'openai:<model>' (OpenAI, or "
        "any OpenAI-compatible server: SUPERVISOR_OPENAI_BASE_URL), 'anthropic:<model>', or any "
        "'provider:model' init_chat_model knows.",
    )
    openai_base_url: str | None = Field(
        default=None,
        description="For 'openai:<model>': the OpenAI-compatible server's base URL, e.g. "
        "http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 (llama.cpp, vLLM); unset: OpenAI.",
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        description="For 'openai:<model>': the server's key; unset: OPENAI_API_KEY (a local server that "
        "asks for none needs neither).",
    )
    attempts: int = Field(default=2, ge=1, le=5, description="Runs tried on a retryable failure.")
    backoff_base: float = Field(default=2.0, ge=0, description="Seconds before retry n are base**n.")
    recursion_limit: int = Field(default=12, ge=3, description="Graph steps before the run gives up.")
    max_tool_calls_per_turn: int = Field(
        default=8, ge=1, description="Tool calls executed per model turn (enough for one call of each tool)."
    )
    tool_timeout: float = Field(default=30.0, gt=0, description="Seconds one tool call may take.")
    tool_response_max_bytes: int = Field(
        default=32_000, ge=1_000, description="Largest tool result shown to the model; longer ones are cut."
    )
    redact: bool = Field(
        default=True,
        description="Replace secrets and personal data in every tool answer before the model, the stored "
        "record or a notification sees it, as the MCP server does (for a server that does not). Off (false) "
        "only where the answers may be shown as they are.",
    )
    max_tokens_per_incident: int = Field(
        validation_alias=_env("MAX_TOKENS_PER_INCIDENT"),
        default=100_000,
        ge=1_000,
        description="Token budget of one diagnosis; reaching it forces a final turn.",
    )
    deadline_buffer_seconds: float = Field(
        default=90.0,
        ge=0,
        description="Remaining time under which the next model turn must be the final one.",
    )
    time_budget_seconds: float = Field(
        default=300.0, gt=0, description="Wall time of one diagnosis when no Lambda deadline applies."
    )
    llm_timeout: float = Field(default=60.0, gt=0, description="Seconds one model call may take.")
    llm_max_output_tokens: int = Field(
        default=8_192,
        ge=16,
        le=128_000,
        description="Most tokens one model reply may hold: a model that never stops is cut there.",
    )
    bedrock_max_attempts: int = Field(
        default=3, ge=1, le=10, description="Attempts per Bedrock request inside the AWS SDK."
    )
    incident_state_table: str = Field(
        validation_alias=_env("INCIDENT_STATE_TABLE"),
        default=STATE_TABLE,
        min_length=3,
        description="DynamoDB table of incident states (GSI status-updated_at-index).",
    )
    incident_context_table: str = Field(
        validation_alias=_env("INCIDENT_CONTEXT_TABLE"),
        default=CONTEXT_TABLE,
        min_length=3,
        description="DynamoDB table of diagnoses, reasoning chains and recorded tool results.",
    )
    retention_days: int = Field(
        validation_alias=_env("INCIDENT_RETENTION_DAYS"),
        default=RETENTION_DAYS,
        ge=1,
        le=3650,
        description="Days after its alarm an incident (state and context) is kept: DynamoDB's time to live "
        "deletes it some days later. get_incident_history reads 90 days by default.",
    )
    max_incidents_per_hour: int = Field(
        validation_alias=_env("MAX_INCIDENTS_PER_HOUR"),
        default=20,
        ge=1,
        description="Incidents created in the last hour above which new ones fail without an agent run.",
    )
    stale_after_seconds: int = Field(
        validation_alias=_env("STALE_AFTER_SECONDS"),
        default=600,
        ge=1,
        description="An INVESTIGATING incident not updated for this long is re-entered by a redelivery.",
    )
    cloudtrail_delivery_bound_seconds: int = Field(
        validation_alias=_env("CLOUDTRAIL_DELIVERY_BOUND_SECONDS"),
        default=900,
        ge=0,
        le=900,
        description="A diagnosis whose first failure is younger than this is provisional: CloudTrail may not "
        "have delivered the change that started it yet. It is re-checked once the first failure is this "
        "old (at most 900, SQS's longest message delay); 0: every diagnosis is final at once.",
    )
    remediation: bool = Field(
        validation_alias=_env("REMEDIATION"),
        default=False,
        description="Plan a fix for each final diagnosis (DIAGNOSED -> PLANNING -> AWAITING_APPROVAL, or "
        "NO_PLAN with why) and send it to the executor's queue (REMEDIATION_QUEUE_URL). Off: incidents end "
        "at DIAGNOSED.",
    )
    model_critic: bool = Field(
        default=True,
        description="Ask the supervisor's model (never 'rules') to review each plan the Critic in code "
        "passed: its objections refuse steps; it cannot pass a step the code refused.",
    )
    approval_seconds: int = Field(
        default=3600, ge=60, le=86_400, description="How long a plan awaits a person's approval."
    )
    recovery_seconds: int = Field(
        default=180,
        ge=10,
        le=600,
        description="How long an applied plan is given to show recovery before it is undone.",
    )
    incident_window_seconds: int = Field(
        default=3600,
        ge=0,
        description="Alarms for a function within this long of its last incident join that incident; "
        "0 makes every alarm episode its own incident.",
    )

    @field_validator("openai_base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        url = urlparse(value or "")
        if value is not None and (url.scheme not in ("http", "https") or not url.netloc):
            raise ValueError(
                "SUPERVISOR_OPENAI_BASE_URL must be an http(s) URL such as http://127.0.0.1:11434/v1, "
                f"not {value!r}"
            )
        return value

    @field_validator("supervisor_model")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        if value != "rules" and (":" not in value or not all(value.split(":", 1))):
            raise ValueError(
                f"SUPERVISOR_MODEL must be 'rules' or 'provider:model' (e.g. "
                f"'bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0'), not {value!r}"
            )
        return value
