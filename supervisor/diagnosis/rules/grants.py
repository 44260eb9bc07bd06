"""Denied calls, and whether the role or the function changed before them.

A denial is a permission *loss* when the role changed between the last success and the first denial. When
only the function changed there (it was created, new code was deployed, or its environment now points the
code at something else) the role never granted what the function now calls: a configuration error that
names the missing statement.
"""

from __future__ import annotations

from supervisor.diagnosis.iam_policy import Evaluation, evaluate_role
from supervisor.diagnosis.rules import timeline
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.failures import Failure, failures
from supervisor.diagnosis.rules.findings import ChangeEvent
from supervisor.diagnosis.rules.trigger_remedy import DEPLOY_OPERATIONS
from supervisor.diagnosis.rules.triggers import change_events

ROLE_OPERATIONS = frozenset(
    {
        "PutRolePolicy",
        "DeleteRolePolicy",
        "AttachRolePolicy",
        "DetachRolePolicy",
        "PutRolePermissionsBoundary",
        "DeleteRolePermissionsBoundary",
        "CreatePolicyVersion",
        "SetDefaultPolicyVersion",
    }
)


def is_role_change(event: ChangeEvent) -> bool:
    return event.operation in ROLE_OPERATIONS


def role_changes(c: Conversation) -> list[ChangeEvent]:
    return [e for e in change_events(c) if is_role_change(e)]


def denials(c: Conversation) -> list[tuple[Failure, Evaluation]]:
    """Each denied action once, evaluated against the role as it is now. A denial from before the role's
    newest change says nothing about the policies the role has now, so it is not read."""
    changed = max((e.time for e in role_changes(c)), default=None)
    found: dict[str, tuple[Failure, Evaluation]] = {}
    for failure in failures(c):
        if changed is not None and (failure.started is None or failure.started < changed):
            continue
        denied = failure.denial()
        if denied is not None and denied.action not in found:
            found[denied.action] = (failure, evaluate_role(c.iam, denied.action, denied.resource))
    return list(found.values())


def is_function_change(event: ChangeEvent) -> bool:
    """A change to what the function's code calls: its creation, a deployment, its environment."""
    return (
        event.operation == "CreateFunction"
        or event.operation in DEPLOY_OPERATIONS
        or (event.operation == "UpdateFunctionConfiguration" and "environment" in event.changed_fields)
    )


def _since(c: Conversation, change: ChangeEvent) -> bool:
    """Whether the metrics show a minute with a success after the change."""
    for minute in c.metrics.get("minutes", []):
        start = instant(minute.get("timestamp"))
        if (
            start is not None
            and start > change.time
            and minute.get("invocations", 0) > minute.get("errors", 0)
        ):
            return True
    return False


def _within(c: Conversation, failure: Failure) -> tuple[timeline.Window, list[ChangeEvent]]:
    """The window before the failure, and the changes in it."""
    assert failure.started is not None
    pointer = failure.pointer("", None)
    bounds = timeline.window_at(c, (failure.started, pointer))
    return bounds, [e for e in change_events(c) if bounds.holds(e)]


def role_change(c: Conversation, failure: Failure) -> ChangeEvent | None:
    """The latest change to the role that can have caused the denied invocation (any before it when no
    success bounds the search)."""
    if failure.started is None:
        return None
    return max((e for e in _within(c, failure)[1] if is_role_change(e)), key=lambda e: e.time, default=None)


def function_change(c: Conversation, failure: Failure) -> ChangeEvent | None:
    """The change to the function the denied invocation followed, when no role change could have caused the
    denial instead: the latest function change between the last success and the failure, with no role
    change after it. With no success to bound the search, the function's creation, or an environment change
    that is the newest change of all before the failure (a resource the code names from its environment is
    that change's before it is the role's), counts, and only if the metrics show no success since."""
    if failure.started is None:
        return None
    bounds, within = _within(c, failure)
    changed = max((e for e in within if is_function_change(e)), key=lambda e: e.time, default=None)
    if changed is None or any(is_role_change(e) and e.time >= changed.time for e in within):
        return None
    newest = max(within, key=lambda e: e.time)
    unbounded = changed.operation == "CreateFunction" or (
        changed is newest and "environment" in changed.changed_fields
    )
    if bounds.after is None and (not unbounded or _since(c, changed)):
        return None
    return changed
