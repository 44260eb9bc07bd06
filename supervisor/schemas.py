"""The supervisor's own types: the Diagnosis it submits, token usage, the tool provider and its errors.

The tool contract (tool names, arguments, responses) lives in ``mcp_server.contract`` and the fault classes
in ``supervisor.faults``; both are only imported here, never redefined.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Protocol, Self, runtime_checkable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from mcp_server.contract.registry import ToolName
from supervisor.diagnosis.precedents import Precedent, Recurrence
from supervisor.faults.registry import FaultType

TimelineKind = Literal["change", "first_failure", "failure", "alarm", "limit", "observation"]
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


def _iso8601(value: str) -> str:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("time must be ISO-8601 with its offset, e.g. '2026-11-23T01:02:03+00:00'") from None
    if parsed.tzinfo is None:
        raise ValueError("time must carry its UTC offset, e.g. '2026-11-23T01:02:03+00:00'")
    return value


IsoTime = Annotated[str, AfterValidator(_iso8601)]
EvidenceIndices = list[Annotated[int, Field(ge=0)]]
# A fault type outside fault_types: validated as one, but its schema names the type without repeating the enum
# (fault_types spells it out once; a wrong value is refused with the list).
CitedFaultType = Annotated[FaultType, WithJsonSchema({"type": "string"})]
_FAULT_TYPE = "A fault type, as in fault_types."


def _unique(values: list[FaultType]) -> list[FaultType]:
    if len(set(values)) != len(values):
        raise ValueError("fault_types must not contain duplicates")
    return values


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvidencePointer(_Model):
    """A value read from a tool response, pointed to precisely enough to be checked."""

    tool: ToolName = Field(description="The tool that answered it.")
    field: Annotated[str, AfterValidator(_dotted_path)] = Field(
        min_length=1,
        description="Dotted path to the value in that tool's response, list indices as segments, e.g. "
        "'events.3.message'.",
    )
    value: str = Field(
        min_length=1,
        description="The value at that path: its JSON whole, or a string whole or a part of 8+ characters "
        "that cuts no word or number.",
    )
    interpretation: str = Field(description="What it shows.")
    supports: CitedFaultType | None = Field(
        default=None,
        description="The fault type (as in fault_types) it supports; null for context.",
    )


class RemediationStep(_Model):
    """One step of the remediation plan, justified by evidence."""

    action: str = Field(description="Short imperative summary of the step.")
    details: str = Field(description="How to carry it out, precisely.")
    evidence_basis: list[Annotated[int, Field(ge=0)]] = Field(
        description="Indices into evidence of the pointers that justify this step."
    )
    risk_level: RiskLevel = Field(description="Risk of applying the step.")
    requires_approval: bool = Field(description="Whether a human must approve it first.")
    command: str | None = Field(
        default=None,
        description="The exact AWS CLI command, when the evidence determines it, e.g. 'aws lambda "
        "delete-function-concurrency --function-name orders-api'; checked, never executed.",
    )


class Trigger(_Model):
    """The change that started the failure, as CloudTrail recorded it."""

    event_name: str = Field(min_length=1, description="CloudTrail's eventName, e.g. 'DeleteRolePolicy'.")
    identity: str | None = Field(description="The event's identity ARN.")
    time: IsoTime
    seconds_before_first_failure: float | None = Field(default=None, ge=0)
    evidence: EvidenceIndices = Field(min_length=1, description="Its get_recent_changes event.")


class TimelineEntry(_Model):
    """One fact of the incident's timeline."""

    time: IsoTime
    kind: TimelineKind
    description: str = Field(min_length=1)
    evidence: EvidenceIndices = Field(min_length=1, description="Indices into evidence.")


class DiagnosisGap(_Model):
    """Something that could not be checked, and why."""

    source: str = Field(min_length=1, description="What could not be read, e.g. 'get_recent_changes'.")
    reason: str = Field(min_length=1, description="Why, and what that leaves open.")
    evidence: EvidenceIndices = Field(default_factory=list, description="Pointers that show it, if any.")


class RuledOut(_Model):
    """A hypothesis checked and rejected."""

    fault_type: CitedFaultType = Field(description=_FAULT_TYPE)
    reason: str = Field(min_length=1)
    evidence: EvidenceIndices = Field(
        min_length=1, description="Indices into evidence of the pointers that reject it."
    )


class ChangeReference(_Model):
    """A change as CloudTrail recorded it, cited from get_recent_changes."""

    event_name: str = Field(min_length=1)
    time: IsoTime
    evidence: EvidenceIndices = Field(min_length=1, description="Its get_recent_changes event.")


