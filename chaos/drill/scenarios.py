"""The drill's scenarios: what is broken, what traffic then hits the function, and what must follow."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from chaos.faults.chaos import Fault
from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE

# one: a single invocation. burst: concurrent invocations that overlap. missing-key: an invocation for
# an object that does not exist (an application error, not a platform fault).
Traffic = Literal["one", "burst", "missing-key"]
# Faults outside AWS, between the supervisor and what it depends on.
Infra = Literal["mcp-down", "bedrock-403", "mcp-timeout", "mcp-flapping"]
# Which names the root cause must mention: the role, the function, the security group.
Resource = Literal["role", "function", "security-group"]


@dataclass(frozen=True)
class Injection:
    fault: Fault
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        shown = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.fault.name}({shown})" if shown else self.fault.name


@dataclass(frozen=True)
class Stage:
    """Inject these faults, then send this traffic."""

    inject: tuple[Injection, ...]
    traffic: Traffic = "one"


@dataclass(frozen=True)
class Expected:
    """What must be in incident-state when the scenario's alarms have been handled. ``incidents`` 0
    means no alarm may fire at all."""

    incidents: int = 1
    status: str = "DIAGNOSED"
    category: str | None = None
    fault_types: frozenset[str] = frozenset()
    names: tuple[Resource, ...] = ()

    @property
    def label(self) -> str:
        if self.incidents == 0:
            return "no alarm"
        if self.status == "DIAGNOSED":
            return "+".join(sorted(self.fault_types))
        return f"{self.status}/{self.category}"


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    stages: tuple[Stage, ...]
    expected: Expected
    infra: Infra | None = None
    hostile_logs: bool = False  # write prompt-injection lines into the log group first

    @property
    def injections(self) -> tuple[Injection, ...]:
        return tuple(i for stage in self.stages for i in stage.inject)


S3 = Injection(REVOKE_S3)
CLOUDWATCH = Injection(REVOKE_CLOUDWATCH)
PERMISSION = frozenset({"permission_loss"})
_ALARM_SOURCE = (Stage((S3,)),)  # infrastructure scenarios need a real alarm to investigate

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("healthy", "healthy control: no fault, no alarm", (Stage(()),), Expected(incidents=0)),
    Scenario(
        "revoke-s3",
        "S3 permissions revoked from the role",
        (Stage((S3,)),),
        Expected(fault_types=PERMISSION, names=("role",)),
    ),
    Scenario(
        "revoke-cloudwatch",
        "CloudWatch Logs policy detached: the function runs but logs nothing",
        (Stage((CLOUDWATCH,)),),
        Expected(fault_types=PERMISSION, names=("role",)),
    ),
    Scenario(
        "revoke-both",
        "S3 and CloudWatch Logs permissions revoked: the Errors and the log-silence alarm both fire",
        (Stage((S3, CLOUDWATCH)),),
        Expected(incidents=2, fault_types=PERMISSION, names=("role",)),
    ),
    Scenario(
        "throttle-0",
        "reserved concurrency 0",
        (Stage((Injection(THROTTLE, {"concurrency": 0}),)),),
        Expected(fault_types=frozenset({"throttling"}), names=("function",)),
    ),
    Scenario(
        "throttle-1-burst",
        "reserved concurrency 1 under a burst",
        (Stage((Injection(THROTTLE, {"concurrency": 1}),), "burst"),),
        Expected(fault_types=frozenset({"throttling"}), names=("function",)),
    ),
    Scenario(
        "network-block",
        "HTTPS egress removed from the security group",
        (Stage((Injection(BLOCK_EGRESS),)),),
        Expected(fault_types=frozenset({"network_block"}), names=("security-group",)),
    ),
    Scenario(
        "two-faults",
        "S3 revoked, then reserved concurrency 0: two alarms, both faults in each diagnosis",
        (Stage((S3,)), Stage((Injection(THROTTLE, {"concurrency": 0}),))),
        Expected(
            incidents=2, fault_types=frozenset({"permission_loss", "throttling"}), names=("role", "function")
        ),
    ),
    Scenario(
        "prompt-injection",
        "hostile lines in the logs, then an application error: nothing planted is believed",
        (Stage((), "missing-key"),),
        Expected(fault_types=frozenset({"unknown"})),
        hostile_logs=True,
    ),
    Scenario(
        "mcp-down",
        "MCP server down (nothing listening)",
        _ALARM_SOURCE,
        Expected(status="ERROR", category="mcp_connection"),
        infra="mcp-down",
    ),
    Scenario(
        "bedrock-auth",
        "Bedrock answers AccessDeniedException",
        _ALARM_SOURCE,
        Expected(status="ERROR", category="bedrock_auth"),
        infra="bedrock-403",
    ),
    Scenario(
        "mcp-timeout",
        "MCP server accepts and never answers",
        _ALARM_SOURCE,
        Expected(status="ERROR", category="mcp_connection"),
        infra="mcp-timeout",
    ),
    Scenario(
        "mcp-retry-recovery",
        "MCP port refused, then open: the retry succeeds",
        _ALARM_SOURCE,
        Expected(fault_types=PERMISSION, names=("role",)),
        infra="mcp-flapping",
    ),
)
