"""Bad input: invocations that fail on their own input while others of the same version and configuration
succeed in between.

The logs say which invocations failed and succeeded, on which version (Lambda names each execution
environment's log stream ``<date>/[<version>]<id>``), and what the failing ones died of; the change history
says since when the configuration is the same (the latest change that went through); the metrics, which the
function's users cannot write, corroborate: a minute after that change in which invocations succeeded beside
the failures. A success must follow the first failure on every version that fails: failures that begin after
the last success and never stop are what a change does (one CloudTrail may not have delivered yet), not an
input's. Unless the error says what the input named does not exist: a request that asked S3 for an object
(an ``s3://`` URI in its own lines) that no successful request named, answered NoSuchKey, after a success
on the same version with nothing changed since, failed on its own input even when it is the newest
invocation (one bad request); the metrics corroborate with the successes counted before it. Or unless a
stream mapping that never gives up holds records back longer than an invocation runs, and every invocation
since the last success (on its version, nothing changed since) failed with the same error: one batch sent
again and again (a shard sends one batch at a time, and a table's stream often has one shard), not every
input; the mapping's record age corroborates. A stream mapping stalled behind such failures gets its command
(``stream_faults``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from supervisor.diagnosis.causality import PROPAGATION
from supervisor.diagnosis.corroboration import TERMINAL_KINDS
from supervisor.diagnosis.rules import async_faults, queue_faults, stream_faults
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.failures import MINUTE, Failure, failures, first_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Rejection, Remedy, Verdict
from supervisor.diagnosis.rules.triggers import change_events

_LOGS, _METRICS = "get_recent_logs", "get_function_metrics"
_VERSION = re.compile(r"^[^\[]*\[([^\]]+)\]")  # '2026/11/25/[$LATEST]abc' -> '$LATEST'
# An S3 object a line names, as functions print what they read: 's3://<bucket>/<key>' (bucket naming rules:
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html)
_S3_OBJECT = re.compile(r"\bs3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^\s\"',]+")
NO_SUCH_KEY = "NoSuchKey"  # S3's error code for a key that does not exist (GetObject, HeadObject)
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
        found = _missing_objects(c, runs) or _retried_batch(c, runs)
        return found or (_rejection(c, failed, latest) if failed else None)
    failure = _decisive(c, mixed)
    minute = _minute(c, runs, since)
    if failure is None or minute is None:
        return None
    return stream_faults.on_blocked_shard(
        c, _finding(c, mixed, failure, _pointers(mixed, failure, minute), latest)
    )


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
    return _input_finding(c, cause, remedy, failure, pointers)


def _input_finding(
    c: Conversation, cause: str, remedy: Remedy, failure: Failure, pointers: list[Pointer]
) -> Finding:
    """bad_input, with no command and the gap that says where to look instead."""
    error = failure.error_type or failure.kind
    gap = Gap(
        "remediation",
        f"No command can fix this: {c.name} fails on what its callers send it ({error} in request "
        f"{failure.request_id}), while the same version and configuration succeed on other input. Look at "
        "the caller that sent it (the event source, client or job that builds the event) and the object or "
        "record the event names.",
        (pointers[2],),  # the error record, third in both builders
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


def _after_last_success(c: Conversation, runs: list[_Run]) -> tuple[_Run, list[_Run]] | None:
    """The last success and the invocations after it, when they all failed on its version and nothing
    changed since it."""
    success = next((run for run in reversed(runs) if not run.failed), None)
    if success is None or any(e.time > success.started - PROPAGATION for e in change_events(c)):
        return None
    tail = [run for run in runs if run.started > success.started]
    if not tail or any(not run.failed or run.version != success.version for run in tail):
        return None
    return success, tail


def _batch_failures(c: Conversation, runs: list[_Run]) -> tuple[_Run, list[Failure]] | None:
    """The last success and the error records after it, when a stalled stream mapping sends one batch again
    and again: at least two failures since the success, each the same error."""
    found = _after_last_success(c, runs)
    if found is None or len(found[1]) < 2 or stream_faults.stalled_mapping(c) is None:
        return None
    success, tail = found
    records = {f.request_id: f for f in failures(c) if f.kind == "error_record"}
    errors = [records[run.request_id] for run in tail if run.request_id in records]
    if len(errors) != len(tail) or len({(e.error_type, e.summary) for e in errors}) != 1:
        return None
    return success, errors


def retried_batch(c: Conversation) -> bool:
    """Whether the failures are one stream batch retried alone after successes, nothing changed since: what
    this class names an input's failures though no success follows them."""
    return _batch_failures(c, _runs(c)) is not None


