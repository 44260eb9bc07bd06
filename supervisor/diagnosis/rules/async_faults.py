"""Existing fault classes on an asynchronous invocation path, read from ``get_event_sources`` (its queues and
``AWS/Lambda`` asynchronous metrics, which the function's users cannot write) beside the logs and metrics.

- A poison event (bad_input): the function's code failed on one event on every attempt Lambda made, the
  event was discarded (``AsyncEventsDropped``; sent to the dead-letter queue or on-failure destination first,
  https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#async-invocation-metrics),
  while the same version succeeded on other events in the same minutes.
- A dead-letter queue the role may not send to (permission_loss): ``DeadLetterErrors`` while the execution
  role does not allow ``sqs:SendMessage`` on it.
- No dead-letter queue or on-failure destination after a change removed it (configuration_error): Lambda
  drops the failed events and nothing keeps them.

The last two are deliveries' faults, not why invocations failed (``Finding.explains_invocations``): a poison
event beside them is named too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from supervisor.diagnosis.corroboration import TERMINAL_KINDS
from supervisor.diagnosis.iam_policy import StatementRef, evaluate_role
from supervisor.diagnosis.rules import signs
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.event_paths import TOOL, positive
from supervisor.diagnosis.rules.failures import Failure, failures, first_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Remedy
from supervisor.diagnosis.rules.grants import is_role_change, role_changes
from supervisor.diagnosis.rules.triggers import change_events, previous_setting

_LOGS, _METRICS, _IAM = "get_recent_logs", "get_function_metrics", "get_iam_state"
SEND = "sqs:SendMessage"
QUOTE_CHARS = 200  # the error record is the function's output (so its input's): quoted, not at any length


def _async(c: Conversation) -> dict[str, Any]:
    config = c.event_sources.get("async_config")
    return config if isinstance(config, dict) else {}


def _metric(c: Conversation, name: str) -> Any:
    return (_async(c).get("metrics") or {}).get(name)


def _failed_destination(c: Conversation) -> tuple[int, dict[str, Any]] | None:
    """The dead-letter queue or on-failure destination (dead-letter queue first), with its index."""
    listed = [
        (index, d) for index, d in enumerate(_async(c).get("destinations") or []) if isinstance(d, dict)
    ]
    for kind in ("dead_letter_queue", "on_failure"):
        for index, destination in listed:
            if destination.get("kind") == kind:
                return index, destination
    return None


def _input_failure(failure: Failure) -> bool:
    """An exception the code raised (not an AWS error, a denial, a timeout or a runtime error)."""
    return (
        failure.kind == "error_record"
        and failure.error_type is not None
        and failure.error_code is None
        and failure.denial() is None
        and signs.runtime_error(failure) is None
    )


@dataclass(frozen=True)
class _Poison:
    failure: Failure  # the newest error record of the failed events
    failed: list[str]  # the failed events' request ids (every attempt of an event keeps its id)
    success: tuple[int, str, str]  # (invocations index, request id, log stream) of a success since then
    minute: tuple[int, dict[str, Any]]  # a metrics minute with failures and successes


def _success(c: Conversation, failed: set[str]) -> tuple[int, str, str] | None:
    """A successful invocation since the latest change, on a log stream's version that also failed."""
    latest = max((e.time for e in change_events(c)), default=None)
    invocations = list(enumerate(c.logs.get("invocations") or []))
    versions = {_version(i) for _, i in invocations if i.get("request_id") in failed}
    for index, invocation in invocations:
        started = instant(invocation.get("started"))
        if invocation.get("outcome") in TERMINAL_KINDS or started is None:
            continue
        if (latest is None or started >= latest) and _version(invocation) in versions - {None}:
            return index, str(invocation.get("request_id")), str(invocation.get("log_stream"))
    return None


def _version(invocation: dict[str, Any]) -> str | None:
    stream = str(invocation.get("log_stream") or "")
    return stream[stream.find("[") + 1 : stream.find("]")] if "[" in stream and "]" in stream else None


