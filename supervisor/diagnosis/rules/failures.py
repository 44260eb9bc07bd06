"""The failures the evidence shows: terminal errors of failed invocations, and when failing started.

Only the runtime's record of a failed invocation (its request id's error record, timeout or exit line)
counts; whatever else the code printed is never read as a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from supervisor.diagnosis.corroboration import TERMINAL_KINDS
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.findings import Pointer
from supervisor.faults.registry import FaultType

MINUTE = timedelta(minutes=1)  # the grain of the metrics: a failure in a minute began before its end
_RECORD = re.compile(r"^\[ERROR\] ([A-Za-z_.]+): ?(.*)", re.DOTALL)
_CLIENT_ERROR = re.compile(r"An error occurred \((\w+)\) when calling the (\w+) operation")


@dataclass(frozen=True)
class Failure:
    """The terminal line of one failed invocation."""

    index: int  # in get_recent_logs events
    request_id: str
    kind: str  # error_record, timeout or runtime_exit
    message: str
    error_type: str | None  # e.g. 'ClientError', 'Runtime.HandlerNotFound'
    error_code: str | None  # an AWS error code inside it, e.g. 'AccessDenied', 'ResourceNotFoundException'
    operation: str | None  # the AWS operation that failed, e.g. 'GetObject'
    started: datetime | None  # the START of its invocation

    @property
    def headline(self) -> str:
        """The first line of the record, quoted verbatim."""
        return self.message.split("\n", 1)[0].strip()

    def pointer(self, interpretation: str, supports: FaultType | None) -> Pointer:
        return Pointer(
            "get_recent_logs", f"events.{self.index}.message", self.headline, interpretation, supports
        )


def _failing_since(c: Conversation) -> datetime | None:
    """The earliest start of an invocation the metrics' first minute with errors can count: a datapoint is
    recorded when the invocation ends, so one that started in the minute before may be in it."""
    first = instant(c.metrics.get("first_error_minute"))
    return first - MINUTE if first is not None else None


def failures(c: Conversation) -> list[Failure]:
    """Terminal errors of the invocations whose REPORT line shows a failure, oldest first; only those that
    started once the metrics show failing invocations (older lines describe an earlier incident)."""
    logs, since = c.logs, _failing_since(c)
    if since is None:
        return []
    failed = {
        i.get("request_id"): instant(i.get("started"))
        for i in logs.get("invocations", [])
        if i.get("outcome") in TERMINAL_KINDS and (instant(i.get("started")) or since) >= since
    }
    found = []
    for index, event in enumerate(logs.get("events", [])):
        if event.get("kind") not in TERMINAL_KINDS or event.get("request_id") not in failed:
            continue
        message = str(event.get("message", ""))
        record = _RECORD.match(message) if event.get("kind") == "error_record" else None
        client = _CLIENT_ERROR.search(message)
        found.append(
            Failure(
                index=index,
                request_id=str(event["request_id"]),
                kind=str(event["kind"]),
                message=message,
                error_type=record[1] if record else None,
                error_code=client[1] if client else None,
                operation=client[2] if client else None,
                started=failed[event["request_id"]],
            )
        )
    return found


def first_failure(
    c: Conversation, *, throttles: bool = False, outcomes: frozenset[str] = TERMINAL_KINDS
) -> tuple[datetime, Pointer] | None:
    """When failing began, with the pointer that shows it: the START of the first failed invocation (ended
    in one of ``outcomes``, the ones the finding explains) whose REPORT line was read, else the first
    minute the metrics show errors (or throttles) in."""
    return _failure_at(c, throttles, outcomes, last=False)


def last_failure(
    c: Conversation, *, throttles: bool = False, outcomes: frozenset[str] = TERMINAL_KINDS
) -> tuple[datetime, Pointer] | None:
    """When the latest failure of that kind began: the START of the last such invocation read, else the
    last minute the metrics show errors (or throttles) in."""
    return _failure_at(c, throttles, outcomes, last=True)


def _failure_at(
    c: Conversation, throttles: bool, outcomes: frozenset[str], *, last: bool
) -> tuple[datetime, Pointer] | None:
    since = _failing_since(c)
    which = "last" if last else "first"
    if not throttles and since is not None:
        invocations = list(enumerate(c.logs.get("invocations", [])))
        for index, invocation in reversed(invocations) if last else invocations:
            when = instant(invocation.get("started"))
            if invocation.get("outcome") in outcomes and when is not None and when >= since:
                started = invocation["started"]
                return when, Pointer(
                    "get_recent_logs",
                    f"invocations.{index}.started",
                    started,
                    f"The {which} failed invocation",
                    None,
                )
    what = "throttles" if throttles else "errors"
    if last:
        minutes = list(enumerate(c.metrics.get("minutes", [])))
        for index, minute in reversed(minutes):
            when = instant(minute.get("timestamp"))
            if minute.get(what) and when is not None:
                return when, Pointer(
                    "get_function_metrics",
                    f"minutes.{index}.{what}",
                    minute[what],
                    f"The last minute with {what}",
                    None,
                )
        return None
    key = "first_throttle_minute" if throttles else "first_error_minute"
    value = c.metrics.get(key)
    when = instant(value)
    if when is None:
        return None
    shown = "throttles" if throttles else "failed invocations"
    return when, Pointer("get_function_metrics", key, value, f"The first minute with {shown}", None)
