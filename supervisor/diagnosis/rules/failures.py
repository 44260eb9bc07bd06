"""The failures the evidence shows: terminal errors of failed invocations, and when failing started.

Only the runtime's record of a failed invocation (its request id's error record, init error, timeout or exit
line) counts; whatever else the code printed is never read as a failure. What a record says (its error type,
message, AWS error code, operation and first frame in the function's own code) is read from the error detail
the logs tool gives for it, whichever runtime and log format wrote it; an answer without that detail (one
recorded before the tool gave it) is read from the Python runtime's text record, the only shape read before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from supervisor.diagnosis.corroboration import TERMINAL_KINDS, reports_suppressed
from supervisor.diagnosis.iam_policy import DeniedCall, parse_denial
from supervisor.diagnosis.paths import excerpt, value_matches
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.findings import Pointer
from supervisor.faults.registry import FaultType

MINUTE = timedelta(minutes=1)  # the grain of the metrics: a failure in a minute began before its end
QUOTE_CHARS = 300  # a pointer quotes at most this much of a record's message (a bounded part is enough)
_RECORD = re.compile(r"^\[ERROR\] ([A-Za-z_.]+): ?(.*)", re.DOTALL)  # Python text, for answers without detail
_CLIENT_ERROR = re.compile(r"An error occurred \((\w+)\) when calling the (\w+) operation")  # boto3
# An AWS error code ('AccessDenied', 'AWS.SimpleQueueService.NonExistentQueue') has lower-case letters; Node's
# own error codes ('ERR_INVALID_ARG_TYPE', 'ENOENT'), which its records also carry as `code`, have none.
_AWS_CODE = re.compile(r"[A-Z][A-Za-z0-9.]*[a-z][A-Za-z0-9.]*")
_EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Failure:
    """The terminal record of one failed invocation, and what it says."""

    index: int  # in get_recent_logs events (in its invocations when ``field`` names one)
    request_id: str
    kind: str  # error_record, init_error, timeout or runtime_exit
    message: str  # the record as the answer holds it
    error_type: str | None  # e.g. 'KeyError', 'TypeError', 'ClientError', 'Runtime.HandlerNotFound'
    error_code: str | None  # an AWS error code it carries, e.g. 'AccessDenied', 'ResourceNotFoundException'
    operation: str | None  # the AWS operation that failed, e.g. 'GetObject', when the record names it
    started: datetime | None  # the START of its invocation
    error_message: str | None = None  # the error's own message
    frame: str | None = None  # the first frame in the function's own code, 'file:line'
    detailed: bool = False  # the answer gave the record's error detail
    field: str = ""  # the answer's field that shows it, with ``quote``; empty: the event's own fields
    quote: str = ""

    @property
    def headline(self) -> str:
        """The first line of the record, quoted verbatim."""
        return self.message.split("\n", 1)[0].strip()

    @property
    def summary(self) -> str:
        """'Type: message' (its first line), whatever shape the record was written in."""
        said = (self.error_message or "").split("\n", 1)[0].strip()
        if self.error_type and said:
            return f"{self.error_type}: {said}"
        return self.error_type or said or self.headline

    @property
    def text(self) -> str:
        """What the error says, to read: the detail's message, else the whole record."""
        return self.error_message if self.detailed and self.error_message else self.message

    def denial(self) -> DeniedCall | None:
        """The denied call the record shows, in either SDK's shape, or None."""
        return parse_denial(self.text, code=self.error_code, operation=self.operation)

    def quoted(self) -> tuple[str, str]:
        """(the answer's field, the verbatim value there) that shows this failure."""
        if self.field:
            return self.field, self.quote
        if self.detailed and self.error_message:
            said = excerpt(self.error_message.split("\n", 1)[0], QUOTE_CHARS)
            if said and value_matches(said, self.error_message):
                return f"events.{self.index}.error.message", said
        if self.detailed and self.error_type:
            return f"events.{self.index}.error.type", self.error_type
        headline = excerpt(self.headline, QUOTE_CHARS)
        return f"events.{self.index}.message", headline if value_matches(
            headline, self.message
        ) else self.message

    def pointer(self, interpretation: str, supports: FaultType | None) -> Pointer:
        field, value = self.quoted()
        return Pointer("get_recent_logs", field, value, interpretation, supports)

    def frame_pointer(self) -> Pointer | None:
        """The record's first frame in the function's own code, when the answer gives it."""
        if self.frame is None or self.field:
            return None
        where = f"events.{self.index}.error.frame"
        return Pointer(
            "get_recent_logs", where, self.frame, "Where in the function's own code it failed", None
        )


def _aws_code(code: Any) -> str | None:
    return code if isinstance(code, str) and _AWS_CODE.fullmatch(code) else None


def _detail(event: dict[str, Any]) -> dict[str, Any] | None:
    detail = event.get("error")
    if isinstance(detail, dict) and any(detail.get(key) for key in ("type", "message", "code")):
        return detail
    return None


