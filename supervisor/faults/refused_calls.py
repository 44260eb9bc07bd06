"""What a policy pointer must say to support a permission loss: that the role refuses a call the run shows
the function makes (``supervisor.faults.meanings`` for the other sources)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any, Final

from supervisor.diagnosis.causality import success_after
from supervisor.diagnosis.iam_policy import evaluate_role, parse_denial
from supervisor.faults.meanings import Reading

_IN_A_STATEMENT: Final = re.compile(
    r"\.Statement\.(\d+|[A-Za-z]\w*)(\.|$)"
)  # a statement, or a member of one
_DENYING: Final = ("denied", "implicit_deny", "boundary_excludes")
_SENDS: Final = {
    "sqs": "sqs:SendMessage",
    "sns": "sns:Publish",
    "lambda": "lambda:InvokeFunction",
    "events": "events:PutEvents",
}


def _function_arn(reading: Reading) -> str | None:
    for tool, key in (("get_lambda_config", "FunctionArn"), ("get_event_sources", "function_arn")):
        for answer in reading.answers(tool):
            if str(answer.get(key, "")).count(":") >= 6:
                return str(answer[key])
    return None


def _denied_in_logs(reading: Reading) -> Iterator[tuple[str, str | None]]:
    """The calls the terminal errors of failed invocations show denied."""
    for answer in reading.answers("get_recent_logs"):
        failed = {
            i.get("request_id")
            for i in answer.get("invocations") or []
            if isinstance(i, Mapping) and i.get("outcome") not in (None, "no_error_seen")
        }
        for event in answer.get("events") or []:
            if not isinstance(event, Mapping) or event.get("kind") not in ("error_record", "init_error"):
                continue
            if event.get("request_id") not in failed:
                continue  # a record of an invocation that did not fail, or of none read: not a denial
            error = event.get("error")
            detail: Mapping[str, Any] = error if isinstance(error, Mapping) else {}
            text = str(detail.get("message") or event.get("message") or "")
            denial = parse_denial(text, code=detail.get("code"), operation=detail.get("operation"))
            if denial is not None:
                yield denial.action, denial.resource


def needed_calls(reading: Reading) -> list[tuple[str, str | None]]:
    """The calls the run shows the function makes: those a failed invocation was denied, its log writes,
    its SQS mappings' reads and deletes, and its asynchronous deliveries."""
    calls = list(_denied_in_logs(reading))
    arn = _function_arn(reading)
    group = next(
        (str(a["log_group"]) for a in reading.answers("get_recent_logs") if a.get("log_group")), None
    )
    if arn and group:
        region, account = arn.split(":")[3:5]
        base = f"arn:aws:logs:{region}:{account}:log-group:{group}"
        calls += [("logs:CreateLogStream", f"{base}:*"), ("logs:PutLogEvents", f"{base}:log-stream:*")]
    for answer in reading.answers("get_event_sources"):
        for mapping in answer.get("mappings") or []:
            source = str(mapping.get("EventSourceArn", "")) if isinstance(mapping, Mapping) else ""
            if source.startswith("arn:aws:sqs:"):
                calls += [
                    (f"sqs:{op}", source) for op in ("ReceiveMessage", "DeleteMessage", "GetQueueAttributes")
                ]
        for destination in (answer.get("async_config") or {}).get("destinations") or []:
            target = str(destination.get("Destination", "")) if isinstance(destination, Mapping) else ""
            service = target.split(":")[2] if target.count(":") >= 5 else ""
            if service in _SENDS:
                calls.append((_SENDS[service], target))
    return list(dict.fromkeys(calls))


def _within(field: str, path: str) -> bool:
    return field == path or field.startswith(path + ".")


def _rewritten(reading: Reading, path: str) -> bool:
    """Whether a change in the run's history that succeeded rewrote or attached the policy at ``path`` and
    could have started the failures (no invocation succeeded after it and before the first failure)."""
    parts = path.split(".")
    policies = reading.answer.get("attached_policies") or []
    if parts[0] == "inline_policies":
        wanted = ("policyName", path.removeprefix("inline_policies.").rsplit(".Statement", 1)[0])
    elif parts[0] == "attached_policies" and parts[1].isdigit() and int(parts[1]) < len(policies):
        wanted = ("policyArn", str(policies[int(parts[1])].get("policy_arn")))
    else:
        return False
    logs = list(reading.answers("get_recent_logs"))
    for answer in reading.answers("get_recent_changes"):
        for event in answer.get("events") or []:
            summary = event.get("summary") or {} if isinstance(event, Mapping) else {}
            when = _instant(event.get("time"))
            if event.get("error_code") or summary.get(wanted[0]) != wanted[1] or when is None:
                continue
            if not success_after(when, logs):  # a rewrite followed by successes started nothing
                return True
    return False


def _instant(value: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return when if when.tzinfo else None


def refuses_a_call(reading: Reading) -> str:
    """A policy part that refuses a call the function makes: the Deny or boundary statement that decides it;
    failing those, an Allow of it scoped to other resources (when the denial names no resource, only one
    whose policy a change rewrote); or a policy collection that does not grant it."""
    for action, resource in needed_calls(reading):
        evaluation = evaluate_role(reading.answer, action, resource)
        if evaluation.decision not in (*_DENYING, "conditional"):
            continue
        statements = [m.statement for m in evaluation.deciding] + list(evaluation.near_misses)
        refusing = [s for s in statements if s.effect == "Deny" or s.path.startswith("permissions_boundary")]
        if not refusing:
            refusing = [
                s for s in statements if evaluation.decision in _DENYING or _rewritten(reading, s.path)
            ]
        if any(_within(reading.field, ref.path) for ref in refusing):
            return ""
        if evaluation.decision in _DENYING and not _IN_A_STATEMENT.search(reading.field):
            return ""  # a collection of policies that together do not grant the call
    return (
        f"{reading.field} refuses none of the calls this run shows the function makes (those a failed "
        "invocation was denied, its log writes, its queue reads, its deliveries): cite the Deny or "
        "boundary statement that decides the denied call, or the Allow of it a change scoped elsewhere"
    )
