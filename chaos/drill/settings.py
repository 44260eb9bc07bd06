"""Configuration of the drill: one pydantic-settings class, read from DRILL_<FIELD>.

Only the drill's own knobs live here. The supervisor keeps its production defaults (SupervisorSettings),
except the MCP timeout of the timeout scenario, which would otherwise wait 2 x 10 s for a black hole.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from chaos.sandbox.sandbox import MAX_TIME_SCALE


class DrillSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DRILL_", extra="ignore")

    mcp_timeout_seconds: float = Field(
        default=1.0, gt=0, le=30, description="MCP connect/handshake timeout in the MCP-timeout scenario."
    )
    reset_connections: int = Field(
        default=1, ge=1, le=5, description="Connections the flapping MCP proxy resets before it forwards."
    )
    burst_size: int = Field(default=4, ge=2, le=50, description="Concurrent invocations of a burst.")
    burst_work_seconds: float = Field(
        default=0.5, ge=0.1, le=2.5, description="Work per burst invocation, so that they overlap."
    )
    alarm_interval_seconds: float = Field(
        default=0.25,
        gt=0,
        le=60,
        description="How often the sandbox evaluates alarms (its own default is every second): AWS evaluates "
        "a period about a minute after it ends, the drill only needs the order of events kept.",
    )
    time_scale: float = Field(
        default=450.0,
        ge=1,
        le=MAX_TIME_SCALE,
        description="How many times faster than AWS each lane's clocks run (incident-sandbox --time-scale): "
        "CloudTrail delivers each event 1 to 9 minutes after its call divided by this, its lookups allow 2 a "
        "second times this (the MCP server paced the same), and the pipeline's delivery bound is 900 s "
        "divided by this (rounded up), after which each provisional diagnosis is re-checked.",
    )
    alarm_wait_seconds: float = Field(
        default=20.0,
        gt=0,
        le=60,
        description="How long to wait for a scenario's alarms to reach SNS (a passing scenario waits only "
        "until they are all in).",
    )
    supervisor_timeout_seconds: int = Field(
        default=300, ge=30, le=900, description="The supervisor Lambda's timeout (its deadline per event)."
    )
    jobs: int = Field(
        default=4,
        ge=1,
        le=8,
        description="Lanes the scenarios are split over, each an incident-drill process with its own "
        "sandbox, MCP server and supervisor (--jobs overrides it; --keep-running runs one).",
    )
    remediate: bool = Field(
        default=True,
        description="Turn the supervisor's REMEDIATION on: each final diagnosis is planned, and a scenario "
        "whose fix the stage checks by calling the function has it applied by the product's executor once "
        "a person approves it with incident-remediate (the others are applied as the operator). Off: every "
        "fix is applied as the operator.",
    )
    auto_apply: str = Field(
        default="",
        pattern=r"^(|low|low,high)$",
        description="The executor's EXECUTOR_AUTO_APPLY in the drill: a plan whose every step has one of "
        "these risks is applied without the person's approval (bench.remediation times them). Empty: a "
        "person approves every plan.",
    )
