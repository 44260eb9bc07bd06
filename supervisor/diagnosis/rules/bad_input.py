"""Bad input: invocations that fail on their own input while others of the same version and configuration
succeed in between.

The logs say which invocations failed and succeeded, on which version (Lambda names each execution
environment's log stream ``<date>/[<version>]<id>``), and what the failing ones died of; the change history
says since when the configuration is the same (the latest change that went through); the metrics, which the
function's users cannot write, corroborate: a minute after that change in which invocations succeeded beside
the failures. A success must follow the first failure on every version that fails: failures that begin after
the last success and never stop are what a change does (one CloudTrail may not have delivered yet), not an
input's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from supervisor.diagnosis.corroboration import TERMINAL_KINDS
from supervisor.diagnosis.rules import async_faults, queue_faults
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.failures import MINUTE, Failure, failures, first_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Rejection, Remedy, Verdict
from supervisor.diagnosis.rules.triggers import change_events

_LOGS, _METRICS = "get_recent_logs", "get_function_metrics"
_VERSION = re.compile(r"^[^\[]*\[([^\]]+)\]")  # '2026/11/25/[$LATEST]abc' -> '$LATEST'
QUOTE_CHARS = 200  # the error record is the function's output: quoted, but not at any length


@dataclass(frozen=True)
class _Run:
    """One invocation the logs read (its REPORT line), where it is in the answer."""

    index: int  # in get_recent_logs invocations
    request_id: str
    stream: str
    version: str
    started: datetime
    failed: bool


def _runs(c: Conversation) -> list[_Run]:
    """The invocations read whose start and version are known, oldest first."""
    runs = []
    for index, invocation in enumerate(c.logs.get("invocations", [])):
        started = instant(invocation.get("started"))
        stream = str(invocation.get("log_stream") or "")
        version = _VERSION.match(stream)
        if started is not None and version is not None:
            failed = invocation.get("outcome") in TERMINAL_KINDS
            runs.append(_Run(index, str(invocation.get("request_id")), stream, version[1], started, failed))
    return sorted(runs, key=lambda run: run.started)


@dataclass(frozen=True)
class _Mixed:
    """Failures and, after the first of them, successes on one version since the latest change."""

    version: str
    runs: list[_Run]  # every invocation of the version since the change
    failed: list[_Run]
    success: _Run  # the first success after the first failure


def _mixed(runs: list[_Run], since: datetime | None) -> tuple[_Mixed | None, list[_Run]]:
    """The version failing most since ``since`` when on every version that fails a success follows the
    first failure; else None, and the failed invocations of a version where none does (for a rejection)."""
    recent = [run for run in runs if since is None or run.started >= since]
    found = []
    for version in dict.fromkeys(run.version for run in recent if run.failed):
        mine = [run for run in recent if run.version == version]
        failed = [run for run in mine if run.failed]
        success = next((run for run in mine if not run.failed and run.started > failed[0].started), None)
        if success is None:
            return None, failed  # every input fails on this version: not the input
        found.append(_Mixed(version, mine, failed, success))
    return max(found, key=lambda mixed: len(mixed.failed), default=None), []


def interleaved(c: Conversation) -> bool:
    """Whether, since the latest change, a success follows the first failure on every version that fails:
    what this class names an input's failures (a code error with nothing deployed is one)."""
    latest = max(change_events(c), key=lambda e: e.time, default=None)
    return _mixed(_runs(c), latest.time if latest is not None else None)[0] is not None


def _minute(c: Conversation, runs: list[_Run], since: datetime | None) -> tuple[int, dict[str, Any]] | None:
    """A metrics minute after the latest change with failures and more successes than the logs place before
    the change in it (a minute that began before the change may hold successes from before it)."""
    for index, minute in enumerate(c.metrics.get("minutes", [])):
        start = instant(minute.get("timestamp"))
        errors, invocations = minute.get("errors") or 0, minute.get("invocations") or 0
        if start is None or not errors or invocations <= errors:
            continue
        if since is not None and start + MINUTE <= since:
            continue
        before = sum(
            1
            for run in runs
            if not run.failed and since is not None and start <= run.started < min(since, start + MINUTE)
        )
        if invocations - errors > before:
            return index, minute
    return None


def _decisive(c: Conversation, mixed: _Mixed) -> Failure | None:
    """The newest error record of the version's failed invocations."""
    failed = {run.request_id for run in mixed.failed}
    records = [f for f in failures(c) if f.request_id in failed and f.kind == "error_record"]
    return records[-1] if records else None