def _minute(c: Conversation) -> tuple[int, dict[str, Any]] | None:
    for index, minute in enumerate(c.metrics.get("minutes") or []):
        errors, invocations = minute.get("errors") or 0, minute.get("invocations") or 0
        if errors and invocations > errors:
            return index, minute
    return None


def _poison(c: Conversation) -> _Poison | None:
    if not positive(_metric(c, "AsyncEventsDropped")) or not c.metrics.get("errors"):
        return None
    found = [f for f in failures(c) if f.request_id]
    if not found or not all(_input_failure(f) for f in found):
        return None  # a timeout, a denial or an AWS error fails whatever the event: not the event's
    failed = set(dict.fromkeys(f.request_id for f in found))
    success, minute = _success(c, failed), _minute(c)
    if success is None or minute is None:
        return None
    return _Poison(found[-1], list(failed), success, minute)


def poison_event(c: Conversation) -> Finding | None:
    """bad_input: asynchronous events the code failed on, discarded by Lambda, while other events of the same
    version succeed."""
    poison = _poison(c)
    if poison is None:
        return None
    return _poison_finding(c, poison)


def _quoted(failure: Failure) -> str:
    text = failure.summary
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _poison_pointers(c: Conversation, poison: _Poison) -> list[Pointer]:
    at, counts = poison.minute
    index, rid, stream = poison.success
    dropped = _metric(c, "AsyncEventsDropped")
    return [
        Pointer(
            _METRICS,
            f"minutes.{at}.errors",
            counts["errors"],
            "Invocations failed in that minute",
            "bad_input",
        ),
        Pointer(
            _METRICS,
            f"minutes.{at}.invocations",
            counts["invocations"],
            "More invocations than failures in that minute: the other events succeeded",
            "bad_input",
        ),
        poison.failure.pointer(f"The error record of event {poison.failure.request_id}", "bad_input"),
        Pointer(
            _LOGS, f"invocations.{index}.log_stream", stream, f"Request {rid} succeeded on that version", None
        ),
        Pointer(
            TOOL,
            "async_config.metrics.AsyncEventsDropped",
            dropped,
            f"{dropped:g} asynchronous event(s) discarded after their last attempt",
            None,
        ),
    ]


def _destination(c: Conversation) -> tuple[str, list[Pointer]]:
    """Where Lambda sent the discarded events, in words, and the pointers that show it and its depth."""
    found = _failed_destination(c)
    if found is None:
        return "no dead-letter queue or on-failure destination keeps the discarded event(s)", []
    index, destination = found
    arn, where = str(destination["Destination"]), f"async_config.destinations.{index}"
    pointers = [Pointer(TOOL, f"{where}.Destination", arn, f"Failed events go to {arn}", None)]
    depth = (destination.get("queue") or {}).get("ApproximateNumberOfMessages")
    if positive(depth):
        shown = f"{depth} message(s) wait in {arn}"
        pointers.append(Pointer(TOOL, f"{where}.queue.ApproximateNumberOfMessages", depth, shown, None))
        return f"Lambda sent the discarded event(s) to {arn}", pointers
    if destination.get("kind") == "dead_letter_queue" and positive(_metric(c, "DeadLetterErrors")):
        return f"Lambda could not send them to {arn} (DeadLetterErrors): they are lost", pointers
    return f"Lambda sends discarded events to {arn}", pointers


def _poison_finding(c: Conversation, poison: _Poison) -> Finding:
    name, failure = c.name, poison.failure
    rid, count = failure.request_id, len(poison.failed)
    where, shown = _destination(c)
    retries = _async(c).get("MaximumRetryAttempts")
    attempts = f"on each of its {retries + 1} attempt(s)" if isinstance(retries, int) else "on every attempt"
    cause = (
        f"{name} fails on {count} asynchronous event(s) it cannot read while other events of the same "
        f'version succeed: event {rid} failed {attempts} with "{_quoted(failure)}" and was discarded; '
        f"{where}. The event, not the function, its configuration or its permissions, is the cause"
    )
    remedy = Remedy(
        f"Inspect the failed event(s) and fix them at their source ({rid})",
        "No AWS command fixes an event's content. Read the failed event from where Lambda sent it, find the "
        f"publisher that wrote it, fix it there (or make {name} reject it without failing), then publish a "
        "corrected event.",
        None,
        "low",
    )
    pointers = _poison_pointers(c, poison) + shown
    gap = Gap(
        "remediation",
        f"No command can fix this: {name} fails on what was published to it ({failure.error_type} in event "
        f"{rid}); {where}. The event must be inspected and fixed, and published again, by whoever owns it.",
        (pointers[2], *shown),
    )
    destination = _failed_destination(c)
    return Finding(
        "bad_input",
        cause,
        "medium",
        pointers,
        remedy,
        first_failure=first_failure(c),
        gaps=(gap,),
        from_change=False,
        resources=(str(destination[1]["Destination"]),) if destination else (),
    )


