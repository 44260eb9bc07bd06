"""One causal timeline: which changes can have started a failure, which one did, and which undid it.

A change is a candidate trigger of a finding only if it came after the start of the last successful
invocation before the finding's first failure (less :data:`PROPAGATION`, as a change may not apply at once)
and no later than the first failure (the end of its minute, when only the metrics show it). Every change
the change history lists touches something the function depends on, so any candidate can start any fault;
the latest candidate of the kind the fault's class names (a Timeout change for a timeout) is preferred, then
the latest of all. Without a success to bound the window, only changes of that kind are candidates: the
history alone cannot say which of many older changes the function survived. A fault that a later change
undid is over: the window of a fault whose failures began after that undoing starts after it, so neither
the earlier fault's cause nor its undoing is a candidate for the later one. A fault undone and then brought
back by another change of its kind, within the minutes the evidence shows, is current from its return: its
first failure is the first after that change, and its window starts after the undoing. A fault that stops
invocations rather than failing them (Lambda cannot receive from its queue) has no first failure; the last
success read still bounds its window from below. A fault that builds up over invocations (a /tmp that
fills) succeeds after its cause, so its window starts at the last success before the newest change of its
kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from supervisor.diagnosis.causality import PROPAGATION
from supervisor.diagnosis.restoration import restoration_problem
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.failures import MINUTE, first_failure_since
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer
from supervisor.diagnosis.rules.triggers import change_events


@dataclass(frozen=True)
class Window:
    """Between the last success and the first failure of a finding, as far as the evidence shows."""

    after: datetime | None  # the start of the last successful invocation before the first failure
    after_pointer: Pointer | None
    before: datetime | None  # the latest instant the first failure can have started at
    settled: datetime | None = None  # when a change undid an earlier fault, before the first failure

    def holds(self, change: ChangeEvent) -> bool:
        later = self.after is None or change.time > self.after - PROPAGATION
        later = later and (self.settled is None or change.time > self.settled)
        return later and (self.before is None or change.time <= self.before)


def last_success(c: Conversation, before: datetime) -> tuple[datetime, Pointer] | None:
    """The latest start of an invocation that succeeded and started before ``before``: from the logs'
    REPORT lines, else the earliest a success the metrics count in a minute can have started (the minute's
    start less the timeout, as the datapoint is recorded when the invocation ends)."""
    for index, invocation in reversed(list(enumerate(c.logs.get("invocations", [])))):
        started = instant(invocation.get("started"))
        if invocation.get("outcome") == "no_error_seen" and started is not None and started < before:
            pointer = Pointer(
                "get_recent_logs",
                f"invocations.{index}.started",
                invocation["started"],
                "The last successful invocation before the failures",
                None,
            )
            return started, pointer
    timeout = timedelta(seconds=int(c.metrics.get("timeout_seconds") or 900))
    for index, minute in reversed(list(enumerate(c.metrics.get("minutes", [])))):
        start = instant(minute.get("timestamp"))
        succeeded = (minute.get("invocations") or 0) > (minute.get("errors") or 0)
        if start is not None and succeeded and start + MINUTE <= before:
            pointer = Pointer(
                "get_function_metrics",
                f"minutes.{index}.invocations",
                minute["invocations"],
                "Invocations succeeded in this minute, before the failures",
                None,
            )
            return start - timeout, pointer
    return None


def window(c: Conversation, finding: Finding) -> Window:
    bounds = window_at(c, finding.first_failure)
    if finding.first_failure is None and finding.ends_successes:
        success = last_success(c, datetime.max.replace(tzinfo=UTC))
        bounds = Window(success[0], success[1], None) if success else bounds
    if finding.accumulates:
        bounds = _before_the_newest_cause(c, finding, bounds.before)
    return Window(bounds.after, bounds.after_pointer, bounds.before, finding.settled)


def _before_the_newest_cause(c: Conversation, finding: Finding, before: datetime | None) -> Window:
    """A fault that builds up: bounded by the last success before the newest change of its kind (the runs
    after that change may succeed until it has built up); unbounded when none shows."""
    causes = [
        e.time
        for e in change_events(c)
        if finding.relevant_change(e) and (before is None or e.time <= before)
    ]
    success = last_success(c, max(causes)) if causes else None
    return Window(success[0] if success else None, success[1] if success else None, before)


def window_at(c: Conversation, first: tuple[datetime, Pointer] | None) -> Window:
    """The window before a first failure (its start, and the pointer that shows it)."""
    if first is None:
        return Window(None, None, None)
    when, pointer = first
    before = when + MINUTE if pointer.tool == "get_function_metrics" else when
    earliest = when - MINUTE if pointer.tool == "get_function_metrics" else when
    success = last_success(c, earliest)
    return Window(success[0] if success else None, success[1] if success else None, before)


def candidates(c: Conversation, finding: Finding) -> list[ChangeEvent]:
    """The changes that can have started the finding's failures, newest first."""
    bounds = window(c, finding)
    found = [e for e in change_events(c) if bounds.holds(e)]
    if bounds.after is None:
        found = [e for e in found if finding.relevant_change(e)]
    return sorted(found, key=lambda e: e.time, reverse=True)


