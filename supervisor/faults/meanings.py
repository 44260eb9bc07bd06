"""What a cited value must say to support a fault: the predicates the fault classes' sources name.

A pointer that cites a corroborating field supports a fault only when its value means that fault: errors
above zero, a throttle counted, a duration at the timeout, a policy that refuses a call the function makes,
a change of the kind that can start the fault. Each predicate reads the value, the answer it is in and,
where the meaning depends on another tool's answer (the calls a role must allow, the concurrency a limit
was reached at), the run's other answers. It returns an empty string when the value means the fault, else
why not, worded for the model's refinement turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from supervisor.diagnosis.paths import resolve

# A duration or memory use this close to its configured limit is at it: Lambda reports a timed-out run's
# Duration at its timeout and a run killed for memory at its size (Max Memory Used).
AT_LIMIT: Final = 0.98


@dataclass(frozen=True)
class Reading:
    """What a predicate reads: the pointer's path, the value there, the answer it is in, and every valid
    answer of the run by tool."""

    field: str
    value: Any
    answer: Mapping[str, Any]
    run: Mapping[str, Sequence[Any]]

    @property
    def segments(self) -> list[str]:
        return self.field.split(".")

    def near(self, depth: int) -> Any:
        """The value ``depth`` segments up the path (the minute, the verdict, the event it is part of)."""
        try:
            return resolve(self.answer, ".".join(self.segments[:depth]))
        except LookupError:
            return None

    def answers(self, tool: str) -> Iterator[Mapping[str, Any]]:
        yield from (a for a in self.run.get(tool, []) if isinstance(a, Mapping))


Meaning = Callable[[Reading], str]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def above_zero(reading: Reading) -> str:
    """A count: above zero; a 'first ... minute': a minute, not null."""
    if reading.segments[-1].startswith("first_"):
        return "" if reading.value else f"{reading.field} is null: nothing began"
    number = _number(reading.value)
    return (
        "" if number is not None and number > 0 else f"{reading.field} is {reading.value!r}: it counts none"
    )


def succeeded_beside(reading: Reading) -> str:
    """A minute's invocations above that minute's errors: some succeeded beside the failures."""
    minute = reading.near(2)
    invocations, errors = _number(reading.value), _number((minute or {}).get("errors", 0))
    if invocations is not None and errors is not None and invocations > errors:
        return ""
    return f"{reading.field} is {reading.value!r} with {errors!r} errors: none succeeded beside the failures"


def limit_reached(reading: Reading) -> str:
    """Reserved concurrency 0; a reservation some minute's concurrency reached; or none at all (null: the
    function draws on the account's pool) while the run's metrics count throttles, which that pool
    refused."""
    limit = _number(reading.value)
    metrics = list(reading.answers("get_function_metrics"))
    if limit == 0:
        return ""
    if limit is None:
        throttled = any((_number(m.get("throttles")) or 0) > 0 for m in metrics)
        return (
            ""
            if throttled
            else f"{reading.field} is null and nothing was throttled: no limit refused anything"
        )
    peaks = [
        peak
        for answer in metrics
        for minute in answer.get("minutes") or []
        if (peak := _number(minute.get("concurrent_executions_max"))) is not None
    ]
    if any(peak >= limit for peak in peaks):
        return ""
    return f"{reading.field} is {limit:g}, and no minute's concurrent_executions_max reached it"


def throttled_minute(reading: Reading) -> str:
    """A minute's peak concurrency, in a minute with throttles."""
    minute = reading.near(2)
    peak, throttles = _number(reading.value), _number((minute or {}).get("throttles"))
    if peak and throttles:
        return ""
    return (
        f"{reading.field} is {reading.value!r} in a minute with {throttles!r} throttles: nothing was refused"
    )


