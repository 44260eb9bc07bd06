"""The decision of an execution role's identity policies within its permissions boundary, from the
``get_iam_state`` response or from policy documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from supervisor.diagnosis.iam_policy.explanation import explain
from supervisor.diagnosis.iam_policy.judgement import BoundaryResult, Decision, Match, Verdict, judge
from supervisor.diagnosis.iam_policy.policy_statements import StatementRef, statements

PolicySource = tuple[str, Mapping[str, Any] | None]  # where a policy document is, and it (None: unreadable)


@dataclass(frozen=True)
class Evaluation:
    action: str
    resource: str | None
    decision: Decision
    identity: Decision  # the identity policies alone: never boundary_excludes
    deciding: tuple[Match, ...]  # the deny, the allows, or the conditional statements that decided it
    matches: tuple[Match, ...]  # every statement (identity and boundary) that covers it or may
    near_misses: tuple[StatementRef, ...]  # Allow statements for the action, on other resources only
    unreadable: tuple[str, ...]  # paths of identity policies (or gaps) whose statements are unknown
    boundary: BoundaryResult | None
    reason: str

    @property
    def allowed(self) -> bool:
        return self.decision == "allowed"

    @property
    def service_known(self) -> bool:
        """False for a service-less action ``*:Op``: a match then means "in some service"."""
        return not self.action.startswith("*:")


def evaluate(
    documents: Sequence[PolicySource],
    action: str,
    resource: str | None,
    boundary: PolicySource | None = None,
) -> Evaluation:
    """Whether ``action`` on ``resource`` (None: unknown) is allowed by the identity policies ``documents``
    ((path, document or None when unreadable) pairs) within the permissions ``boundary`` (path, document or
    None when unreadable), if the role has one."""
    refs, unreadable = _readable(documents)
    identity = judge(refs, action, resource)
    identity_decision: Decision = identity.decision
    if unreadable and identity_decision != "denied":
        identity_decision = "unknown"
    bound_verdict = _judge_boundary(boundary, action, resource)
    bound = _boundary_result(boundary, bound_verdict)
    decision, deciding = _combine(identity, identity_decision, bound)
    matches = identity.matches + (bound_verdict.matches if bound_verdict else ())
    near = identity.near_misses + (bound_verdict.near_misses if bound_verdict else ())
    what = f"{action} on {resource}" if resource else f"{action} (resource unknown)"
    return Evaluation(
        action=action,
        resource=resource,
        decision=decision,
        identity=identity_decision,
        deciding=deciding,
        matches=matches,
        near_misses=near,
        unreadable=tuple(unreadable),
        boundary=bound,
        reason=explain(decision, what, deciding, near, unreadable, bound),
    )


def _readable(documents: Sequence[PolicySource]) -> tuple[list[StatementRef], list[str]]:
    """The statements of the documents that could be read, and the paths of those that could not."""
    refs: list[StatementRef] = []
    unreadable: list[str] = []
    for path, document in documents:
        if isinstance(document, Mapping):
            refs.extend(statements(document, path))
        else:
            unreadable.append(path)
    return refs, unreadable


def _judge_boundary(boundary: PolicySource | None, action: str, resource: str | None) -> Verdict | None:
    """What the boundary's statements decide, or None when there is no boundary or it could not be read."""
    if boundary is None:
        return None
    path, document = boundary
    return judge(statements(document, path), action, resource) if isinstance(document, Mapping) else None


def _boundary_result(boundary: PolicySource | None, verdict: Verdict | None) -> BoundaryResult | None:
    if boundary is None:
        return None
    if verdict is None:
        return BoundaryResult(boundary[0], "unknown", ())
    return BoundaryResult(boundary[0], verdict.decision, verdict.deciding)


def _combine(
    identity: Verdict, identity_decision: Decision, bound: BoundaryResult | None
) -> tuple[Decision, tuple[Match, ...]]:
    """The decision of the identity policies within the boundary, and the statements that decide it."""
    if identity_decision == "denied":
        return "denied", identity.deciding
    if bound is not None and bound.decision in ("denied", "implicit_deny"):
        return "boundary_excludes", bound.deciding
    if identity_decision == "implicit_deny":
        return "implicit_deny", ()
    if identity_decision == "unknown" or (bound is not None and bound.decision == "unknown"):
        return "unknown", (*identity.deciding, *(bound.deciding if bound else ()))
    if identity_decision == "conditional" or (bound is not None and bound.decision == "conditional"):
        return "conditional", (
            *(identity.deciding if identity_decision == "conditional" else ()),
            *(bound.deciding if bound is not None and bound.decision == "conditional" else ()),
        )
    return "allowed", (*identity.deciding, *(bound.deciding if bound else ()))


_IDENTITY_GAPS = ("iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:GetRolePolicy")


def evaluate_role(iam_state: Mapping[str, Any], action: str, resource: str | None) -> Evaluation:
    """:func:`evaluate` over a ``get_iam_state`` response. Unreadable: an attached policy whose document is
    null, a gap listing or reading the role's policies (``gaps.<i>``), and the whole answer when it has an
    ``error``; a failed ``iam:GetRole`` hides whether there is a boundary, so the boundary is unknown."""
    documents: list[PolicySource] = []
    for name, document in (iam_state.get("inline_policies") or {}).items():
        documents.append((f"inline_policies.{name}", document if isinstance(document, Mapping) else None))
    for index, policy in enumerate(iam_state.get("attached_policies") or []):
        document = policy.get("document") if isinstance(policy, Mapping) else None
        documents.append((f"attached_policies.{index}.document", document))
    boundary: PolicySource | None = None
    if isinstance(iam_state.get("permissions_boundary"), Mapping):
        boundary = ("permissions_boundary.document", iam_state["permissions_boundary"].get("document"))
    for index, gap in enumerate(iam_state.get("gaps") or []):
        operation = str(gap.get("source", "") if isinstance(gap, Mapping) else "").split(" ", 1)[0]
        if operation in _IDENTITY_GAPS:
            documents.append((f"gaps.{index}", None))
        elif operation == "iam:GetRole" and boundary is None:
            boundary = (f"gaps.{index}", None)
    if iam_state.get("error"):
        documents.append(("error", None))
    return evaluate(documents, action, resource, boundary)