class ResolvedFault(_Model):
    """A fault a change caused and a later change undid, with no failure of that kind since: not current."""

    fault_type: CitedFaultType = Field(description=_FAULT_TYPE)
    reason: str = Field(min_length=1)
    caused_by: ChangeReference = Field(description="The change that caused it.")
    undone_by: ChangeReference = Field(description="The later change that undid it.")
    evidence: EvidenceIndices = Field(
        min_length=1,
        description="Indices into evidence showing it is over (config, metrics now).",
    )


ImpactKind = Literal[
    "messages_waiting",
    "oldest_message_age_seconds",
    "messages_in_dead_letter_queue",
    "events_dropped",
    "deliveries_failed",
    "notifications_failed",
    "record_age_ms",
]


class ImpactFigure(_Model):
    """What the failure holds back or has lost, counted from a tool answer: for an event-driven function
    what was lost matters as much as why."""

    kind: ImpactKind = Field(description="What is counted (the description says where each kind is read).")
    resource: str = Field(min_length=1, description="The queue, topic or function counted.")
    value: float = Field(ge=0, description="Exactly as the cited answer states it.")
    evidence: EvidenceIndices = Field(
        min_length=1, description="Indices into evidence: the pointer whose value is this figure."
    )


class DiagnosisSubmission(_Model):
    """What the model submits through ``submit_diagnosis``; checked in code before it becomes a Diagnosis."""

    root_cause: str = Field(min_length=1, description="One or two sentences.")
    fault_types: Annotated[list[FaultType], AfterValidator(_unique)] = Field(
        min_length=1, description="The fault classes found, each at most once; 'unknown' if none fits."
    )
    affected_resources: list[str] = Field(description="Names or ARNs of the resources involved.")
    severity: Severity = Field(description="Impact of the failure.")
    evidence: list[EvidencePointer] = Field(description="The tool-answer values it rests on.")
    remediation_plan: list[RemediationStep] = Field(description="Ordered steps to fix the failure.")
    confidence: float = Field(
        ge=0,
        le=1,
        description="How sure you are, 0 to 1; claims that do not check out lower it.",
    )
    trigger: Trigger | None = Field(default=None, description="The change that started it, if one is found.")
    timeline: list[TimelineEntry] = Field(default_factory=list, description="The facts, oldest first.")
    gaps: list[DiagnosisGap] = Field(default_factory=list, description="What could not be checked, and why.")
    ruled_out: list[RuledOut] = Field(
        default_factory=list, description="Fault types checked and rejected, each with the evidence."
    )
    resolved: list[ResolvedFault] = Field(
        default_factory=list,
        description="Faults a change caused and a later change undid, with no failure of that kind since.",
    )
    impact: list[ImpactFigure] = Field(
        default_factory=list,
        description="For an event-driven function: what is waiting or lost, each figure cited.",
    )

    def citations(self) -> list[tuple[str, list[int]]]:
        """Every entry that cites evidence, with where it is: ('remediation_plan.0', [1, 2]), ..."""
        cited = [(f"remediation_plan.{n}", s.evidence_basis) for n, s in enumerate(self.remediation_plan)]
        cited += [("trigger", self.trigger.evidence)] if self.trigger else []
        cited += [(f"timeline.{n}", entry.evidence) for n, entry in enumerate(self.timeline)]
        cited += [(f"gaps.{n}", gap.evidence) for n, gap in enumerate(self.gaps)]
        cited += [(f"ruled_out.{n}", entry.evidence) for n, entry in enumerate(self.ruled_out)]
        cited += [(f"impact.{n}", figure.evidence) for n, figure in enumerate(self.impact)]
        for n, fault in enumerate(self.resolved):
            cited += [(f"resolved.{n}", fault.evidence)]
            cited += [(f"resolved.{n}.caused_by", fault.caused_by.evidence)]
            cited += [(f"resolved.{n}.undone_by", fault.undone_by.evidence)]
        return cited

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        for where, indices in self.citations():
            for index in indices:
                if index >= len(self.evidence):
                    raise ValueError(
                        f"{where} refers to evidence {index}, "
                        f"but there are only {len(self.evidence)} evidence pointers"
                    )
        times = [datetime.fromisoformat(entry.time) for entry in self.timeline]
        if times != sorted(times):
            raise ValueError("timeline entries must be in time order, oldest first")
        for entry in self.ruled_out:
            if entry.fault_type in self.fault_types or entry.fault_type == "unknown":
                raise ValueError(
                    f"ruled_out lists '{entry.fault_type}', which is also reported (or is 'unknown')"
                )
        self._resolved_consistent()
        return self

    def _resolved_consistent(self) -> None:
        """Each resolved fault named, not also current, listed once, and undone after it was caused."""
        seen: set[str] = set()
        for n, entry in enumerate(self.resolved):
            fault = entry.fault_type
            if fault == "unknown":
                raise ValueError(f"resolved.{n} is 'unknown': only a named fault type can be resolved")
            if fault in self.fault_types:
                raise ValueError(
                    f"resolved.{n} lists '{fault}', which fault_types also reports: a fault is current or "
                    "resolved, not both. If it has failed since the change that undid it, keep it in "
                    "fault_types and drop it from resolved; otherwise remove it from fault_types"
                )
            if fault in seen:
                raise ValueError(f"resolved lists '{fault}' more than once: one entry per fault type")
            seen.add(fault)
            caused, undone = entry.caused_by.time, entry.undone_by.time
            if datetime.fromisoformat(undone) <= datetime.fromisoformat(caused):
                raise ValueError(
                    f"resolved.{n}: undone_by ({undone}) must be later than caused_by ({caused})"
                )