def _ratio_at_limit(reading: Reading, limit: float | None, what: str) -> str:
    number = _number(reading.value)
    if number is not None and limit and number >= AT_LIMIT * limit:
        return ""
    return f"{reading.field} is {reading.value!r}, below the configured {what} ({limit!r})"


def at_timeout(reading: Reading) -> str:
    """A duration at the configured timeout (``duration_to_timeout`` at 1, a longest duration at it)."""
    if reading.field == "duration_to_timeout":
        return _ratio_at_limit(reading, 1.0, "timeout")
    timeout = _number(reading.answer.get("timeout_seconds"))
    return _ratio_at_limit(reading, timeout * 1000 if timeout else None, "timeout in ms")


def at_memory_size(reading: Reading) -> str:
    """Memory used at the configured size."""
    if reading.field == "memory_to_size":
        return _ratio_at_limit(reading, 1.0, "memory size")
    return _ratio_at_limit(reading, _number(reading.answer.get("memory_size_mb")), "memory size in MB")


def _blocked(verdict: Any) -> bool:
    return isinstance(verdict, Mapping) and verdict.get("allowed") is False


def blocked(reading: Reading) -> str:
    """A verdict that egress is not allowed (or one of its reasons); any other part of the path only
    beside such a verdict of the same answer."""
    head = reading.segments[0]
    if head == "https_egress_allowed":
        return (
            "" if reading.value is False else f"https_egress_allowed is {reading.value!r}: egress is allowed"
        )
    if head == "egress" and len(reading.segments) > 1:
        verdict = reading.near(2)
        return (
            "" if _blocked(verdict) else f"egress.{reading.segments[1]} is a destination reached, not blocked"
        )
    verdicts = reading.answer.get("egress") or []
    if any(_blocked(v) for v in verdicts) or reading.answer.get("https_egress_allowed") is False:
        return ""
    return f"{reading.field} is part of a path that blocks nothing: every egress verdict is allowed"


_FAILED_STATES: Final = {"State": ("Active",), "LastUpdateStatus": ("Successful", "InProgress")}
_SETTING_NAMES: Final = {"environmentvariablenames": "environment", "ephemeralstoragemb": "ephemeralstorage"}


def _configuration_changes(reading: Reading) -> Iterator[Mapping[str, Any]]:
    for _, event in _successful_changes(reading, "UpdateFunctionConfiguration", "CreateFunction"):
        yield event


_ASKED_FOR: Final = re.compile(
    r"'([A-Z][A-Z0-9_]{2,})'|\b([A-Z][A-Z0-9_]{2,}) is (?:not set|not defined|undefined)"
)


def _terminal_errors(reading: Reading) -> Iterator[str]:
    """What the terminal errors of failed invocations say (their error detail's message, else the line)."""
    for answer in reading.answers("get_recent_logs"):
        for event in answer.get("events") or []:
            if isinstance(event, Mapping) and event.get("kind") in ("error_record", "init_error"):
                error = event.get("error")
                said = error.get("message") if isinstance(error, Mapping) else None
                yield str(said or event.get("message"))


def _variables_asked_for(reading: Reading) -> set[str]:
    """The environment variables the terminal errors of failed invocations say the code looked up and did
    not find (a KeyError's ``'NAME'``, ``NAME is not set``)."""
    return {quoted or bare for text in _terminal_errors(reading) for quoted, bare in _ASKED_FOR.findall(text)}


# A write to a full file system: Python's OSError (errno 28), Node.js's ENOSPC error.
NO_SPACE: Final = re.compile(r"\[Errno 28\] No space left on device|\bENOSPC: no space left on device")


def storage_full(reading: Reading) -> str:
    """The function's ephemeral storage size, when a failed invocation's terminal error says a write found
    the device full."""
    if any(NO_SPACE.search(text) for text in _terminal_errors(reading)):
        return ""
    return (
        f"{reading.field} is the size of /tmp, but no failed invocation's error says a write found no space "
        "left on the device"
    )


