"""From a final diagnosis to a plan awaiting a person's approval, or to NO_PLAN with why: the supervisor
mediates between the Resolver (which drafts) and the Critic (which reviews), and records the outcome.

    DIAGNOSED (final) -> PLANNING -> AWAITING_APPROVAL   the plan, its digest and its approval deadline
                                  -> NO_PLAN             what the Resolver left out, what the Critic refused

The plan and its review are kept in incident-context (``plan``, ``plan_review``); the incident-state item
carries the digest and the deadline the approval gate checks (``executor.approvals``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from supervisor.incident.signals import stamp
from supervisor.incident.store import IncidentStateError, IncidentStore, Item
from supervisor.remediation.critic import review
from supervisor.remediation.operation import Reader
from supervisor.remediation.plan import Plan, plan_digest
from supervisor.remediation.resolver import resolve
from supervisor.schemas import Diagnosis

PLAN: Final[str] = "plan"  # incident-context: the plan's JSON, exactly as its digest was computed
PLAN_REVIEW: Final[str] = "plan_review"  # incident-context: the Resolver's and the Critic's findings
PLAN_DIGEST: Final[str] = "plan_digest"
APPROVAL_DEADLINE: Final[str] = "approval_expires_at"


@dataclass(frozen=True)
class PlanningLimits:
    recovery_seconds: int  # how long the fix is given to show recovery
    approval_seconds: int  # how long a person has to approve the plan


def plan_incident(
    store: IncidentStore, incident: Item, diagnosis: Diagnosis, *, read: Reader, limits: PlanningLimits
) -> Item:
    """Plan the fix of the final DIAGNOSED ``incident``; its item after the plan (AWAITING_APPROVAL or
    NO_PLAN). Raises TransitionConflict when another writer moved it first, and IncidentStateError when
    the diagnosis is provisional."""
    incident_id, function = str(incident["incident_id"]), str(incident["function_name"])
    if incident.get("final") is False:
        raise IncidentStateError(f"incident {incident_id}: a provisional diagnosis is never planned")
    planning = store.transition(
        incident_id, "DIAGNOSED", "PLANNING", expected_updated_at=str(incident["updated_at"])
    )
    draft = resolve(diagnosis, final=True, read=read)
    verdict = review(
        draft.steps,
        diagnosis,
        incident_id=incident_id,
        function=function,
        recovery_seconds=limits.recovery_seconds,
    )
    findings = {
        "unplanned": draft.unplanned,
        "refused": [{"step": r.step, "reason": r.reason} for r in verdict.refusals],
    }
    plan = verdict.plan
    stored: dict[str, object] = {PLAN_REVIEW: json.dumps(findings)}
    if plan is not None:
        stored[PLAN] = json.dumps(plan.model_dump(mode="json"))
    store.update_context(incident_id, stored)
    seen = str(planning["updated_at"])
    if plan is None:
        reasons = draft.unplanned + [f"step {r.step} refused: {r.reason}" for r in verdict.refusals]
        why = "no safe plan: " + ("; ".join(reasons) if reasons else "the diagnosis names no fix")
        return store.transition(incident_id, "PLANNING", "NO_PLAN", expected_updated_at=seen, reason=why)
    deadline = stamp(store.clock() + timedelta(seconds=limits.approval_seconds))
    return store.transition(
        incident_id,
        "PLANNING",
        "AWAITING_APPROVAL",
        expected_updated_at=seen,
        headline={PLAN_DIGEST: plan.digest, APPROVAL_DEADLINE: deadline, "plan_steps": len(plan.steps)},
    )


def stored_plan(store: IncidentStore, incident_id: str) -> tuple[Plan, str] | None:
    """The plan kept for ``incident_id`` and the digest of its stored JSON (computed from the text as
    stored, so a plan changed after its approval no longer matches it); None when none was made."""
    context = store.get_context(incident_id) or {}
    text = context.get(PLAN, {}).get("S")
    if not text:
        return None
    document = json.loads(text)
    return Plan.model_validate(document), plan_digest(document)