def _read(index: int, event: dict[str, Any], request_id: str, started: datetime | None) -> Failure:
    """One terminal record: from its error detail, else (an answer without it) the Python text record."""
    message, kind = str(event.get("message", "")), str(event.get("kind"))
    detail = _detail(event)
    if detail is not None:
        said = str(detail["message"]) if detail.get("message") else None
        client = _CLIENT_ERROR.search(said or "")
        return Failure(
            index=index,
            request_id=request_id,
            kind=kind,
            message=message,
            error_type=str(detail["type"]) if detail.get("type") else None,
            error_code=_aws_code(detail.get("code")) or (client[1] if client else None),
            operation=detail.get("operation") or (client[2] if client else None),
            started=started,
            error_message=said,
            frame=str(detail["frame"]) if detail.get("frame") else None,
            detailed=True,
        )
    record = _RECORD.match(message) if kind in ("error_record", "init_error") else None
    client = _CLIENT_ERROR.search(message)
    return Failure(
        index=index,
        request_id=request_id,
        kind=kind,
        message=message,
        error_type=record[1] if record else None,
        error_code=client[1] if client else None,
        operation=client[2] if client else None,
        started=started,
        error_message=record[2] if record else None,
    )


def _failing_since(c: Conversation) -> datetime | None:
    """The earliest start of an invocation the metrics' first minute with errors can count: a datapoint is
    recorded when the invocation ends, so one that started in the minute before may be in it."""
    first = instant(c.metrics.get("first_error_minute"))
    return first - MINUTE if first is not None else None


def failures(c: Conversation) -> list[Failure]:
    """Terminal errors of the invocations whose REPORT line shows a failure, oldest first; only those that
    started once the metrics show failing invocations (older lines describe an earlier incident). When the
    configuration keeps the reports from being written, the runtime's terminal record of a request stands
    for its failure, at the record's time (the invocation's start is not written either)."""
    logs, since = c.logs, _failing_since(c)
    if since is None:
        return []
    failed = {
        i.get("request_id"): instant(i.get("started"))
        for i in logs.get("invocations", [])
        if i.get("outcome") in TERMINAL_KINDS and (instant(i.get("started")) or since) >= since
    }
    found = [
        _read(index, event, str(event["request_id"]), failed[event["request_id"]])
        for index, event in enumerate(logs.get("events", []))
        if event.get("kind") in TERMINAL_KINDS and event.get("request_id") in failed
    ]
    if reports_suppressed(c.config):  # no report ties a record to its invocation: the record is the failure
        found += [
            _read(index, event, str(event["request_id"]), when)
            for index, event in enumerate(logs.get("events", []))
            if event.get("kind") in TERMINAL_KINDS
            and event.get("request_id")
            and event["request_id"] not in failed
            and (when := instant(event.get("timestamp"))) is not None
            and when >= since
        ]
    unrecorded = _init_failures(c, failed, {f.request_id for f in found})
    # The answer lists events stream by stream: a record's place in it says nothing of when it was written.
    return sorted([*found, *unrecorded], key=lambda f: f.started or _EPOCH)


def _unreported_at(
    c: Conversation, outcomes: frozenset[str], requests: frozenset[str] | None, *, last: bool
) -> tuple[datetime, Pointer] | None:
    """The first (or last) terminal record of a request no report shows, when none are written."""
    reported = {i.get("request_id") for i in c.logs.get("invocations", [])}
    found = [
        (f.started, f)
        for f in failures(c)
        if f.request_id not in reported
        and f.kind in outcomes
        and f.started is not None
        and (requests is None or f.request_id in requests)
    ]
    if not found:
        return None
    started, failure = found[-1] if last else found[0]
    stamp = c.logs["events"][failure.index]["timestamp"]
    which = "last" if last else "first"
    pointer = Pointer(
        "get_recent_logs",
        f"events.{failure.index}.timestamp",
        stamp,
        f"The {which} failed request's error record (no report is written)",
        None,
    )
    return started, pointer


def newest_failure(c: Conversation) -> Failure | None:
    """The record of the failed invocation that started last, by the reports read; None when its record
    was not read (then no older record can stand for what fails now)."""
    since = _failing_since(c)
    if since is None:
        return None
    started = [
        (when, i.get("request_id"))
        for i in c.logs.get("invocations", [])
        if i.get("outcome") in TERMINAL_KINDS
        and (when := instant(i.get("started"))) is not None
        and when >= since
    ]
    if not started:
        return None
    newest = max(started, key=lambda pair: pair[0])[1]
    return next((f for f in reversed(failures(c)) if f.request_id == newest), None)