def setting_broken(reading: Reading) -> str:
    """A state that is not working (``State`` not Active, a failed update, a state reason); the variables
    set, lacking one a failed invocation looked up; or a setting the change history shows a configuration
    change set (or the function was created with)."""
    key = reading.segments[0]
    if key in _FAILED_STATES:
        working = reading.value in _FAILED_STATES[key]
        return f"{key} is {reading.value!r}: the function works in it" if working else ""
    if key in ("StateReason", "StateReasonCode"):
        return "" if reading.value else f"{key} is empty: nothing is wrong with the state"
    listed = reading.value if reading.field == "EnvironmentVariableNames" else None
    if isinstance(listed, list) and _variables_asked_for(reading) - set(map(str, listed)):
        return ""
    name = _SETTING_NAMES.get(key.lower(), key.lower())
    for event in _configuration_changes(reading):
        changed = {str(f).lower() for f in (event.get("summary") or {}).get("changed_fields") or []}
        if name in changed or operation(str(event.get("event_name"))) == "CreateFunction":
            return ""
    return (
        f"{key} is what the function runs with, but no configuration change in the change history set it: "
        "cite the change, or a state that shows the failure"
    )


_LOSSES: Final = frozenset({"AsyncEventsDropped", "DeadLetterErrors", "DestinationDeliveryFailures"})


def _losses(answer: Mapping[str, Any]) -> bool:
    metrics = (answer.get("async_config") or {}).get("metrics") or {}
    return any((_number(metrics.get(name)) or 0) > 0 for name in _LOSSES)


def async_setting_at_fault(reading: Reading) -> str:
    """An asynchronous-invocation setting while events are lost; a mapping whose queue's visibility timeout
    is below the function's timeout; a queue without redrive while messages wait."""
    parts = reading.segments
    if parts[0] == "async_config":
        lost_none = f"{reading.field}: no asynchronous event was lost, so the setting lost nothing"
        return "" if _losses(reading.answer) else lost_none
    mappings = reading.answer.get("mappings") or []
    if parts[0] == "timeout_seconds":
        shorter = any(
            isinstance(m, Mapping) and m.get("visibility_timeout_below_function_timeout") for m in mappings
        )
        return "" if shorter else "timeout_seconds: no mapping's queue has a visibility timeout below it"
    mapping = reading.near(2) or {}
    if parts[-1] == "visibility_timeout_below_function_timeout":
        return "" if reading.value is True else f"{reading.field} is {reading.value!r}"
    if parts[-1] == "VisibilityTimeout":
        timeout = _number(reading.answer.get("timeout_seconds"))
        number = _number(reading.value)
        below = number is not None and timeout is not None and number < timeout
        return "" if below else f"{reading.field} is {reading.value!r}, not below the timeout ({timeout!r} s)"
    waiting = _number(
        ((mapping.get("queue") or {}) if isinstance(mapping, Mapping) else {}).get(
            "ApproximateNumberOfMessages"
        )
    )
    if reading.value is None and waiting:
        return ""
    return f"{reading.field} is {reading.value!r}: a redrive policy that loses nothing"


def lost(reading: Reading) -> str:
    """Events lost or set aside: a loss metric, or messages in a dead-letter queue or failure destination,
    above zero."""
    parts = reading.segments
    if parts[0] == "async_config" and parts[1] == "metrics" and parts[-1] not in _LOSSES:
        return f"{parts[-1]} counts events received or their age, not events lost"
    if (
        parts[-1]
        not in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "messages_sent")
        and parts[0] != "async_config"
    ):
        return f"{reading.field} does not count messages set aside"
    return above_zero(reading)


def backlog(reading: Reading) -> str:
    """Work waiting or refused: messages waiting, an oldest message's age, a queue's traffic, failed
    notifications — above zero."""
    return above_zero(reading)


