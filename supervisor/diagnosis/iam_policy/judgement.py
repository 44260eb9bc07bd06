"""What one set of statements decides for an action on a resource: the deny, the allows, or the
conditional statements that decide it, and the Allow statements that cover other resources only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from supervisor.diagnosis.iam_policy.policy_statements import (
    StatementRef,
    statement_action,
    statement_resource,
)

Decision = Literal["allowed", "denied", "implicit_deny", "boundary_excludes", "conditional", "unknown"]
"""- ``allowed``: an unconditional Allow covers it, nothing may deny it, and the boundary (if any) allows it;
- ``denied``: an unconditional explicit Deny in an identity policy covers it;
- ``boundary_excludes``: the permissions boundary does not allow it (no Allow, or an unconditional Deny);
- ``implicit_deny``: no identity policy statement allows it, not even conditionally (every document read);
- ``conditional``: whether it is allowed depends on a Condition, a policy variable or the unknown resource;
- ``unknown``: a policy or the boundary could not be read, and what was read does not settle it."""


@dataclass(frozen=True)
class Match:
    """A statement that covers the action and resource, or may (``caveat`` says why it is not certain)."""

    statement: StatementRef
    caveat: str | None = None  # None: it applies for certain

    @property
    def path(self) -> str:
        return self.statement.path


@dataclass(frozen=True)
class BoundaryResult:
    """What the permissions boundary alone says (``unknown`` when its document could not be read)."""

    path: str  # "permissions_boundary.document", or the gap that hides whether there is one
    decision: Decision
    deciding: tuple[Match, ...]


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    deciding: tuple[Match, ...]
    matches: tuple[Match, ...]
    near_misses: tuple[StatementRef, ...]


def judge(refs: Iterable[StatementRef], action: str, resource: str | None) -> Verdict:
    certain_denies: list[Match] = []
    maybe_denies: list[Match] = []
    certain_allows: list[Match] = []
    maybe_allows: list[Match] = []
    near: list[StatementRef] = []
    for ref in refs:
        if ref.effect not in ("Allow", "Deny"):
            continue
        scope = statement_action(ref, action)
        if scope == "none":
            continue
        applies, caveat = statement_resource(ref, resource)
        if not applies:
            if ref.effect == "Allow":
                near.append(ref)
            continue
        caveats = [caveat] if caveat else []
        if ref.has_condition:
            caveats.insert(0, "it has a Condition")
        if scope == "some" and ref.effect == "Deny":
            caveats.append("the service is unknown and it denies this operation in some services only")
        match = Match(ref, "; ".join(caveats) or None)
        if ref.effect == "Deny":
            (maybe_denies if match.caveat else certain_denies).append(match)
        else:
            (maybe_allows if match.caveat else certain_allows).append(match)
    matches = (*certain_denies, *maybe_denies, *certain_allows, *maybe_allows)
    if certain_denies:
        return Verdict("denied", tuple(certain_denies), matches, tuple(near))
    if certain_allows and not maybe_denies:
        return Verdict("allowed", tuple(certain_allows), matches, tuple(near))
    if certain_allows:
        return Verdict("conditional", tuple(maybe_denies), matches, tuple(near))
    if maybe_allows:
        return Verdict("conditional", (*maybe_allows, *maybe_denies), matches, tuple(near))
    return Verdict("implicit_deny", (), matches, tuple(near))
