"""Whether an execution role allows an action on a resource: IAM identity policies and a permissions boundary,
read from the ``get_iam_state`` response, and the denial an AWS error message shows.

Pure and stdlib-only, and deliberately not shared with the sandbox's evaluator: the diagnosis must reach its
verdict on its own. What it cannot judge it never guesses:

- A statement with a ``Condition``, a policy variable (``${aws:username}``) in a Resource pattern that could
  match, or a Resource/NotResource scope against an unknown resource is *conditional*: it may or may not
  apply. A variable stands for any text, so a pattern that cannot match even then does not apply at all.
- A policy document that could not be read (an attached policy whose ``document`` is null, an inline policy
  or a policy list the tool reports as a gap) is *unreadable*: it may allow or deny anything, so only an
  explicit deny or a boundary exclusion is still decisive; otherwise the decision is ``unknown``.
- A service-less action ``*:Op`` (boto only said "when calling the Op operation") is covered by an Allow
  whose operation part matches in any service; a Deny decides it only when its service part is ``*``,
  otherwise that Deny is conditional. So a guess never makes a call "denied".

Resource patterns are matched case-sensitively over the whole ARN (``*`` spans ``:`` and ``/``); action
patterns case-insensitively. ``${*}``, ``${?}`` and ``${$}`` are the literal characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

Decision = Literal["allowed", "denied", "implicit_deny", "boundary_excludes", "conditional", "unknown"]
"""- ``allowed``: an unconditional Allow covers it, nothing may deny it, and the boundary (if any) allows it;
- ``denied``: an unconditional explicit Deny in an identity policy covers it;
- ``boundary_excludes``: the permissions boundary does not allow it (no Allow, or an unconditional Deny);
- ``implicit_deny``: no identity policy statement allows it, not even conditionally (every document read);
- ``conditional``: whether it is allowed depends on a Condition, a policy variable or the unknown resource;
- ``unknown``: a policy or the boundary could not be read, and what was read does not settle it."""

Scope = Literal["all", "some", "none"]


@dataclass(frozen=True)
class StatementRef:
    """One policy statement, where it is in the ``get_iam_state`` response and what it says, as written
    (a string stays a string, a list becomes a tuple)."""

    path: str  # e.g. "inline_policies.data-processor-access.Statement.0"
    effect: str
    sid: str | None
    action: str | tuple[str, ...] | None
    not_action: str | tuple[str, ...] | None
    resource: str | tuple[str, ...] | None
    not_resource: str | tuple[str, ...] | None
    has_condition: bool
    statement: Mapping[str, Any] = field(compare=False, repr=False)  # the statement itself


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


@dataclass(frozen=True)
class DeniedCall:
    action: str  # "s3:GetObject", or "*:GetObject" when only the operation is known
    resource: str | None
    reason: Literal["explicit_deny", "no_allow"] | None
    policy_type: str | None  # "identity-based policy", "permissions boundary", ... as the message says
    error_code: str | None  # "AccessDenied", "AccessDeniedException", ... when boto's prefix is there
    quote: str  # the exact part of the message that shows the denial


# --------------------------------------------------------------------------- reading statements


def listed(value: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """A StatementRef's Action/NotAction/Resource/NotResource as a tuple of patterns."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else value


def _as_written(value: Any) -> str | tuple[str, ...] | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    return None


def statements(document: Mapping[str, Any], path: str) -> list[StatementRef]:
    """The statements of a policy document at ``path`` (``Statement`` may be one object or a list)."""
    raw = document.get("Statement", [])
    if isinstance(raw, Mapping):
        entries: list[tuple[str, Any]] = [(f"{path}.Statement", raw)]
    elif isinstance(raw, list):
        entries = [(f"{path}.Statement.{index}", item) for index, item in enumerate(raw)]
    else:
        entries = []
    return [
        StatementRef(
            path=where,
            effect=str(item.get("Effect", "")),
            sid=item["Sid"] if isinstance(item.get("Sid"), str) else None,
            action=_as_written(item.get("Action")),
            not_action=_as_written(item.get("NotAction")),
            resource=_as_written(item.get("Resource")),
            not_resource=_as_written(item.get("NotResource")),
            has_condition=bool(item.get("Condition")),
            statement=item,
        )
        for where, item in entries
        if isinstance(item, Mapping)
    ]


# --------------------------------------------------------------------------- matching

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_LITERAL_VARIABLES = {"*": "*", "?": "?", "$": "$"}


def _glob(pattern: str) -> str:
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)


@lru_cache(maxsize=1024)
def _action_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(_glob(pattern), re.IGNORECASE | re.DOTALL)


@lru_cache(maxsize=1024)
def _resource_regex(pattern: str) -> tuple[re.Pattern[str], bool]:
    """The pattern as a regex (a policy variable matches any text) and whether it has a variable."""
    parts, variable, position = [], False, 0
    for found in _VARIABLE.finditer(pattern):
        parts.append(_glob(pattern[position : found.start()]))
        inner = found[1]
        if inner in _LITERAL_VARIABLES:
            parts.append(re.escape(_LITERAL_VARIABLES[inner]))
        else:
            parts.append(".*")
            variable = True
        position = found.end()
    parts.append(_glob(pattern[position:]))
    return re.compile("".join(parts), re.DOTALL), variable


