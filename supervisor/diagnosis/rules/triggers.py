"""What changed: the change events the history lists, the pointers that cite one, and earlier settings."""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer
from supervisor.faults.registry import FaultType


def change_events(c: Conversation) -> list[ChangeEvent]:
    """The changes that went through (failed calls changed nothing), newest first as the tool lists them."""
    found = []
    for index, event in enumerate(c.changes.get("events", [])):
        when = instant(event.get("time"))
        if when is not None and not event.get("error_code"):
            found.append(ChangeEvent(index, event, when))
    return found


def change_pointers(event: ChangeEvent, supports: FaultType | None) -> list[Pointer]:
    where = f"events.{event.index}"
    who = event.event.get("identity_arn") or "an unknown identity"
    pointers = [
        Pointer(
            "get_recent_changes",
            f"{where}.event_name",
            event.event["event_name"],
            f"{who} called {event.operation} at {event.event['time']}",
            supports,
        ),
        Pointer("get_recent_changes", f"{where}.time", event.event["time"], "When the change was made", None),
    ]
    if event.event.get("identity_arn"):
        pointers.append(
            Pointer("get_recent_changes", f"{where}.identity_arn", who, "Who made the change", None)
        )
    return pointers


def seconds_before_failure(event: ChangeEvent, finding: Finding) -> float | None:
    """How long before the first failure the change was; None when only the minute is known and the change
    falls inside it."""
    if finding.first_failure is None:
        return None
    seconds = (finding.first_failure[0] - event.time).total_seconds()
    return round(seconds, 1) if seconds >= 0 else None


FUNCTION_SETTERS = frozenset({"CreateFunction", "UpdateFunctionConfiguration"})


def previous_setting(
    c: Conversation, name: str, change: ChangeEvent | None = None
) -> tuple[Any, Pointer] | None:
    """The value a function setting (e.g. 'timeout') had before ``change`` (by default its newest change),
    and the pointer to the older event that shows it (the creation or an earlier update); None when the
    window does not show it. Never the change's own new value: that is what broke the function."""
    setters = [e for e in change_events(c) if e.operation in FUNCTION_SETTERS and e.setting(name) is not None]
    if change is None:
        changes = [e for e in setters if e.operation == "UpdateFunctionConfiguration"]
        if not changes:
            return None
        change = max(changes, key=lambda e: e.time)
    before = max((e for e in setters if e.time < change.time), key=lambda e: e.time, default=None)
    if before is None:
        return None
    key, value = before.setting(name) or (name, None)
    if value == (change.setting(name) or (name, None))[1]:
        return None  # the change set what was there: nothing earlier to go back to
    pointer = Pointer(
        "get_recent_changes",
        f"events.{before.index}.summary.{key}",
        value,
        f"{name} was {value} before",
        None,
    )
    return value, pointer
