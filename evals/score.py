"""Scores of a replayed case against its expected answer, and totals per model.

Only the case's expected answer and the diagnosis (with the code's verification of it) are read: nothing
the diagnostician itself decides with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from evals.corpus import Expected
from evals.replay import CaseRun
from supervisor.agent.prices import Price
from supervisor.schemas import Diagnosis

# Pass/fail metrics, in the order they are shown. Evidence is also counted pointer by pointer.
METRICS: Final = ("faults", "evidence", "corroboration", "trigger", "ruled_out", "resources")
METRIC_TITLES: Final = {
    "faults": "exact fault set",
    "evidence": "every evidence pointer verified (none refused)",
    "corroboration": "no fault type or support claim refused (a value that does not mean its fault)",
    "trigger": "trigger (event and identity, or none)",
    "ruled_out": "gaps and ruled-out hypotheses",
    "resources": "affected resources named",
}


def _names(resource: str, affected: list[str]) -> bool:
    return any(a == resource or a.endswith((f"/{resource}", f":{resource}")) for a in affected)


def _trigger(diagnosis: Diagnosis, expected: Expected) -> bool:
    got, want = diagnosis.trigger, expected.trigger
    if got is None or want is None:
        return got is None and want is None
    return got.event_name == want.event_name and got.identity == want.identity


def _ruled_out(diagnosis: Diagnosis, expected: Expected) -> bool:
    rejected = {entry.fault_type for entry in diagnosis.ruled_out}
    reported_gaps = {gap.source for gap in diagnosis.gaps}
    return (
        set(expected.ruled_out) <= rejected
        and not rejected & set(expected.faults)
        and set(expected.gaps) <= reported_gaps
    )


def judge(diagnosis: Diagnosis | None, expected: Expected) -> dict[str, bool]:
    """Each metric's verdict for one diagnosis (every metric fails without one)."""
    if diagnosis is None:
        return dict.fromkeys(METRICS, False)
    refused = [claim.claim.split(".") for claim in diagnosis.refused]
    return {
        "faults": set(diagnosis.fault_types) == set(expected.faults),
        "evidence": not any(parts[0] == "evidence" and len(parts) == 2 for parts in refused),
        "corroboration": not any(parts[0] == "fault_types" or parts[-1] == "supports" for parts in refused),
        "trigger": _trigger(diagnosis, expected),
        "ruled_out": _ruled_out(diagnosis, expected),
        "resources": all(_names(r, diagnosis.affected_resources) for r in expected.affected_resources),
    }


@dataclass(frozen=True)
class CaseScore:
    case_id: str
    metrics: dict[str, bool]
    pointers_verified: int
    pointers: int
    fault_types: list[str]
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    seconds: float
    error: str | None

    @property
    def failed(self) -> list[str]:
        return [name for name in METRICS if not self.metrics[name]]

    @property
    def passed(self) -> bool:
        return not self.failed


def score_case(run: CaseRun, price: Price | None) -> CaseScore:
    diagnosis = run.diagnosis
    kept = len(diagnosis.evidence) if diagnosis is not None else 0
    lost = (
        sum(c.claim.count(".") == 1 and c.claim.startswith("evidence.") for c in diagnosis.refused)
        if diagnosis
        else 0
    )
    error = run.error or (None if diagnosis is not None else f"no diagnosis ({run.stop_reason})")
    return CaseScore(
        case_id=run.case.id,
        metrics=judge(diagnosis, run.case.expected),
        pointers_verified=kept,
        pointers=kept + lost,
        fault_types=list(diagnosis.fault_types) if diagnosis is not None else [],
        llm_calls=len(run.llm_calls),
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        cost=run.cost(price) if price is not None else None,
        seconds=run.seconds,
        error=error,
    )


@dataclass(frozen=True)
class ModelScore:
    """One model over the corpus."""

    model: str
    cases: list[CaseScore]
    price: Price | None

    def rate(self, metric: str) -> float:
        return sum(case.metrics[metric] for case in self.cases) / len(self.cases) if self.cases else 0.0

    @property
    def evidence_rate(self) -> float | None:
        """Verified pointers over all pointers, across the corpus; None when no pointer was cited."""
        total = sum(case.pointers for case in self.cases)
        return sum(case.pointers_verified for case in self.cases) / total if total else None

    @property
    def solved(self) -> int:
        return sum(case.passed for case in self.cases)

    @property
    def llm_calls(self) -> int:
        return sum(case.llm_calls for case in self.cases)

    @property
    def input_tokens(self) -> int:
        return sum(case.input_tokens for case in self.cases)

    @property
    def output_tokens(self) -> int:
        return sum(case.output_tokens for case in self.cases)

    @property
    def cost(self) -> float | None:
        return self.price.cost(self.input_tokens, self.output_tokens) if self.price is not None else None

    @property
    def seconds(self) -> float:
        return sum(case.seconds for case in self.cases)
