"""Only verified claims stand: a submission, once its refinement turns are spent, with every claim that did
not verify taken out and kept apart with the reason.

A pointer that does not hold leaves the evidence; a pointer whose value does not mean the fault it was cited
for stays as context (``supports`` null); an entry that fails its check (a trigger, a step, a resolved
fault, ...) leaves; a fault type without the support its class asks for leaves (``unknown`` when none is
left), and with it the submitted root cause and the steps that fix only such faults. The rest is verified
again, since what was taken out may have been what another claim rested on, until nothing more falls. The
confidence is computed from what remains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from supervisor.diagnosis import evidence
from supervisor.faults.registry import UNKNOWN
from supervisor.schemas import DiagnosisSubmission, EvidencePointer, RefusedClaim, ResolvedFault, Verification

_Cites = Literal["timeline", "gaps", "ruled_out", "impact"]
_CITING: tuple[_Cites, ...] = ("timeline", "gaps", "ruled_out", "impact")

_MAX_ROUNDS = 6  # each round takes out at least one layer of claims; a submission has at most four


def _content(item: Any) -> Any:
    return item.model_dump(mode="json") if isinstance(item, BaseModel) else item


class _Pruning:
    """One round: the claims ``check`` refused taken out of ``submission``, and each recorded."""

    def __init__(self, submission: DiagnosisSubmission, check: Verification) -> None:
        self.submission = submission
        self.refused: list[RefusedClaim] = []
        self.lost = {p.index: p.reason for p in check.pointers if not p.verified}
        self.unsupported = {s.fault_type: s.missing for s in check.support if s.missing}
        self.not_meant = {r.index: (s.fault_type, r.reason) for s in check.support for r in s.refused}
        self.failed = {entry.entry: entry.reason for entry in check.entries if not entry.verified}
        kept = [i for i in range(len(submission.evidence)) if i not in self.lost]
        self.renumbered = {old: new for new, old in enumerate(kept)}

    def refuse(self, claim: str, content: Any, reason: str) -> None:
        self.refused.append(RefusedClaim(claim=claim, content=_content(content), reason=reason))

    def remap(self, indices: Sequence[int]) -> list[int]:
        return [self.renumbered[i] for i in indices]

    def evidence(self) -> list[EvidencePointer]:
        kept = []
        for index, pointer in enumerate(self.submission.evidence):
            if index in self.lost:
                self.refuse(f"evidence.{index}", pointer, self.lost[index])
                continue
            if index in self.not_meant:
                fault, reason = self.not_meant[index]
                self.refuse(f"evidence.{index}.supports", fault, reason)
            if index in self.not_meant or pointer.supports in self.unsupported:
                pointer = pointer.model_copy(update={"supports": None})
            kept.append(pointer)
        return kept

    def fault_types(self) -> list[str]:
        for fault, missing in self.unsupported.items():
            self.refuse(f"fault_types.{fault}", fault, f"not corroborated: {missing}")
        return [f for f in self.submission.fault_types if f not in self.unsupported] or [UNKNOWN]

    def stands(self, where: str, item: Any, indices: Sequence[int], *parts: str) -> bool:
        """Whether the entry at ``where`` (and its ``parts``) passed and all it cites is kept; if it did
        not pass, it is refused."""
        names = (where, *(f"{where}.{part}" for part in parts))
        reasons = [self.failed[name] for name in names if name in self.failed]
        served = {self.submission.evidence[i].supports for i in indices} - {None}
        if where.startswith("remediation_plan.") and served and served <= set(self.unsupported):
            reasons.append(f"it fixes {', '.join(sorted(map(str, served)))}, which did not verify")
        if reasons:
            self.refuse(where, item, "; ".join(reasons))
        return not reasons and all(i in self.renumbered for i in indices)

    def cited(self, part: _Cites) -> list[Any]:
        """The entries of one list of the submission that stand, their citations renumbered."""
        return [
            item.model_copy(update={"evidence": self.remap(item.evidence)})
            for n, item in enumerate(getattr(self.submission, part))
            if self.stands(f"{part}.{n}", item, item.evidence)
        ]

    def resolved(self) -> list[ResolvedFault]:
        kept = []
        for n, fault in enumerate(self.submission.resolved):
            cites = [*fault.evidence, *fault.caused_by.evidence, *fault.undone_by.evidence]
            if self.stands(f"resolved.{n}", fault, cites, "caused_by", "undone_by"):
                kept.append(
                    fault.model_copy(
                        update={
                            "evidence": self.remap(fault.evidence),
                            "caused_by": fault.caused_by.model_copy(
                                update={"evidence": self.remap(fault.caused_by.evidence)}
                            ),
                            "undone_by": fault.undone_by.model_copy(
                                update={"evidence": self.remap(fault.undone_by.evidence)}
                            ),
                        }
                    )
                )
        return kept

    def pruned(self) -> DiagnosisSubmission:
        submission = self.submission
        trigger = submission.trigger
        update: dict[str, Any] = {
            "evidence": self.evidence(),
            "fault_types": self.fault_types(),
            "remediation_plan": [
                step.model_copy(update={"evidence_basis": self.remap(step.evidence_basis)})
                for n, step in enumerate(submission.remediation_plan)
                if self.stands(f"remediation_plan.{n}", step, step.evidence_basis, "command")
            ],
            "trigger": trigger.model_copy(update={"evidence": self.remap(trigger.evidence)})
            if trigger is not None and self.stands("trigger", trigger, trigger.evidence)
            else None,
            **{part: self.cited(part) for part in _CITING},
            "resolved": self.resolved(),
        }
        if self.unsupported:
            self.refuse("root_cause", submission.root_cause, "it names faults that did not verify")
            kept = [fault for fault in update["fault_types"] if fault != UNKNOWN]
            update["root_cause"] = _root_cause(kept, list(self.unsupported))
        return submission.model_copy(update=update)


def _root_cause(kept: Sequence[str], dropped: Sequence[str]) -> str:
    if kept:
        return (
            f"Verified: {', '.join(kept)}. The submitted cause also named {', '.join(dropped)}, which did "
            "not verify (see refused)."
        )
    return f"No submitted fault verified ({', '.join(dropped)}): the cause is unknown (see refused)."


def confidence(
    claimed: float, submitted: Verification, refused: Sequence[RefusedClaim], kept: Verification
) -> float:
    """The submitted confidence, never above the share of the submission's claims that verified (its
    pointers, entries and fault types); 0 when no verified pointer remains, or when none of the faults it
    named does."""
    named = [s.fault_type for s in submitted.support]
    if kept.verified_count == 0 or (named and all(s.fault_type not in named for s in kept.support)):
        return 0.0
    claims = len(submitted.pointers) + len(submitted.entries) + len(named)
    taken = sum(claim.claim != "root_cause" for claim in refused)  # the root cause falls with its faults
    share = 1 - taken / claims if claims else 1.0
    return round(max(0.0, min(claimed, share)), 3)


def standing_claims(
    submission: DiagnosisSubmission, check: Verification, responses: evidence.Responses, function: str
) -> tuple[DiagnosisSubmission, Verification, list[RefusedClaim]]:
    """``submission`` with what ``check`` refused taken out (and whatever rested on it), its verification
    again, and every claim taken out."""
    refused: list[RefusedClaim] = []
    for _ in range(_MAX_ROUNDS):
        if check.passed:
            return submission, check, refused
        pruning = _Pruning(submission, check)
        submission = pruning.pruned()
        refused += pruning.refused
        check = evidence.verify(submission, responses, check.refinement_turns, function)
    raise AssertionError(f"claims still refused after {_MAX_ROUNDS} rounds: {check}")
