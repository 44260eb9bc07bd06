"""Timeout: invocations run for as long as the configured timeout allows, and are stopped.

The metrics measure durations against the timeout configured now. Invocations the runtime stopped at a
lower timeout that has since been raised are a past fault: found from their own records, and reported only
as resolved, when the change history shows the change that lowered the timeout and the one that undid it.

An init past Lambda's 10-second init phase is retried in the invocation under the function's timeout
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html), so the invocation ends at
the timeout too. When the logs' ``INIT_REPORT`` says the init timed out, no timeout is suggested: how long
the init needs is not recorded (it was stopped), and a timeout just above the invocation's duration would
not give it that; the step is a gap. The log line can only take a command away, never add a fault.
"""

from __future__ import annotations

import math
import re

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.failures import first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Rejection, Remedy, Verdict
from supervisor.diagnosis.rules.triggers import previous_setting
from supervisor.faults.meanings import AT_LIMIT

NEAR_THE_TIMEOUT = 0.95  # a healthy run this close to the timeout shows what the work needs

_METRICS = "get_function_metrics"
MAX_TIMEOUT_SECONDS = 900
_INIT_TIMED_OUT = re.compile(r"^INIT_REPORT\b.*\bStatus: timeout\b")
_STOPPED = frozenset({"timeout"})
_STOPPED_STARTING = frozenset({"timeout", "init_error"})


def _relevant(event: ChangeEvent) -> bool:
    return event.operation == "UpdateFunctionConfiguration" and "timeout" in event.changed_fields


def _before_failing(c: Conversation) -> float | None:
    """The longest Duration of the minutes before the first failing one: what healthy runs needed."""
    first = instant(c.metrics.get("first_error_minute"))
    durations = [
        m["duration_max_ms"]
        for m in c.metrics.get("minutes", [])
        if m.get("duration_max_ms") is not None
        and (first is None or (instant(m.get("timestamp")) or first) < first)
        and not m.get("errors")
    ]
    return max(durations, default=None)


def _wanted(c: Conversation, timeout: int, longest: float) -> tuple[int, str, list[Pointer]]:
    """The timeout to set, why, and the pointers that justify it: the value before the change that lowered
    it, else 1.5 times the longest healthy run, else twice the current timeout."""
    previous = previous_setting(c, "timeout")
    if previous is not None and isinstance(previous[0], int) and previous[0] > timeout:
        return previous[0], f"its value before the change, {previous[0]} s", [previous[1]]
    healthy = _before_failing(c)
    if healthy is not None and healthy >= timeout * 1000 * NEAR_THE_TIMEOUT:
        wanted = min(MAX_TIMEOUT_SECONDS, math.ceil(healthy / 1000 * 1.5))
        index = next(i for i, m in enumerate(c.metrics["minutes"]) if m.get("duration_max_ms") == healthy)
        pointer = Pointer(
            _METRICS, f"minutes.{index}.duration_max_ms", healthy, "The longest run before the failures", None
        )
        return wanted, f"1.5 times the longest healthy run, {healthy:g} ms", [pointer]
    wanted = min(MAX_TIMEOUT_SECONDS, max(timeout * 2, math.ceil(longest / 1000) + 1))
    return wanted, f"twice the current {timeout} s: no healthy run shows what the work needs", []


def _stopped_before(c: Conversation, timeout: int) -> Finding | None:
    """Invocations the runtime stopped at their timeout, all shorter than the timeout now: a past fault."""
    stopped = [
        (index, i)
        for index, i in enumerate(c.logs.get("invocations", []))
        if i.get("outcome") == "timeout" and isinstance(i.get("duration_ms"), (int, float))
    ]
    if not stopped or max(i["duration_ms"] for _, i in stopped) >= timeout * 1000 * AT_LIMIT:
        return None
    index, longest = max(stopped, key=lambda pair: pair[1]["duration_ms"])
    name = c.name
    return Finding(
        "timeout",
        f"{name} ran out of time under a lower timeout than its {timeout} s now: {len(stopped)} invocations "
        f"were stopped at it, the longest after {longest['duration_ms']:g} ms.",
        "high",
        [
            Pointer(
                "get_recent_logs",
                f"invocations.{index}.outcome",
                "timeout",
                f"The runtime stopped this invocation at its timeout after {longest['duration_ms']:g} ms",
                None,
            )
        ],
        Remedy(f"Keep the timeout of {name} at {timeout} s", "The timeout that stopped them was raised."),
        relevant_change=_relevant,
        first_failure=first_failure(c, outcomes=_STOPPED),
        last_failure=last_failure(c, outcomes=_STOPPED),
        past=True,
    )