def waited_behind(reading: Reading) -> str:
    """A stream's records sent older than the function's timeout: they waited behind another batch."""
    value, timeout = _number(reading.value), _number(reading.answer.get("timeout_seconds"))
    if value is not None and timeout is not None and value > timeout * 1000:
        return ""
    return f"{reading.field} is {reading.value}: not above the function's timeout of {timeout} s"


# API Gateway's execution log when it cannot use what the function answered
# (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-troubleshooting-lambda.html).
MALFORMED_PROXY_RESPONSE: Final = (
    "Execution failed due to configuration error: Malformed Lambda proxy response"
)
INTEGRATION_TIMEOUT: Final = "Execution failed due to a timeout error"
# An HTTP API's integration that stopped waiting shows only as its access line's status: 503 as callers
# report it, 504 as https://repost.aws/knowledge-center/api-gateway-504-errors names HTTP APIs too. No text
# says why: it means a timeout only beside a route that waits less than the function's longest run.
STOPPED_WAITING: Final = frozenset({503, 504})


def answer_unusable(reading: Reading) -> str:
    """An API Gateway execution log line saying the function's answer could not be used: a malformed Lambda
    proxy response, or the integration timed out first; an HTTP API's access line whose status says its
    integration stopped waiting (:func:`stopped_waiting`)."""
    value = reading.value
    if reading.segments[-1] == "status":
        return stopped_waiting(reading)
    if isinstance(value, str) and (MALFORMED_PROXY_RESPONSE in value or INTEGRATION_TIMEOUT in value):
        return ""
    return f"{reading.field} is {str(value)[:120]!r}: not API Gateway unable to use the function's answer"


def stopped_waiting(reading: Reading) -> str:
    """A 503 or 504 on an HTTP API stage with a route whose integration timeout is below the longest
    duration ``get_function_metrics`` read of the function: the API stopped waiting before it answered."""
    value, stage = reading.value, reading.near(2)
    if _number(value) not in STOPPED_WAITING:
        return f"{reading.field} is {value!r}: not the 503 or 504 of an integration that stopped waiting"
    if not isinstance(stage, Mapping) or stage.get("protocol") != "HTTP":
        return f"{reading.field} is not on an HTTP API stage"
    longest = max(
        (d for a in reading.answers("get_function_metrics") if (d := _number(a.get("max_duration_ms")))),
        default=None,
    )
    if longest is None:
        return f"{reading.field} is {value!r}, but no get_function_metrics answer shows how long it ran"
    waits = [_number(r.get("timeout_ms")) for r in stage.get("routes") or [] if isinstance(r, Mapping)]
    if any(w is not None and w < longest for w in waits):
        return ""
    return f"{reading.field} is {value!r}, but no route waits less than the longest run ({longest:g} ms)"