def _dead_letter_queue(c: Conversation) -> tuple[int, str] | None:
    for index, destination in enumerate(_async(c).get("destinations") or []):
        if isinstance(destination, dict) and destination.get("kind") == "dead_letter_queue":
            return index, str(destination["Destination"])
    return None


def dead_letter_denied(c: Conversation) -> Finding | None:
    """permission_loss: failed deliveries to the function's dead-letter queue (``DeadLetterErrors``, counted
    by Lambda) while its execution role does not allow ``sqs:SendMessage`` on that queue. Lambda sends the
    event there with the function's role
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html#invocation-dlq)."""
    errors, found = _metric(c, "DeadLetterErrors"), _dead_letter_queue(c)
    if not positive(errors) or found is None or not c.iam:
        return None
    index, queue = found
    evaluation = evaluate_role(c.iam, SEND, queue)
    if evaluation.decision not in ("denied", "implicit_deny", "boundary_excludes"):
        return None
    role = str(c.iam.get("role_name") or "the execution role")
    refs = [m.statement for m in evaluation.deciding]
    shown = f"{errors:g} failed event(s) could not be sent to {queue}"
    pointers = [
        Pointer(TOOL, "async_config.metrics.DeadLetterErrors", errors, shown, None),
        Pointer(TOOL, f"async_config.destinations.{index}.Destination", queue, "The dead-letter queue", None),
        *[_statement(ref, f"Decides against {SEND} on {queue}") for ref in refs[:3]],
    ]
    for name, document in list((c.iam.get("inline_policies") or {}).items())[: 0 if refs else 3]:
        statements = document.get("Statement", []) if isinstance(document, dict) else document
        what = f"Nothing in {name} allows {SEND} on {queue}"
        pointers.append(
            Pointer(_IAM, f"inline_policies.{name}.Statement", statements, what, "permission_loss")
        )
    return Finding(
        "permission_loss",
        f"The execution role {role} does not allow {SEND} on {c.name}'s dead-letter queue {queue} "
        f"({evaluation.reason}): {shown}, and Lambda dropped them.",
        "high",
        pointers,
        _dead_letter_remedy(c, role, queue, refs),
        relevant_change=is_role_change,
        first_failure=first_failure(c),
        resources=(queue,),
        explains_invocations=False,
    )


def _statement(ref: StatementRef, what: str) -> Pointer:
    """The statement's Resource (else its Action, else its Effect), at its path in get_iam_state."""
    key, value = ("Resource", ref.resource) if ref.resource is not None else ("Action", ref.action)
    if value is None:
        key, value = "Effect", ref.effect
    shown = list(value) if isinstance(value, tuple) else value
    return Pointer(_IAM, f"{ref.path}.{key}", shown, what, "permission_loss")