def _init_failures(c: Conversation, failed: dict[Any, datetime | None], recorded: set[str]) -> list[Failure]:
    """Invocations whose init phase failed and whose own lines hold no terminal record (Lambda writes the init
    phase's lines before the invocation's START): shown by the invocation's report, and read from the latest
    init error record of its log stream before it started."""
    found = []
    events = c.logs.get("events", [])
    for index, invocation in enumerate(c.logs.get("invocations", [])):
        request = invocation.get("request_id")
        if invocation.get("outcome") != "init_error" or request not in failed or request in recorded:
            continue
        started = failed[request]
        before = [
            (n, e)
            for n, e in enumerate(events)
            if e.get("kind") == "init_error"
            and e.get("log_stream") == invocation.get("log_stream")
            and (started is None or (instant(e.get("timestamp")) or started) <= started)
        ]
        read = _read(*before[-1], str(request), started) if before else None
        reported = invocation.get("error_type")
        found.append(
            Failure(
                index=index,
                request_id=str(request),
                kind="init_error",
                message=read.message if read else "",
                error_type=(read.error_type if read else None) or reported,
                error_code=read.error_code if read else None,
                operation=read.operation if read else None,
                started=started,
                error_message=read.error_message if read else None,
                frame=read.frame if read else None,
                detailed=read.detailed if read else False,
                field=f"invocations.{index}." + ("error_type" if reported else "outcome"),
                quote=str(reported or "init_error"),
            )
        )
    return found


def alike(c: Conversation, failure: Failure) -> frozenset[str]:
    """The requests whose failures say what ``failure`` says (its error type and AWS error code): the ones a
    finding read from it explains, and not those of another fault before or after it."""
    said = (failure.error_type, failure.error_code)
    return frozenset(f.request_id for f in failures(c) if (f.error_type, f.error_code) == said)


def first_failure(
    c: Conversation,
    *,
    throttles: bool = False,
    outcomes: frozenset[str] = TERMINAL_KINDS,
    requests: frozenset[str] | None = None,
) -> tuple[datetime, Pointer] | None:
    """When failing began, with the pointer that shows it: the START of the first failed invocation (ended
    in one of ``outcomes``, and one of ``requests`` when given: the ones the finding explains) whose REPORT
    line was read, else the first minute the metrics show errors (or throttles) in."""
    return _failure_at(c, throttles, outcomes, requests, last=False)


def last_failure(
    c: Conversation,
    *,
    throttles: bool = False,
    outcomes: frozenset[str] = TERMINAL_KINDS,
    requests: frozenset[str] | None = None,
) -> tuple[datetime, Pointer] | None:
    """When the latest failure of that kind began: the START of the last such invocation read, else the
    last minute the metrics show errors (or throttles) in."""
    return _failure_at(c, throttles, outcomes, requests, last=True)


def _failure_at(
    c: Conversation,
    throttles: bool,
    outcomes: frozenset[str],
    requests: frozenset[str] | None,
    *,
    last: bool,
) -> tuple[datetime, Pointer] | None:
    since = _failing_since(c)
    which = "last" if last else "first"
    if not throttles and since is not None:
        invocations = list(enumerate(c.logs.get("invocations", [])))
        for index, invocation in reversed(invocations) if last else invocations:
            when = instant(invocation.get("started"))
            explained = requests is None or invocation.get("request_id") in requests
            if invocation.get("outcome") in outcomes and explained and when is not None and when >= since:
                started = invocation["started"]
                return when, Pointer(
                    "get_recent_logs",
                    f"invocations.{index}.started",
                    started,
                    f"The {which} failed invocation",
                    None,
                )
        if reports_suppressed(c.config):
            unreported = _unreported_at(c, outcomes, requests, last=last)
            if unreported is not None:
                return unreported
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


def first_failure_since(
    c: Conversation, first: tuple[datetime, Pointer], since: datetime
) -> tuple[datetime, Pointer] | None:
    """The earliest failure like ``first`` that can have started at or after ``since``: an invocation that
    ended as the one ``first`` points at did, or a metrics minute with the same kind of failure that ends
    after ``since``. None when none shows, or when ``first`` is neither kind."""
    _, pointer = first
    invocations = c.logs.get("invocations", [])
    if pointer.tool == "get_recent_logs" and pointer.field.startswith("invocations."):
        outcome = invocations[int(pointer.field.split(".")[1])].get("outcome")
        later = [
            (when, index)
            for index, invocation in enumerate(invocations)
            if invocation.get("outcome") == outcome
            and (when := instant(invocation.get("started"))) is not None
            and when >= since
        ]
        if not later:
            return None
        when, index = min(later)
        started = invocations[index]["started"]
        shown = "The first failed invocation once the fault came back"
        return when, Pointer("get_recent_logs", f"invocations.{index}.started", started, shown, None)
    what = {"first_throttle_minute": "throttles", "first_error_minute": "errors"}.get(pointer.field)
    if pointer.tool != "get_function_metrics" or what is None:
        return None
    for index, minute in enumerate(c.metrics.get("minutes", [])):
        when = instant(minute.get("timestamp"))
        if minute.get(what) and when is not None and when + MINUTE > since:
            shown = f"The first minute with {what} once the fault came back"
            return when, Pointer("get_function_metrics", f"minutes.{index}.{what}", minute[what], shown, None)
    return None