def _action_scope(pattern: str, action: str) -> Scope:
    """Whether ``pattern`` covers ``action``: for a service-less ``*:Op``, in every service or only some."""
    if not action.startswith("*:"):
        return "all" if _action_regex(pattern).fullmatch(action) else "none"
    service, colon, operation = pattern.partition(":")
    if not colon:
        return "all" if pattern and set(pattern) == {"*"} else "none"
    if not _action_regex(operation).fullmatch(action[2:]):
        return "none"
    return "all" if service and set(service) == {"*"} else "some"


def action_matches(pattern: str, action: str) -> bool:
    """Whether an IAM action pattern covers ``action`` (case-insensitive, ``*`` and ``?``); a service-less
    ``*:Op`` is covered by a pattern whose operation part matches Op, in any service."""
    return _action_scope(pattern, action) != "none"


def resource_matches(pattern: str, resource: str) -> bool:
    """Whether a Resource pattern covers the ARN for certain (case-sensitive, ``*`` and ``?``). A pattern
    with a policy variable never does: evaluate() treats such a statement as conditional when it could."""
    regex, variable = _resource_regex(pattern)
    return not variable and regex.fullmatch(resource) is not None


def _could_match(pattern: str, resource: str) -> bool:
    return _resource_regex(pattern)[0].fullmatch(resource) is not None


def _statement_action(ref: StatementRef, action: str) -> Scope:
    if ref.action is not None:
        scopes = {_action_scope(p, action) for p in listed(ref.action)}
        return "all" if "all" in scopes else "some" if "some" in scopes else "none"
    if ref.not_action is not None:
        scopes = {_action_scope(p, action) for p in listed(ref.not_action)}
        return "none" if "all" in scopes else "some" if "some" in scopes else "all"
    return "none"  # neither Action nor NotAction: not a valid statement


def _statement_resource(ref: StatementRef, resource: str | None) -> tuple[bool, str | None]:
    """(may apply, caveat): caveat None means it applies for certain."""
    if ref.resource is not None:
        patterns = listed(ref.resource)
        if resource is None:
            if "*" in patterns:
                return True, None
            scoped = ", ".join(patterns)
            return bool(patterns), f"the resource is unknown; the statement is scoped to {scoped}"
        if any(resource_matches(p, resource) for p in patterns):
            return True, None
        if any(_could_match(p, resource) for p in patterns):
            return True, "its Resource has a policy variable"
        return False, None
    if ref.not_resource is not None:
        patterns = listed(ref.not_resource)
        if resource is None:
            if "*" in patterns:
                return False, None
            return True, "the resource is unknown; NotResource cannot be judged"
        if any(resource_matches(p, resource) for p in patterns):
            return False, None
        if any(_could_match(p, resource) for p in patterns):
            return True, "its NotResource has a policy variable"
        return True, None
    return True, None  # no Resource at all: not scoped


@dataclass(frozen=True)
class _Verdict:
    decision: Decision
    deciding: tuple[Match, ...]
    matches: tuple[Match, ...]
    near_misses: tuple[StatementRef, ...]


def _judge(refs: Iterable[StatementRef], action: str, resource: str | None) -> _Verdict:
    certain_denies: list[Match] = []
    maybe_denies: list[Match] = []
    certain_allows: list[Match] = []
    maybe_allows: list[Match] = []
    near: list[StatementRef] = []
    for ref in refs:
        if ref.effect not in ("Allow", "Deny"):
            continue
        scope = _statement_action(ref, action)
        if scope == "none":
            continue
        applies, caveat = _statement_resource(ref, resource)
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
        return _Verdict("denied", tuple(certain_denies), matches, tuple(near))
    if certain_allows and not maybe_denies:
        return _Verdict("allowed", tuple(certain_allows), matches, tuple(near))
    if certain_allows:
        return _Verdict("conditional", tuple(maybe_denies), matches, tuple(near))
    if maybe_allows:
        return _Verdict("conditional", (*maybe_allows, *maybe_denies), matches, tuple(near))
    return _Verdict("implicit_deny", (), matches, tuple(near))


# --------------------------------------------------------------------------- evaluating


def _paths(matches: Iterable[Match]) -> str:
    return ", ".join(m.path for m in matches)