class PointerCheck(_Model):
    """The code's check of one evidence pointer against the tool responses of the run."""

    index: int = Field(ge=0, description="Position of the pointer in Diagnosis.evidence.")
    verified: bool
    reason: str = Field(description="Why the pointer does not check out; empty when verified.")


class EntryCheck(_Model):
    """The code's check of an entry that cites evidence or carries a command (trigger, timeline, ...)."""

    entry: str = Field(description="Where it is in the diagnosis, e.g. 'trigger' or 'remediation_plan.0'.")
    verified: bool
    reason: str = Field(description="Why it does not check out; empty when verified.")


class RefusedSupport(_Model):
    """A pointer cited for a fault from one of its sources, whose value does not mean that fault."""

    index: int = Field(ge=0, description="Position of the pointer in the submitted evidence.")
    reason: str = Field(min_length=1)


class FaultSupport(_Model):
    """How a reported fault type is backed: by pointers from sources the function's users cannot write whose
    values mean the fault."""

    fault_type: FaultType
    supported_by: list[int] = Field(description="Verified pointers from independent sources that back it.")
    detail: list[int] = Field(
        default_factory=list,
        description="Verified pointers cited for it that describe it (log lines, context; never support).",
    )
    missing: str = Field(default="", description="What support is missing; empty when supported.")
    refused: list[RefusedSupport] = Field(
        default_factory=list, description="Pointers cited for it whose values do not mean it."
    )


class Verification(_Model):
    """What the code found when it checked a submitted diagnosis against the run's tool responses."""

    pointers: list[PointerCheck]
    entries: list[EntryCheck] = Field(default_factory=list)
    support: list[FaultSupport] = Field(default_factory=list)
    unsupported_fault_types: list[FaultType] = Field(
        description="Reported fault types that no verified pointer from an independent source supports."
    )
    refinement_turns: int = Field(ge=0, description="Turns the model was given to fix failed claims.")
    claimed_confidence: float = Field(ge=0, le=1, description="The confidence the model submitted.")

    @property
    def passed(self) -> bool:
        checks: list[PointerCheck | EntryCheck] = [*self.pointers, *self.entries]
        refused = any(fault.refused for fault in self.support)
        return all(check.verified for check in checks) and not self.unsupported_fault_types and not refused

    @property
    def verified_count(self) -> int:
        return sum(check.verified for check in self.pointers)


class RefusedClaim(_Model):
    """A claim of the submission that did not verify, taken out of the diagnosis: where it was, what it
    said and why it was refused."""

    claim: str = Field(description="Where it was, e.g. 'fault_types.throttling', 'trigger', 'evidence.3'.")
    content: Any = Field(description="What it said, as submitted.")
    reason: str = Field(min_length=1)


class Diagnosis(DiagnosisSubmission):
    """The supervisor's conclusion about a failing Lambda function: only the claims that verified, with the
    code's check of the submission and the claims it refused.

    ``confidence`` is computed from what remains: never above the submitted one, 0 with no verified
    evidence, and lower the more of the submission was refused."""

    verification: Verification
    refused: list[RefusedClaim] = Field(
        default_factory=list, description="Submitted claims that did not verify, and why: not part of it."
    )
    # Read by code from the run's get_incident_history answer, after the claims verified: never evidence.
    precedents: list[Precedent] = Field(default_factory=list, description="Earlier incidents of its pattern.")
    recurrence: Recurrence | None = Field(default=None, description="Its pattern, when it keeps recurring.")


class TokenUsage(_Model):
    """LLM token usage of one diagnosis."""

    prompt_tokens: int = Field(ge=0)  # every input token, those read from or written to a prompt cache too
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)  # of prompt_tokens: read from the cache (cheaper)
    cache_write_tokens: int = Field(default=0, ge=0)  # of prompt_tokens: written to it (dearer)


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
    calls_from_text: int = Field(
        default=0, ge=0, description="Of tool_calls: written as the whole text of the reply, read as calls."
    )
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
