"""The Critic, in code: every draft step is reviewed before anyone sees it. A step passes only if its
operation is on the allowlist with parameters it accepts on the state read, it changes only the incident's
function and the resources the diagnosis verified, it quotes no redacted value, and its undo is itself an
allowlisted call on the same resources. The risk of a step that passes is the allowlist's."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mcp_server.secret_kinds import quotes_a_placeholder
from supervisor.remediation.change_history import ChangeHistory
from supervisor.remediation.operation import function_name
from supervisor.remediation.operations import BY_CALL
from supervisor.remediation.plan import DraftStep, Plan, PlanStep, Recovery, RecoveryKind
from supervisor.schemas import Diagnosis

# Faults whose recovery is records moving again: a stopped source, or bad input a mapping must now skip
# (the bad record still fails until it is skipped: executor.recovery).
RECORDS_FLOW: frozenset[str] = frozenset({"event_source_stopped", "bad_input"})


@dataclass(frozen=True)
class Refusal:
    step: int  # 1-based, in the draft
    reason: str


@dataclass
class Review:
    refusals: list[Refusal] = field(default_factory=list)
    plan: Plan | None = None  # when every step passed


def review(
    steps: list[DraftStep],
    diagnosis: Diagnosis,
    *,
    incident_id: str,
    function: str,
    recovery_seconds: int,
    history: ChangeHistory | None = None,
) -> Review:
    """Review the Resolver's ``steps`` for the incident on ``function``; a plan only when all pass.
    ``history``: the diagnosis's change history (``read_history``): no step sets again what the trigger
    set, and a setting put back takes a value recorded before it (none known: none put back)."""
    verified = {function, *(function_name(name) for name in diagnosis.affected_resources)}
    result = Review()
    passed: list[PlanStep] = []
    known = history or ChangeHistory()
    for number, step in enumerate(steps, start=1):
        reason = _refusal(step, verified)  # first: whether the operation is on the allowlist at all
        operation = BY_CALL[(step.call.service, step.call.operation)] if reason is None else None
        if operation is not None:
            reason = known.set_again(step.call) or known.unrecorded(step.call, operation.recorded)
        if reason is not None or operation is None:
            result.refusals.append(Refusal(number, str(reason)))
            continue
        passed.append(PlanStep(**step.model_dump(), risk=operation.risk))
    if passed and not result.refusals:
        kind: RecoveryKind = (
            "records_flow" if RECORDS_FLOW & set(diagnosis.fault_types) else "invocations_succeed"
        )
        version = next(
            (s.call.params["FunctionVersion"] for s in passed if s.call.operation == "UpdateAlias"), None
        )
        recovery = Recovery(kind=kind, function=function, within_seconds=recovery_seconds, version=version)
        result.plan = Plan(incident_id=incident_id, function=function, steps=tuple(passed), recovery=recovery)
    return result


def _refusal(step: DraftStep, verified: set[str]) -> str | None:
    call, undo = step.call, step.inverse
    operation = BY_CALL.get((call.service, call.operation))
    if operation is None:
        return f"{call.service} {call.operation} is not on the allowlist of remediation operations"
    if (reason := operation.refusal(call.params, step.precondition)) is not None:
        return reason
    touched = set(operation.targets(call.params, step.precondition))
    if outside := sorted(touched - verified):
        return (
            f"it changes {', '.join(outside)}: neither the incident's function nor a resource the diagnosis "
            "verified"
        )
    if quotes_a_placeholder(json.dumps(call.params)):
        return "it quotes a redacted value's placeholder: it would set the placeholder, not the value"
    inverse = BY_CALL.get((undo.service, undo.operation))
    if inverse is None:
        return f"its undo, {undo.service} {undo.operation}, is not an allowlisted operation"
    if outside := sorted(set(inverse.targets(undo.params, step.precondition)) - touched):
        return f"its undo changes {', '.join(outside)}, which the step does not"
    return None