def _quoted(failure: Failure) -> str:
    text = failure.summary
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _pointers(mixed: _Mixed, failure: Failure, minute: tuple[int, dict[str, Any]]) -> list[Pointer]:
    at, counts = minute
    failed = next(run for run in mixed.failed if run.request_id == failure.request_id)
    success = mixed.success
    return [
        Pointer(
            _METRICS,
            f"minutes.{at}.errors",
            counts["errors"],
            f"Invocations failed in the minute from {counts['timestamp']}",
            "bad_input",
        ),
        Pointer(
            _METRICS,
            f"minutes.{at}.invocations",
            counts["invocations"],
            "More invocations than failures in that minute: the others succeeded",
            "bad_input",
        ),
        failure.pointer(f"The error record of failed request {failure.request_id}", "bad_input"),
        _stream(failed, f"Request {failed.request_id} ran on version {mixed.version}"),
        Pointer(
            _LOGS,
            f"invocations.{success.index}.outcome",
            "no_error_seen",
            f"Request {success.request_id} succeeded after the first failure",
            None,
        ),
        _stream(success, f"Request {success.request_id} ran on version {mixed.version} too"),
    ]


def _stream(run: _Run, interpretation: str) -> Pointer:
    return Pointer(_LOGS, f"invocations.{run.index}.log_stream", run.stream, interpretation, None)


def _since(change: ChangeEvent | None) -> str:
    if change is None:
        return "in the window read (the change history shows no change)"
    return f"since the latest change ({change.operation} at {change.event['time']})"


def check(c: Conversation) -> Verdict:
    # an asynchronous event discarded after failing, or an SQS message moved to its dead-letter queue
    return async_faults.poison_event(c) or queue_faults.poison_record(c) or _failed_inputs(c)


def _failed_inputs(c: Conversation) -> Verdict:
    if not c.metrics.get("errors"):
        return None
    latest = max(change_events(c), key=lambda e: e.time, default=None)
    since = latest.time if latest is not None else None
    runs = _runs(c)
    mixed, failed = _mixed(runs, since)
    if mixed is None:
        return _rejection(c, failed, latest) if failed else None
    failure = _decisive(c, mixed)
    minute = _minute(c, runs, since)
    if failure is None or minute is None:
        return None
    return _finding(c, mixed, failure, _pointers(mixed, failure, minute), latest)


def _finding(
    c: Conversation, mixed: _Mixed, failure: Failure, pointers: list[Pointer], latest: ChangeEvent | None
) -> Finding:
    name, rid = c.name, failure.request_id
    share = f"{len(mixed.failed)} of {len(mixed.runs)} invocations of version {mixed.version}"
    cause = (
        f"{name} fails on its own input: {share} read {_since(latest)} failed, interleaved with successes on "
        f'the same version and configuration. The decisive error, request {rid}: "{_quoted(failure)}". '
        "The failing invocations' input, not the function, its configuration or its permissions, is the cause"
    )
    remedy = Remedy(
        f"Find the caller that sends {name} the input of request {rid}",
        f"No AWS command fixes an invocation's input. Look at what the failing requests ({share}) were sent "
        f"and by whom: fix or drop that input at its source, or make {name} reject it without failing.",
        None,
        "low",
    )
    error = failure.error_type or failure.kind
    gap = Gap(
        "remediation",
        f"No command can fix this: {name} fails on what its callers send it ({error} in request {rid}), "
        "while the same version and configuration succeed on other input. Look at the caller that sent it "
        "(the event source, client or job that builds the event) and the object or record the event names.",
        (pointers[2],),  # the error record
    )
    return Finding(
        "bad_input",
        cause,
        "medium",
        pointers,
        remedy,
        first_failure=first_failure(c),
        gaps=(gap,),
        from_change=False,
    )


def _rejection(c: Conversation, failed: list[_Run], latest: ChangeEvent | None) -> Rejection:
    """Failures with no success after the first on their version: the metrics' failures, the change they
    follow (when there is one) and the first failed invocation (log text alone rules nothing out)."""
    first = failed[0]
    pointers = [Pointer(_METRICS, "errors", c.metrics["errors"], "Invocations failed", None)]
    if latest is not None:
        pointers.append(
            Pointer(
                "get_recent_changes",
                f"events.{latest.index}.time",
                latest.event["time"],
                f"The latest change, {latest.operation}",
                None,
            )
        )
    pointers.append(
        Pointer(
            _LOGS, f"invocations.{first.index}.request_id", first.request_id, "The first failure read", None
        )
    )
    return Rejection(
        "bad_input",
        f"No invocation of version {first.version} read {_since(latest)} succeeded after the first failure "
        f"(request {first.request_id}): failures of every input are not an input's",
        pointers,
    )
