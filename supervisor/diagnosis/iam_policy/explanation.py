"""The one-sentence reason of an evaluation's decision, naming the statements (by path) behind it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from supervisor.diagnosis.iam_policy.judgement import BoundaryResult, Decision, Match
from supervisor.diagnosis.iam_policy.policy_statements import StatementRef


def _paths(matches: Iterable[Match]) -> str:
    return ", ".join(m.path for m in matches)


def explain(
    decision: Decision,
    what: str,
    deciding: tuple[Match, ...],
    near: tuple[StatementRef, ...],
    unreadable: Sequence[str],
    boundary: BoundaryResult | None,
) -> str:
    if decision == "denied":
        return f"{what} is explicitly denied by {_paths(deciding)}"
    if decision == "boundary_excludes":
        if deciding:
            return f"the permissions boundary explicitly denies {what} ({_paths(deciding)})"
        return f"the permissions boundary does not allow {what}"
    if decision == "implicit_deny":
        text = f"no identity policy statement allows {what}"
        if near:
            text += "; statements allowing the action cover other resources only: "
            text += ", ".join(r.path for r in near)
        return text
    if decision == "allowed":
        return f"{what} is allowed by {_paths(deciding)}"
    if decision == "conditional":
        return f"whether {what} is allowed is conditional: " + "; ".join(
            f"{m.path}: {m.caveat}" for m in deciding if m.caveat
        )
    missing = [*unreadable]
    if boundary is not None and boundary.decision == "unknown":
        missing.append(boundary.path)
    return f"whether {what} is allowed is unknown: could not read {', '.join(missing)}"