def _retried_batch(c: Conversation, runs: list[_Run]) -> Finding | None:
    found = _batch_failures(c, runs)
    if found is None:
        return None
    success, errors = found
    newest = errors[-1]
    failed = next(run for run in runs if run.request_id == newest.request_id)
    pointers = [
        Pointer(_METRICS, "errors", c.metrics["errors"], "Invocations ended in an error", "bad_input"),
        Pointer(
            _LOGS,
            f"invocations.{success.index}.outcome",
            "no_error_seen",
            f"Request {success.request_id} succeeded before the failures, nothing changed since",
            None,
        ),
        newest.pointer(f"The error record of failed request {newest.request_id}", "bad_input"),
        _stream(failed, f"Request {failed.request_id} ran on version {success.version}"),
        _stream(success, f"Request {success.request_id} ran on version {success.version} too"),
    ]
    name, rid = c.name, newest.request_id
    cause = (
        f"{name} fails on its own input: the {len(errors)} invocations since request {success.request_id} "
        f"succeeded on version {success.version} (nothing changed since) all failed with "
        f'"{_quoted(newest)}", the stream sending the batch that fails again and again'
    )
    remedy = Remedy(
        f"Find the record {name} fails on (request {rid})",
        "No AWS command fixes a record: fix it at its producer, or make the function reject it without "
        "failing.",
        None,
        "low",
    )
    return stream_faults.on_blocked_shard(c, _input_finding(c, cause, remedy, newest, pointers))


def _named_objects(c: Conversation, request_id: str) -> dict[str, int]:
    """The S3 objects the request's own lines name, each with the index of the first line naming it."""
    named: dict[str, int] = {}
    for index, event in enumerate(c.logs.get("events") or []):
        if event.get("kind") == "function" and event.get("request_id") == request_id:
            for uri in _S3_OBJECT.findall(str(event.get("message") or "")):
                named.setdefault(uri, index)
    return named


def _missing_objects(c: Conversation, runs: list[_Run]) -> Finding | None:
    """The failures after the last success, all on its version with nothing changed since it, each S3's
    NoSuchKey for an object the request's own lines name and no successful request named."""
    found = _after_last_success(c, runs)
    if found is None:
        return None
    success, tail = found
    seen = {uri for run in runs if not run.failed for uri in _named_objects(c, run.request_id)}
    records = {f.request_id: f for f in failures(c) if f.kind == "error_record"}
    missing = []
    for run in tail:
        record, named = records.get(run.request_id), _named_objects(c, run.request_id)
        unseen = {uri: line for uri, line in named.items() if uri not in seen}
        if record is None or record.error_code != NO_SUCH_KEY or not unseen:
            return None
        missing.append((run, record, *min(unseen.items(), key=lambda item: item[1])))
    minute = _counted_before(c, tail[0].started)
    if minute is None:
        return None
    return _missing_finding(c, success, missing, minute)


def _counted_before(c: Conversation, failed: datetime) -> tuple[int, dict[str, Any]] | None:
    """The latest metrics minute, no later than the failure's, in which invocations succeeded."""
    found = None
    for index, minute in enumerate(c.metrics.get("minutes", [])):
        start = instant(minute.get("timestamp"))
        if (
            start is not None
            and start <= failed
            and (minute.get("invocations") or 0) > (minute.get("errors") or 0)
        ):
            found = (index, minute)
    return found


def _missing_finding(
    c: Conversation,
    success: _Run,
    missing: list[tuple[_Run, Failure, str, int]],
    minute: tuple[int, dict[str, Any]],
) -> Finding:
    run, record, uri, line = missing[-1]
    at, counts = minute
    asked = f"request {run.request_id} asked for {uri}, which does not exist"
    if len(missing) > 1:
        each = "; ".join(f"{m[0].request_id} for {m[2]}" for m in missing)
        asked = f"{len(missing)} requests asked for objects that do not exist ({each})"
    cause = (
        f"{c.name} fails on its own input: {asked} (S3 answered {NO_SUCH_KEY}), after request "
        f"{success.request_id} succeeded on the same version ({success.version}) with nothing changed since, "
        "and no successful request named it. The request's input, not the function, its configuration or its "
        "permissions, is the cause"
    )
    remedy = Remedy(
        f"Find the caller that sent {c.name} request {run.request_id}",
        f"No AWS command fixes an invocation's input. Find who sent the request naming {uri}: fix the key at "
        f"its source (or put the object there if it should exist), or make {c.name} reject it without "
        "failing.",
        None,
        "low",
    )
    errors = c.metrics.get("errors")
    pointers = [
        Pointer(_METRICS, "errors", errors, "Invocations ended in an error", "bad_input"),
        Pointer(
            _METRICS,
            f"minutes.{at}.invocations",
            counts["invocations"],
            f"Invocations succeeded in the minute from {counts['timestamp']}, as the logs show",
            "bad_input",
        ),
        record.pointer(f"The error record of request {run.request_id}: the key does not exist", "bad_input"),
        Pointer(
            _LOGS,
            f"events.{line}.message",
            c.logs["events"][line]["message"],
            f"The request names {uri}",
            None,
        ),
        _stream(run, f"Request {run.request_id} ran on version {success.version}"),
        Pointer(
            _LOGS,
            f"invocations.{success.index}.outcome",
            "no_error_seen",
            f"Request {success.request_id} succeeded before it",
            None,
        ),
        _stream(success, f"Request {success.request_id} ran on version {success.version} too"),
    ]
    return _input_finding(c, cause, remedy, record, pointers)


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