def _init_timed_out(c: Conversation) -> Pointer | None:
    """The newest ``INIT_REPORT`` line saying an init ran out of time."""
    events = list(enumerate(c.logs.get("events", [])))
    for n, event in reversed(events):
        message = str(event.get("message", ""))
        if event.get("kind") == "init_error" and _INIT_TIMED_OUT.match(message):
            return Pointer("get_recent_logs", f"events.{n}.message", message, "An init ran out of time", None)
    return None


def _starting_remedy(name: str, timeout: int) -> tuple[Remedy, Gap]:
    reason = (
        f"The init of {name} (its code outside the handler) ran past Lambda's 10-second init phase, and its "
        f"retry in the invocation ran into the {timeout} s timeout. How long the init needs is not recorded: "
        "make it shorter (move work from loading to first use, or roll back the deployment that slowed "
        "it), or set a timeout above its duration if that is known."
    )
    return Remedy(f"Make the init of {name} finish within 10 s", reason), Gap("remediation", reason)


def check(c: Conversation) -> Verdict:
    metrics = c.metrics
    ratio, longest = metrics.get("duration_to_timeout"), metrics.get("max_duration_ms")
    if ratio is None or longest is None or not metrics.get("timeout_seconds"):
        return None
    timeout = int(metrics.get("timeout_seconds") or 0)
    if ratio < AT_LIMIT or not metrics.get("errors"):
        stopped = _stopped_before(c, timeout)
        if stopped is not None:
            return stopped
        pointer = Pointer(
            _METRICS,
            "duration_to_timeout",
            ratio,
            f"The longest run took {ratio:.0%} of the {timeout} s timeout",
            None,
        )
        return Rejection("timeout", "No invocation ran into the timeout", [pointer])
    pointers = [
        Pointer(
            _METRICS,
            "duration_to_timeout",
            ratio,
            f"The longest run ({longest:g} ms) reached the configured timeout of {timeout} s",
            "timeout",
        ),
        Pointer(_METRICS, "timeout_seconds", timeout, "The configured timeout", "timeout"),
    ]
    name, starting = c.name, _init_timed_out(c)
    cause = f"its longest invocation took {longest:g} ms against a timeout of {timeout} s"
    gaps: tuple[Gap, ...] = ()
    if starting is not None:
        pointers.append(starting)
        cause += ", spent retrying an init that ran past the 10-second init phase"
        remedy, gap = _starting_remedy(name, timeout)
        gaps = (gap,)
    else:
        wanted, basis, cited = _wanted(c, timeout, longest)
        pointers += cited
        remedy = Remedy(
            f"Raise the timeout of {name} to {wanted} s",
            f"Set the timeout to {wanted} s ({basis}), or make the work shorter.",
            command(c, "lambda", "UpdateFunctionConfiguration", {"FunctionName": name, "Timeout": wanted}),
            "low",
        )
    outcomes = _STOPPED if starting is None else _STOPPED_STARTING
    return Finding(
        "timeout",
        f"{name} runs out of time: {cause}, so invocations are stopped before they finish.",
        "high",
        pointers,
        remedy,
        relevant_change=_relevant,
        first_failure=first_failure(c, outcomes=outcomes),
        last_failure=last_failure(c, outcomes=outcomes),
        gaps=gaps,
    )