def _dead_letter_remedy(c: Conversation, role: str, queue: str, refs: list[StatementRef]) -> Remedy:
    """Delete the inline policy a change put with the deciding Deny; else, with no Deny, grant the send."""
    denying = {
        r.path.removeprefix("inline_policies.").rsplit(".Statement", 1)[0] for r in refs if r.effect == "Deny"
    }
    for change in role_changes(c):  # the newest first
        summary = change.event.get("summary") or {}
        if change.operation == "PutRolePolicy" and summary.get("policyName") in denying:
            name = summary["policyName"]
            return Remedy(
                f"Delete the inline policy {name} of {role}",
                f"Its Deny covers {SEND} on the dead-letter queue; {change.event.get('identity_arn')} put "
                f"it at {change.event['time']}.",
                command(c, "iam", "DeleteRolePolicy", {"RoleName": role, "PolicyName": name}),
            )
    if denying or any(r.effect == "Deny" for r in refs):
        return Remedy(
            f"Remove the Deny of {SEND} from {role}",
            "A Deny statement no change in the history put covers it: find who owns it before removing it.",
        )
    statement = {"Effect": "Allow", "Action": SEND, "Resource": queue}
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]}, separators=(",", ":"))
    return Remedy(
        f"Let {role} send to {queue}",
        "Lambda sends failed events to the dead-letter queue with the function's execution role.",
        command(
            c,
            "iam",
            "PutRolePolicy",
            {"RoleName": role, "PolicyName": "dead-letter-queue", "PolicyDocument": document},
        ),
    )


_DESTINATION_OPERATIONS = frozenset(
    {"PutFunctionEventInvokeConfig", "UpdateFunctionEventInvokeConfig", "DeleteFunctionEventInvokeConfig"}
)


def _keeps_failures(change: ChangeEvent) -> bool:
    """A change to where failed events go: the dead-letter queue, or the on-failure destination."""
    if change.operation == "UpdateFunctionConfiguration":
        return "deadletterconfig" in change.changed_fields
    return change.operation in _DESTINATION_OPERATIONS


def dead_letter_missing(c: Conversation) -> Finding | None:
    """configuration_error: Lambda drops asynchronous events (``AsyncEventsDropped``) while the function has
    neither a dead-letter queue nor an on-failure destination, so what fails is lost, after a change that
    removed one (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html)."""
    config, dropped = _async(c), _metric(c, "AsyncEventsDropped")
    if not positive(dropped) or "destinations" not in config or _failed_destination(c) is not None:
        return None
    if not any(_keeps_failures(e) for e in change_events(c)):
        return None  # never had one: a choice the change history does not show as a fault
    pointers = [
        Pointer(
            TOOL,
            "async_config.destinations",
            config["destinations"],
            "No dead-letter queue or on-failure destination",
            "configuration_error",
        ),
        Pointer(
            TOOL, "async_config.metrics.AsyncEventsDropped", dropped, f"{dropped:g} event(s) dropped", None
        ),
    ]
    remedy, shown, queue = _restore_dead_letter_queue(c)
    return Finding(
        "configuration_error",
        f"{c.name} has no dead-letter queue or on-failure destination: Lambda dropped {dropped:g} "
        "asynchronous event(s) that failed, and nothing kept them.",
        "high",
        pointers + shown,
        remedy,
        relevant_change=_keeps_failures,
        first_failure=first_failure(c),
        explains_invocations=False,
        resources=queue,
    )


def _restore_dead_letter_queue(c: Conversation) -> tuple[Remedy, list[Pointer], tuple[str, ...]]:
    """Put back the dead-letter queue the change history shows the function had (its creation or an earlier
    update), which the fix then sends to; without one, no command."""
    previous = previous_setting(c, "deadLetterConfig")
    value = previous[0] if previous is not None else None
    arn = (
        next((v for k, v in value.items() if k.lower() == "targetarn"), None)
        if isinstance(value, dict)
        else None
    )
    if previous is None or not isinstance(arn, str) or not arn:
        return (
            Remedy(
                f"Give {c.name} a dead-letter queue or an on-failure destination again",
                "The change history does not show the queue it had: choose one the role may send to.",
            ),
            [],
            (),
        )
    params = {"FunctionName": c.name, "DeadLetterConfig": {"TargetArn": arn}}
    remedy = Remedy(
        f"Set {c.name}'s dead-letter queue back to {arn}",
        "Failed asynchronous events are kept there again; the events dropped meanwhile are lost.",
        command(c, "lambda", "UpdateFunctionConfiguration", params),
        "low",
    )
    return remedy, [previous[1]], (arn,)
