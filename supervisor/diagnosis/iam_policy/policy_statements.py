"""Policy statements as the ``get_iam_state`` response holds them, and whether one covers an action and a
resource: actions case-insensitively (a service-less ``*:Op`` in any service), resources case-sensitively
over the whole ARN, a policy variable standing for any text."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

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


def statement_action(ref: StatementRef, action: str) -> Scope:
    if ref.action is not None:
        scopes = {_action_scope(p, action) for p in listed(ref.action)}
        return "all" if "all" in scopes else "some" if "some" in scopes else "none"
    if ref.not_action is not None:
        scopes = {_action_scope(p, action) for p in listed(ref.not_action)}
        return "none" if "all" in scopes else "some" if "some" in scopes else "all"
    return "none"  # neither Action nor NotAction: not a valid statement


def statement_resource(ref: StatementRef, resource: str | None) -> tuple[bool, str | None]:
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