def trigger(c: Conversation, finding: Finding) -> ChangeEvent | None:
    """The latest candidate of the kind the finding's class names, else the latest candidate."""
    found = candidates(c, finding)
    return next((e for e in found if finding.relevant_change(e)), found[0] if found else None)


def targets(event: ChangeEvent) -> set[str]:
    """What a change set, so that a later change to the same thing can be seen to undo it."""
    summary = event.event.get("summary") or {}
    op = event.operation
    if op == "UpdateFunctionConfiguration":
        return {f"setting:{name}" for name in event.changed_fields}
    if op in ("PutFunctionConcurrency", "DeleteFunctionConcurrency"):
        return {"concurrency"}
    if op in ("UpdateAlias", "CreateAlias", "DeleteAlias"):
        return {f"alias:{summary.get('name') or summary.get('Name')}"}
    if op in ("UpdateFunctionCode", "PublishVersion"):
        return {"code"}
    if op in ("PutRolePermissionsBoundary", "DeleteRolePermissionsBoundary"):
        return {"boundary"}
    keys = ("policyName", "policyArn", "groupId", "networkAclId", "routeTableId")
    return {f"{key}:{summary[key]}" for key in keys if summary.get(key)}


def _restoring(c: Conversation, cause: ChangeEvent) -> ChangeEvent | None:
    """The first later change that put back what ``cause`` took away (``restoration``); a later change that
    merely touched the same resource is none."""
    touched = targets(cause)
    later = [
        e
        for e in change_events(c)
        if e.time > cause.time and targets(e) & touched and not restoration_problem(cause.event, e.event)
    ]
    return min(later, key=lambda e: e.time, default=None)


def undoing(c: Conversation, finding: Finding, cause: ChangeEvent) -> ChangeEvent | None:
    """The change that put back what ``cause`` took away, when no failure of the finding's kind started
    after it (less :data:`PROPAGATION`): the fault is over, not current."""
    undo = _restoring(c, cause)
    if undo is None or finding.last_failure is None:
        return None
    started = finding.last_failure[0]  # a metrics minute's failures may all precede a change inside it
    return undo if started <= undo.time + PROPAGATION else None


def recurrence(
    c: Conversation, finding: Finding, cause: ChangeEvent
) -> tuple[ChangeEvent, tuple[datetime, Pointer]] | None:
    """A fault undone and brought back: the change that put back what ``cause`` took away, and the first
    failure of the finding's kind once a change of the kind it names followed that undoing (``cause`` made
    again, or another). Its failures since are a fault of their own, whose window starts after the undoing."""
    undo = _restoring(c, cause)
    if undo is None or finding.first_failure is None:
        return None
    again = [e.time for e in change_events(c) if e.time > undo.time and finding.relevant_change(e)]
    first = first_failure_since(c, finding.first_failure, min(again) - PROPAGATION) if again else None
    return (undo, first) if first is not None else None