def _successful_changes(reading: Reading, *names: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The run's changes that went through, of the operations ``names``: (operation, event)."""
    for answer in reading.answers("get_recent_changes"):
        for event in answer.get("events") or []:
            name = operation(str(event.get("event_name", ""))) if isinstance(event, Mapping) else ""
            if name in names and not event.get("error_code"):
                yield name, event


def _ungranted_url_callers(reading: Reading) -> set[str]:
    """The principals an AddPermission in the change history let call the function through an AWS_IAM URL
    whose statement a later RemovePermission took out."""
    added, removed = [], []
    for name, event in _successful_changes(reading, "AddPermission", "RemovePermission"):
        summary = event.get("summary") or {}
        if name == "RemovePermission":
            removed.append((str(event.get("time")), summary.get("statementId")))
        elif summary.get("functionUrlAuthType") == "AWS_IAM" or summary.get("invokedViaFunctionUrl") is True:
            added.append((str(event.get("time")), summary.get("statementId"), str(summary.get("principal"))))
    return {who for at, sid, who in added if any(s == sid and later > at for later, s in removed)}


def path_refused(reading: Reading) -> str:
    """An event path refused for lack of permission: a mapping's last result naming permissions; a
    subscription, public function URL or API route the function's resource policy no longer lets invoke;
    or an AWS_IAM URL's callers without one the change history shows granted, then removed."""
    if reading.segments[-1] == "granted_callers":
        missing = _ungranted_url_callers(reading) - set(reading.value or [])
        return (
            ""
            if missing
            else f"{reading.field} lacks no caller the change history shows granted and then removed"
        )
    if reading.segments[-1] == "invoke_allowed":
        return (
            "" if reading.value is False else f"{reading.field} is {reading.value!r}: the caller may invoke"
        )
    if reading.segments[-1] == "LastProcessingResult":
        return (
            ""
            if "permission" in str(reading.value).lower()
            else f"{reading.field} names no permission problem"
        )
    return f"{reading.field} does not show a refused path: cite LastProcessingResult or invoke_allowed"


def path_stopped(reading: Reading) -> str:
    """An event path that stopped delivering: a mapping disabled (or being), no mapping or no
    subscription left."""
    if reading.segments[-1] == "State":
        stopped = reading.value in ("Disabled", "Disabling")
        return "" if stopped else f"{reading.field} is {reading.value!r}: the mapping delivers"
    if reading.field in ("mappings", "subscriptions"):
        return "" if reading.value == [] else f"{reading.field} still holds a path that delivers"
    return f"{reading.field} does not show a stopped path: cite a mapping's State, or an empty mappings list"


def key_refuses(reading: Reading) -> str:
    """The environment variables' key: a state other than Enabled, or grantees that leave out the role."""
    field, value = reading.segments[-1], reading.value
    if field == "KeyState":
        return "" if isinstance(value, str) and value != "Enabled" else f"{reading.field} is {value!r}"
    role = reading.answer.get("Role")
    if isinstance(value, list) and role not in value:
        return ""
    return f"{reading.field} is {value!r}: it lets the role {role} decrypt, or was not read"


# The StateReasonCode values with which Lambda says it cannot connect a function to its VPC
# (API_FunctionConfiguration: StateReasonCode; functions-states.html).
UNCONNECTED_CODES: Final = frozenset(
    {"SubnetOutOfIPAddresses", "EniLimitExceeded", "InvalidSubnet", "InvalidSecurityGroup"}
)


def state_refuses(reading: Reading) -> str:
    """The function's state: one Lambda does not invoke in (anything but Active), or a reason code saying
    Lambda cannot connect it to its VPC."""
    field, value = reading.segments[-1], reading.value
    if field == "State":
        refusing = isinstance(value, str) and value in ("Pending", "Inactive", "Failed")
        return "" if refusing else f"{reading.field} is {value!r}: Lambda invokes the function in it"
    if value in UNCONNECTED_CODES:
        return ""
    return f"{reading.field} is {value!r}: not a reason Lambda cannot connect the function to its VPC"


_VERSIONED: Final = re.compile(r"^([A-Za-z]+?)(\d{8}\w*)?$")


def operation(event_name: str) -> str:
    """CloudTrail's Lambda event names carry an API version ('UpdateFunctionConfiguration20150331v2')."""
    match = _VERSIONED.match(event_name)
    return match[1] if match else event_name


def change_of(*operations: str) -> Meaning:
    """A change event (the pointer's ``events.<n>``) that succeeded and is one of ``operations``."""

    def means(reading: Reading) -> str:
        event = reading.near(2)
        if not isinstance(event, Mapping):
            return f"{reading.field} is not an event"
        name = operation(str(event.get("event_name", "")))
        if event.get("error_code"):
            return f"{reading.field} is a {name} that failed ({event['error_code']}): it changed nothing"
        if name not in operations:
            return f"{reading.field} is a {name}, which cannot start this fault ({', '.join(operations)} can)"
        return ""

    means.__doc__ = f"A change that succeeded: {', '.join(operations)}."
    return means