def _reason(
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


def evaluate(
    documents: Sequence[tuple[str, Mapping[str, Any] | None]],
    action: str,
    resource: str | None,
    boundary: tuple[str, Mapping[str, Any] | None] | None = None,
) -> Evaluation:
    """Whether ``action`` on ``resource`` (None: unknown) is allowed by the identity policies ``documents``
    ((path, document or None when unreadable) pairs) within the permissions ``boundary`` (path, document or
    None when unreadable), if the role has one."""
    refs: list[StatementRef] = []
    unreadable: list[str] = []
    for path, document in documents:
        if isinstance(document, Mapping):
            refs.extend(statements(document, path))
        else:
            unreadable.append(path)
    identity = _judge(refs, action, resource)
    identity_decision: Decision = identity.decision
    if unreadable and identity_decision != "denied":
        identity_decision = "unknown"

    bound: BoundaryResult | None = None
    bound_verdict: _Verdict | None = None
    if boundary is not None:
        path, document = boundary
        if isinstance(document, Mapping):
            bound_verdict = _judge(statements(document, path), action, resource)
            bound = BoundaryResult(path, bound_verdict.decision, bound_verdict.deciding)
        else:
            bound = BoundaryResult(path, "unknown", ())

    decision: Decision
    deciding: tuple[Match, ...]
    if identity_decision == "denied":
        decision, deciding = "denied", identity.deciding
    elif bound is not None and bound.decision in ("denied", "implicit_deny"):
        decision, deciding = "boundary_excludes", bound.deciding
    elif identity_decision == "implicit_deny":
        decision, deciding = "implicit_deny", ()
    elif identity_decision == "unknown" or (bound is not None and bound.decision == "unknown"):
        decision, deciding = "unknown", (*identity.deciding, *(bound.deciding if bound else ()))
    elif identity_decision == "conditional" or (bound is not None and bound.decision == "conditional"):
        decision = "conditional"
        deciding = (
            *(identity.deciding if identity_decision == "conditional" else ()),
            *(bound.deciding if bound is not None and bound.decision == "conditional" else ()),
        )
    else:
        decision, deciding = "allowed", (*identity.deciding, *(bound.deciding if bound else ()))

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
        reason=_reason(decision, what, deciding, near, unreadable, bound),
    )


_IDENTITY_GAPS = ("iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:GetRolePolicy")


def evaluate_role(iam_state: Mapping[str, Any], action: str, resource: str | None) -> Evaluation:
    """:func:`evaluate` over a ``get_iam_state`` response. Unreadable: an attached policy whose document is
    null, a gap listing or reading the role's policies (``gaps.<i>``), and the whole answer when it has an
    ``error``; a failed ``iam:GetRole`` hides whether there is a boundary, so the boundary is unknown."""
    documents: list[tuple[str, Mapping[str, Any] | None]] = []
    for name, document in (iam_state.get("inline_policies") or {}).items():
        documents.append((f"inline_policies.{name}", document if isinstance(document, Mapping) else None))
    for index, policy in enumerate(iam_state.get("attached_policies") or []):
        document = policy.get("document") if isinstance(policy, Mapping) else None
        documents.append((f"attached_policies.{index}.document", document))
    boundary: tuple[str, Mapping[str, Any] | None] | None = None
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


# --------------------------------------------------------------------------- reading a denial

_ACTION = r"[\w-]+:[\w*]+"
_POLICY_TYPE = r"[A-Za-z-]+(?: [A-Za-z-]+)*? (?:policy|boundary)"
_NOT_AUTHORIZED = re.compile(
    rf"(?:User: \S+ (?:is )?)?not authorized to perform: (?P<action>{_ACTION})"
    r'(?: on resource: (?:\\?"(?P<quoted>[^"\\]+)\\?"|(?P<bare>[^\s"]*[^\s".,;])))?'
    rf"(?: because no (?P<absent>{_POLICY_TYPE}) allows(?: the {_ACTION} action)?"
    rf"| with an explicit deny in (?:an? )?(?P<denier>{_POLICY_TYPE}))?"
)
_BOTO = re.compile(
    r"(?:An error occurred )?\((?P<code>AccessDenied|AccessDeniedException|UnauthorizedOperation)\) "
    r"when calling the (?P<operation>\w+) operation(?:: Access Denied\.?)?"
)


def parse_denial(message: str) -> DeniedCall | None:
    """The denied call an AWS error message shows, or None when it shows none. Boto's "(AccessDenied) when
    calling the Op operation" alone gives the service-less action ``*:Op`` and no resource."""
    boto = _BOTO.search(message)
    denied = _NOT_AUTHORIZED.search(message)
    if denied is not None:
        start = denied.start()
        if boto is not None and boto.end() <= start and not message[boto.end() : start].strip(": "):
            start = boto.start()
        absent, denier = denied["absent"], denied["denier"]
        return DeniedCall(
            action=denied["action"],
            resource=denied["quoted"] or denied["bare"],
            reason="explicit_deny" if denier else "no_allow" if absent else None,
            policy_type=denier or absent,
            error_code=boto["code"] if boto is not None else None,
            quote=message[start : denied.end()],
        )
    if boto is not None:
        return DeniedCall(
            action=f"*:{boto['operation']}",
            resource=None,
            reason=None,
            policy_type=None,
            error_code=boto["code"],
            quote=boto[0],
        )
    return None
