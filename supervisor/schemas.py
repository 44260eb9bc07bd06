"""The supervisor's own types: the Diagnosis it submits, token usage, the tool provider and its errors.

The tool contract (tool names, arguments, responses) lives in ``mcp_server.contract`` and is only
imported here, never redefined.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, Self, runtime_checkable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from mcp_server.contract import ToolName

FaultType = Literal["permission_loss", "throttling", "network_block", "unknown"]
Severity = Literal["critical", "high", "medium", "low"]
RiskLevel = Literal["low", "medium", "high"]
ErrorCategory = Literal[
    "mcp_connection",
    "mcp_init",
    "bedrock_auth",
    "bedrock_transient",
    "config",
    "storage",
    "unknown",
]


def _dotted_path(value: str) -> str:
    if value != value.strip() or any(part == "" for part in value.split(".")):
        raise ValueError(
            "field must be a dotted path into the tool's response with list indices as segments, "
            "e.g. 'events.3.message' or 'inline_policies.data-processor-access.Statement.0.Action'"
        )
    return value


def _unique(values: list[FaultType]) -> list[FaultType]:
    if len(set(values)) != len(values):
        raise ValueError("fault_types must not contain duplicates")
    return values


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvidencePointer(_Model):
    """A value read from a tool response, pointed to precisely enough to be checked."""

    tool: ToolName = Field(description="The tool whose response holds the evidence.")
    field: Annotated[str, AfterValidator(_dotted_path)] = Field(
        min_length=1,
        description="Dotted path to the value in that tool's response, list indices as segments, "
        "e.g. 'inline_policies.data-processor-access.Statement.0.Action' or 'events.3.message'.",
    )
    value: str = Field(
        min_length=1,
        description="The value found at that path, quoted verbatim: a string value or a part of it, or the "
        "JSON of a number, boolean, null, list or object.",
    )
    interpretation: str = Field(description="What this value shows about the failure.")
    supports: FaultType | None = Field(
        default=None,
        description="The fault type this pointer is evidence for; null for context that supports none.",
    )


class RemediationStep(_Model):
    """One step of the remediation plan, justified by evidence."""

    action: str = Field(description="Short imperative summary of the step.")
    details: str = Field(description="How to carry the step out, precisely enough to execute.")
    evidence_basis: list[Annotated[int, Field(ge=0)]] = Field(
        description="Indices into Diagnosis.evidence of the pointers that justify this step."
    )
    risk_level: RiskLevel = Field(description="Risk of applying the step.")
    requires_approval: bool = Field(description="Whether a human must approve the step before it is applied.")


class DiagnosisSubmission(_Model):
    """What the model submits through ``submit_diagnosis``; checked in code before it becomes a Diagnosis."""

    root_cause: str = Field(min_length=1, description="The root cause, in one or two sentences.")
    fault_types: Annotated[list[FaultType], AfterValidator(_unique)] = Field(
        min_length=1, description="The fault classes found, each at most once; 'unknown' if none fits."
    )
    affected_resources: list[str] = Field(description="Names or ARNs of the resources involved.")
    severity: Severity = Field(description="Impact of the failure.")
    evidence: list[EvidencePointer] = Field(description="The tool-response values the diagnosis rests on.")
    remediation_plan: list[RemediationStep] = Field(description="Ordered steps to fix the failure.")
    confidence: float = Field(
        ge=0,
        le=1,
        description="How sure you are, 0 to 1. Claims whose evidence does not check out lower it in code.",
    )

    @model_validator(mode="after")
    def _evidence_basis_in_range(self) -> Self:
        for number, step in enumerate(self.remediation_plan):
            for index in step.evidence_basis:
                if index >= len(self.evidence):
                    raise ValueError(
                        f"remediation_plan.{number}.evidence_basis refers to evidence {index}, "
                        f"but there are only {len(self.evidence)} evidence pointers"
                    )
        return self


class PointerCheck(_Model):
    """The code's check of one evidence pointer against the tool responses of the run."""

    index: int = Field(ge=0, description="Position of the pointer in Diagnosis.evidence.")
    verified: bool
    reason: str = Field(description="Why the pointer does not check out; empty when verified.")


class Verification(_Model):
    """What the code found when it checked a submitted diagnosis against the run's tool responses."""

    pointers: list[PointerCheck]
    unsupported_fault_types: list[FaultType] = Field(
        description="Reported fault types that no verified pointer supports."
    )
    refinement_turns: int = Field(ge=0, description="Turns the model was given to fix failed claims.")
    claimed_confidence: float = Field(ge=0, le=1, description="The confidence the model submitted.")

    @property
    def passed(self) -> bool:
        return all(check.verified for check in self.pointers) and not self.unsupported_fault_types

    @property
    def verified_count(self) -> int:
        return sum(check.verified for check in self.pointers)


class Diagnosis(DiagnosisSubmission):
    """The supervisor's conclusion about a failing Lambda function, with the code's check of its evidence.

    ``confidence`` is the submitted one capped in code: 0 with no verified evidence, and lower when
    pointers fail or a fault type has no verified support."""

    verification: Verification


class TokenUsage(_Model):
    """LLM token usage of one diagnosis."""

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)


ToolCallStatus = Literal[
    "ok", "error", "timeout", "invalid_response", "invalid_args", "unknown_tool", "dropped", "refused"
]


class LlmCallRecord(_Model):
    """Accounting of one model call."""

    turn: int = Field(ge=1)
    status: Literal["ok", "error"]
    latency_ms: float = Field(ge=0)
    usage: TokenUsage
    forced_final: bool = Field(description="Only submit_diagnosis was offered (deadline or token cap).")
    tool_calls: list[str] = Field(description="Names of the tools the model asked for.")
    error: str | None = None


class ToolCallRecord(_Model):
    """Accounting of one tool call the model asked for, executed or not."""

    turn: int = Field(ge=1)
    tool: str
    arguments: dict[str, Any]
    status: ToolCallStatus
    latency_ms: float = Field(ge=0)
    request_bytes: int = Field(ge=0)
    response_bytes: int = Field(ge=0, description="Size of the tool's answer before any truncation.")
    truncated: bool = False
    repaired_arguments: bool = False
    error: str | None = None


class ToolResult(_Model):
    """A tool call that returned valid data: what was asked and the validated answer. The evidence a
    diagnosis is checked against, and what a replay serves back."""

    tool: ToolName
    arguments: dict[str, Any]
    result: dict[str, Any]


@runtime_checkable
class ToolProvider(Protocol):
    """Anything that can call the diagnostic tools (the MCP client, a test double)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Call a tool by name and return the raw JSON string."""
        ...


class AgentError(Exception):
    """A supervisor failure with a category that tells the operator where to look."""

    def __init__(self, category: ErrorCategory, message: str, *, permanent: bool = False) -> None:
        super().__init__(category, message)
        self.category: ErrorCategory = category
        self.message = message
        self.permanent = permanent  # retrying cannot help, whatever the category (a refused key)

    def __str__(self) -> str:
        return f"[{self.category}] {self.message}"
