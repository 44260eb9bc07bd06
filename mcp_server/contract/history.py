"""``get_incident_history``: a function's past incidents and how each ended, read from the incident tables
the supervisor keeps. Also what those tables hold for it, declared here once: the supervisor writes these
attributes and indexes, the tool reads them.

Only structured outcomes are read (fault types, the trigger's event name, the resources, the fix's calls,
the end, its times), never a tool answer or a diagnosis's prose.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments
from mcp_server.contract.declaration import ToolDeclaration

# incident-state's indexes the tool queries (the supervisor's store creates them: INDEXES there).
FUNCTION_INDEX: Final[str] = "function_name-updated_at-index"
HISTORY_INDEX: Final[str] = "history_key-observed_at-index"  # sparse: only incidents with a diagnosis
# The attributes the supervisor adds for history; history_key is "<function>#<primary fault>".
HISTORY_KEY, PRIMARY_FAULT, TRIGGER_EVENT, RESOURCES = (
    "history_key",
    "primary_fault",
    "trigger_event",
    "resources",
)
FIX, FIX_VERDICT, RESOLVED_BY, RECOVERED_AT = "fix", "fix_verdict", "resolved_by", "recovered_at"
# What became of the fix: proven to hold; applied and proven not to help (undone); applied but never judged
# (its run died: undone); never applied (a precondition voided it); refused by a person.
FixVerdict = Literal["held", "did_not_help", "not_verified", "not_applied", "rejected"]
# Epoch seconds after which DynamoDB's time to live deletes an item, some days later: until then a read
# still returns it (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html).
EXPIRES_AT: Final[str] = "expires_at"
# The statuses an incident ends in (supervisor.incident.lifecycle's TERMINAL and REMEDIATION_ENDS, which a
# test holds equal): the supervisor's package is not the server's to import.
_DIAGNOSIS_ENDS: Final = frozenset({"DIAGNOSED", "FAILED", "ERROR"})
_FIX_ENDS: Final = frozenset(
    {"REMEDIATED", "NO_PLAN", "REJECTED", "EXPIRED", "NOT_REMEDIATED", "UNDO_FAILED"}
)
ENDED: Final = _DIAGNOSIS_ENDS | _FIX_ENDS
MAX_RESOURCES: Final[int] = 10  # of each incident, as stored
MAX_LISTED: Final[int] = 20  # incidents in one answer, the most similar (then the newest) first
MAX_READ: Final[int] = 1_000  # incidents read for one answer, newest first; the patterns count these
RECURRING_DAYS, RECURRING_COUNT = 30, 3
WEIGHTS: Final[dict[str, float]] = {"fault class": 0.5, "trigger kind": 0.3, "resource": 0.2}
SIMILARITY_RULE: Final[str] = (
    "similarity = the sum of the weights of what the past incident shares with the arguments given: "
    + ", ".join(f"{name} {weight:g}" for name, weight in WEIGHTS.items())
    + " (fault class: fault_type is one of its fault types; trigger kind: the same trigger_event; "
    "resource: resource is one its diagnosis named, by name or ARN). Over the arguments given only: "
    "asked with none, no similarity is computed."
)

FaultTypeName = Annotated[
    str, Field(pattern=r"^[a-z][a-z_]{1,47}$", description="A fault type, e.g. 'timeout'.")
]


class GetIncidentHistoryArgs(TargetArguments):
    """Arguments of ``get_incident_history``: the function, and what the current incident looks like."""

    fault_type: FaultTypeName | None = Field(
        default=None,
        description="The current incident's fault type: only past incidents whose diagnosis named it first "
        "are read, and similarity counts it.",
    )
    trigger_event: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z][A-Za-z0-9]{1,127}$",
        description="The CloudTrail event name of the current incident's trigger, e.g. 'UpdateAlias'.",
    )
    resource: str | None = Field(
        default=None, min_length=1, max_length=2048, description="A resource the current incident involves."
    )
    days: int = Field(default=90, ge=1, le=365, description="How far back, in days.")


class PastCall(ContractModel):
    """One call of a past incident's fix, as the executor's plan held it."""

    service: str
    operation: str
    parameters: dict[str, Any]


class PastIncident(ContractModel):
    incident_id: str
    observed_at: str = Field(description="When its alarm fired (ISO-8601).")
    status: str = Field(description="How it ended: a diagnosis's end or a fix's (REMEDIATED: the fix held).")
    fault_types: list[str] = Field(description="Its diagnosis's fault types, the primary one first.")
    trigger_event: str | None = Field(default=None, description="Its trigger's event name; None: none found.")
    resources: list[str] = Field(default_factory=list, description="What its diagnosis named as affected.")
    fix: list[PastCall] = Field(
        default_factory=list,
        description="The calls of the plan made for it (applied unless the status says otherwise); "
        "empty: none was planned, or it was fixed by hand.",
    )
    fix_verdict: FixVerdict | None = Field(
        default=None,
        description="held: the executor proved recovery; did_not_help: it proved none and undid the fix; "
        "not_verified: its run died before judging (undone); not_applied: a precondition voided it; "
        "rejected: a person refused it. None: no plan reached the executor.",
    )
    resolved_by: str | None = Field(default=None, description="Who approved the fix ('automatic': policy).")
    seconds_to_recover: float | None = Field(
        default=None, description="From the alarm to the fix's proven recovery; None unless REMEDIATED."
    )
    similarity: float | None = Field(default=None, ge=0, le=1, description="See similarity_rule.")
    shared: list[str] = Field(default_factory=list, description="What it shares with the arguments given.")


class Pattern(ContractModel):
    """Incidents of the same primary fault and trigger kind among those read."""

    fault_type: str
    trigger_event: str | None
    incidents: int
    in_last_30_days: int
    recurring: bool = Field(description=f"{RECURRING_COUNT} or more in the last {RECURRING_DAYS} days.")
    fixes_applied: int = Field(description="Incidents whose fix the executor applied (held or undone).")
    fixes_held: int = Field(description="Of those, the ones whose recovery it proved (fix_verdict held).")
    mean_seconds_to_recover: float | None = Field(default=None, description="Over the fixes that held.")


class IncidentHistoryResponse(ContractModel):
    """Answer of ``get_incident_history``: corroboration, never evidence of the current failure."""

    function_name: str
    window_start: str = Field(description="ISO-8601: incidents observed from then are read.")
    incidents_read: int = Field(ge=0, description=f"Ended incidents read (the newest {MAX_READ:,} at most).")
    incidents: list[PastIncident] = Field(
        description=f"At most {MAX_LISTED}, the most similar first, then the newest."
    )
    patterns: list[Pattern] = Field(description="By primary fault and trigger kind, the most frequent first.")
    similarity_rule: str = Field(default=SIMILARITY_RULE, description="How similarity is computed.")
    gaps: Gaps = Field(default_factory=list)


GET_INCIDENT_HISTORY = ToolDeclaration(
    name="get_incident_history",
    title="Past incidents",
    description=(
        "The function's past incidents from this toolkit's own records (never a tool answer): each one's "
        "fault types, trigger, the fix's calls, how it ended (REMEDIATED: the fix held), who approved it "
        "and how long recovery took, scored for similarity to the arguments; and recurring patterns. "
        "Corroboration only: a past incident never shows what fails now."
    ),
    arguments=GetIncidentHistoryArgs,
    response=IncidentHistoryResponse,
    implementation="mcp_server.tools.incident_history:incident_history",
    reads=(("dynamodb", "Query"),),
    order=90,
    offered_to_agent=False,  # read once by the supervisor's graph, before the model's first turn
)
