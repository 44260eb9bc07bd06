"""A remediation plan: the exact calls, each with the state it expects to find and the call that undoes it,
and the digest an approval binds."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Risk = Literal["low", "high"]
RecoveryKind = Literal["invocations_succeed", "records_flow"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ApiCall(_Frozen):
    """One AWS API call: botocore's service and operation names and the parameters as boto3 takes them."""

    service: str = Field(min_length=1)
    operation: str = Field(min_length=1)
    params: dict[str, Any]


class DraftStep(_Frozen):
    """A call the Resolver proposes, the state of what it changes as read just before (the precondition:
    the executor applies the call only on that same state) and the call that puts that state back."""

    action: str = Field(min_length=1, description="What the step does, for people.")
    call: ApiCall
    precondition: dict[str, Any]
    inverse: ApiCall


class PlanStep(DraftStep):
    """A step the Critic passed, with the risk it gave it (from the allowlist, never from a model)."""

    risk: Risk


class Recovery(_Frozen):
    """What "working again" means for the plan, and how long it is given to show."""

    kind: RecoveryKind
    function: str = Field(min_length=1)
    within_seconds: int = Field(gt=0)
    # The version the fix makes the function run (an alias moved back): only its invocations show recovery;
    # one routed to the old version before the fix, and started after it, decides nothing.
    version: str | None = None


class Plan(_Frozen):
    incident_id: str = Field(min_length=1)
    function: str = Field(min_length=1)
    steps: tuple[PlanStep, ...] = Field(min_length=1)
    recovery: Recovery
    # Past incidents of the same pattern where these same calls held, and where they were proven not to
    # help (supervisor.remediation.precedent): bound by the digest like every call.
    precedents: tuple[str, ...] = ()
    failed_before: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        """SHA-256 of the plan's canonical JSON: every call, parameter, precondition, inverse and risk."""
        return plan_digest(self.model_dump(mode="json"))


def plan_digest(document: dict[str, Any]) -> str:
    """The digest of a plan as JSON (a stored plan is re-checked with this, not with a re-parsed model)."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
