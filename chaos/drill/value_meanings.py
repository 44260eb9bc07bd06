"""What a cited value must say for the drill's judge to count it as support of a fault: its own table,
written from the fault classes, apart from the supervisor's predicates (nothing is imported from them).

A named fault (not ``unknown``) is grounded only when a re-found pointer with ``supports`` equal
to it satisfies a *decisive* entry of ``MEANINGS[fault]``: an entry is a (tool, field pattern) and a
predicate on the value found (and the answer it is in, and the other answers sent). A pointer whose (tool,
field) is in no entry of its fault does not count (log lines and context never suffice alone); one that is
in an entry but whose value does not satisfy it makes the diagnosis ungrounded. *Detail* entries (the
change history, access-denied log errors) must hold too, but never ground a fault alone; the one exception,
kept lenient because the product checks it strictly, is a Lambda configuration change for
``configuration_error``.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from chaos.drill.sent_answers import (
    CHANGES,
    CONFIG,
    IAM,
    LOGS,
    METRICS,
    NETWORK,
    SOURCES,
    KeyPath,
    SentAnswer,
    value_at,
)

# A run this close to its timeout or memory size hit it: Lambda reports a timed-out run's Duration at the
# timeout and Max Memory Used at the size for a run it killed for memory (rounding aside).
AT_LIMIT: Final = 0.98


@dataclass(frozen=True)
class Spot:
    """A value a pointer reached: where (its tool, answer and concrete path), and every answer sent."""

    tool: str
    answer: dict[str, Any]
    path: KeyPath
    value: Any
    answers: Sequence[SentAnswer]

    def up(self, depth: int) -> Any:
        """The value at the first ``depth`` steps of the path (``up(2)`` of ``minutes.3.errors`` is the
        minute)."""
        return value_at(self.answer, self.path[:depth])


@dataclass(frozen=True)
class Meaning:
    """One entry of a fault's table: a pointer at ``field`` of ``tool``'s answer shows the fault when
    ``holds`` says so. ``field`` is dotted segments: ``N`` is a list index, ``*`` any one segment, ``**``
    any number of them."""

    tool: str
    field: str
    means: str  # what the value must show, as the reason a pointer does not
    holds: Callable[[Spot], bool]
    detail: bool = False  # must hold, but grounds the fault by itself only where ``alone`` says so
    alone: Callable[[Spot], bool] | None = None

    def grounds(self, spot: Spot) -> bool:
        """Whether a value that holds grounds the fault by itself."""
        return not self.detail or (self.alone is not None and self.alone(spot))

    def covers(self, tool: str, path: KeyPath) -> bool:
        return tool == self.tool and _matches(tuple(self.field.split(".")), path)


def _matches(pattern: tuple[str, ...], path: KeyPath) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(rest, path[start:]) for start in range(len(path) + 1))
    if not path:
        return False
    step = path[0]
    fits = isinstance(step, int) if head == "N" else head in ("*", step)
    return fits and _matches(rest, path[1:])


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def _above(value: Any, floor: float) -> bool:
    number = _number(value)
    return number is not None and number > floor


def _at_least(value: Any, floor: float | None) -> bool:
    number = _number(value)
    return number is not None and floor is not None and number >= floor


def _positive(spot: Spot) -> bool:
    return _above(spot.value, 0)


def _not_null(spot: Spot) -> bool:
    return spot.value is not None


def _is_false(spot: Spot) -> bool:
    return spot.value is False


def _share_of(key: str, scale: float = 1.0) -> Callable[[Spot], bool]:
    """At least 99% of the answer's ``key`` times ``scale`` (a timeout in seconds against milliseconds)."""

    def holds(spot: Spot) -> bool:
        limit = _number(spot.answer.get(key))
        return _at_least(spot.value, None if limit is None else AT_LIMIT * scale * limit)

    return holds


def _above_timeout(spot: Spot) -> bool:
    """Milliseconds past the answer's timeout (seconds): longer than one invocation may run."""
    timeout = _number(spot.answer.get("timeout_seconds"))
    return timeout is not None and _above(spot.value, timeout * 1000)


def _reservation_throttles(spot: Spot) -> bool:
    """Zero; a positive reservation that some minute's concurrency reached; or none (null: the account's
    shared pool is the limit) where a metrics answer sent counts throttles."""
    metrics = [sent.answer for sent in spot.answers if sent.tool == METRICS]
    if spot.value is None:
        return any(_above(answer.get("throttles"), 0) for answer in metrics)
    reserved = _number(spot.value)
    if reserved is None or reserved < 0:
        return False
    if reserved == 0:
        return True
    peaks = [
        _number(minute.get("concurrent_executions_max"))
        for answer in metrics
        for minute in answer.get("minutes") or []
        if isinstance(minute, dict)
    ]
    return any(peak is not None and peak >= reserved for peak in peaks)


def _peak_of_a_throttled_minute(spot: Spot) -> bool:
    minute = spot.up(2)
    return _positive(spot) and isinstance(minute, dict) and _above(minute.get("throttles"), 0)


def _successes_beside_failures(spot: Spot) -> bool:
    minute = spot.up(2)
    if not isinstance(minute, dict):
        return False
    errors = _number(minute.get("errors"))
    return errors is not None and errors > 0 and _above(spot.value, errors)


def _blocked_verdict(spot: Spot) -> bool:
    verdict = spot.up(2)
    return isinstance(verdict, dict) and verdict.get("allowed") is False


def _some_egress_blocked(spot: Spot) -> bool:
    verdicts = spot.answer.get("egress") or []
    return any(isinstance(v, dict) and v.get("allowed") is False for v in verdicts)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements(node: Any) -> Iterator[dict[str, Any]]:
    """Every policy statement (a dict with an ``Effect``) held anywhere in ``node``."""
    if isinstance(node, dict):
        if "Effect" in node:
            yield node
        for value in node.values():
            yield from _statements(value)
    elif isinstance(node, list):
        for value in node:
            yield from _statements(value)


def _grants_wholesale(statement: dict[str, Any]) -> bool:
    """An Allow of every action, or of every action of a service on every resource."""
    if statement.get("Effect") != "Allow":
        return False
    actions = [str(action) for action in _listed(statement.get("Action"))]
    everywhere = "*" in _listed(statement.get("Resource"))
    return "*" in actions or (everywhere and any(action.endswith(":*") for action in actions))


def _statement_denies(spot: Spot) -> bool:
    """Inside a statement: a Deny; or, where the answer holds no Deny, an Allow scoped away from ``*`` of an
    operation an access-denied error in the logs sent shows refused (a grant narrowed to another
    resource)."""
    index = next(
        n
        for n, step in enumerate(spot.path[:-1])
        if step == "Statement" and isinstance(spot.path[n + 1], int)
    )
    statement = spot.up(index + 2)
    if not isinstance(statement, dict):
        return False
    if statement.get("Effect") == "Deny":
        return True
    if statement.get("Effect") != "Allow" or "*" in _listed(statement.get("Resource")):
        return False
    if any(other.get("Effect") == "Deny" for other in _statements(spot.answer)):
        return False  # a Deny is there to cite: an Allow beside it refuses nothing
    denied = _denied_operations(spot.answers)
    actions = [str(action).rpartition(":")[2].lower() for action in _listed(statement.get("Action"))]
    return any(fnmatch.fnmatchcase(operation, action) for operation in denied for action in actions)


_DENIED_OPERATION: Final = re.compile(
    r"\((?:AccessDenied\w*)\) when calling the (\w+) operation|not authorized to perform: [\w-]+:(\w+)"
)


def _denied_operations(answers: Sequence[SentAnswer]) -> set[str]:
    """The operations (lower-cased) an access-denied error in the logs answers sent shows refused."""
    found = set()
    for sent in answers:
        if sent.tool != LOGS:
            continue
        for event in sent.answer.get("events") or []:
            text = json.dumps(event) if isinstance(event, dict) else str(event)
            found |= {(a or b).lower() for a, b in _DENIED_OPERATION.findall(text)}
    return found


def _grants_nothing_wholesale(spot: Spot) -> bool:
    return not any(_grants_wholesale(statement) for statement in _statements(spot.value))


def _boundary_limits(spot: Spot) -> bool:
    """A permissions boundary exists and grants nothing wholesale (no boundary limits nothing)."""
    boundary = spot.answer.get("permissions_boundary")
    return isinstance(boundary, dict) and not any(_grants_wholesale(s) for s in _statements(boundary))


_ACCESS_DENIED: Final = re.compile(r"AccessDenied|is not authorized to perform")


def _access_denied_error(spot: Spot) -> bool:
    event = spot.up(2)
    if not isinstance(event, dict):
        return False
    error = event.get("error")
    texts = [event.get("message")]
    if isinstance(error, dict):
        texts += [error.get("code"), error.get("type"), error.get("message")]
    return any(isinstance(text, str) and _ACCESS_DENIED.search(text) for text in texts)


# errno 28 as Python's OSError prints it, and Node.js's ENOSPC error.
_DISK_FULL: Final = re.compile(r"No space left on device|\bENOSPC\b", re.IGNORECASE)


def _says_disk_full(event: Any) -> bool:
    """A failed invocation's record (its runtime error record or init error) saying the disk is full."""
    if not isinstance(event, dict) or event.get("kind") not in ("error_record", "init_error"):
        return False
    return bool(_DISK_FULL.search(json.dumps(event)))


def _disk_full_error(spot: Spot) -> bool:
    return _says_disk_full(spot.up(2))


def _storage_of_a_full_disk(spot: Spot) -> bool:
    """A /tmp size, cited while some logs answer sent shows a failed write to a full disk."""
    return isinstance(spot.value, int) and any(
        _says_disk_full(event)
        for sent in spot.answers
        if sent.tool == LOGS
        for event in sent.answer.get("events") or []
    )


def _mentions_permission(spot: Spot) -> bool:
    return isinstance(spot.value, str) and "permission" in spot.value.lower()


def _change_succeeded(spot: Spot) -> bool:
    event = spot.up(2)
    return isinstance(event, dict) and event.get("error_code") is None


def _api_name(operation: str) -> re.Pattern[str]:
    """CloudTrail's name for a Lambda operation: the operation, perhaps with the API version appended."""
    return re.compile(rf"{operation}(\d{{8}}(v\d+)?)?")


_CONFIGURING: Final = tuple(
    _api_name(operation)
    for operation in (
        "CreateFunction",
        "UpdateFunctionConfiguration",
        "PutFunctionEventInvokeConfig",
        "UpdateFunctionEventInvokeConfig",
        "DeleteFunctionEventInvokeConfig",
        "CreateEventSourceMapping",
        "UpdateEventSourceMapping",
    )
)


def _configures(event: Any) -> bool:
    """A Lambda configuration change that succeeded."""
    return (
        isinstance(event, dict)
        and event.get("error_code") is None
        and any(name.fullmatch(str(event.get("event_name"))) for name in _CONFIGURING)
    )


def _configuring_event(spot: Spot) -> bool:
    return _configures(spot.up(2))


def _configuration_changed(spot: Spot) -> bool:
    """Some change history the server sent holds a Lambda configuration change that succeeded."""
    return any(
        _configures(event)
        for sent in spot.answers
        if sent.tool == CHANGES
        for event in sent.answer.get("events") or []
    )


_ADD_PERMISSION: Final = _api_name("AddPermission")
_REMOVE_PERMISSION: Final = _api_name("RemovePermission")


def _url_callers_taken_out(answers: Sequence[SentAnswer]) -> set[str]:
    """Replaying each change history the server sent, oldest first: the principals a statement for a URL's
    callers named when a RemovePermission took it out, and no AddPermission wrote it again since."""
    out: set[str] = set()
    for sent in answers:
        if sent.tool != CHANGES:
            continue
        present: dict[Any, str] = {}
        for event in reversed(sent.answer.get("events") or []):
            if not isinstance(event, dict) or event.get("error_code") is not None:
                continue
            request, name = event.get("summary") or {}, str(event.get("event_name"))
            sid = request.get("statementId")
            for_url = "functionUrlAuthType" in request or request.get("invokedViaFunctionUrl") is True
            if _ADD_PERMISSION.fullmatch(name) and for_url:
                present[sid] = str(request.get("principal"))
                out.discard(present[sid])
            elif _REMOVE_PERMISSION.fullmatch(name) and sid in present:
                out.add(present.pop(sid))
    return out


def _lacks_a_caller_taken_out(spot: Spot) -> bool:
    return isinstance(spot.value, list) and bool(_url_callers_taken_out(spot.answers) - set(spot.value))


def _is_true_after_a_change(spot: Spot) -> bool:
    return spot.value is True and _configuration_changed(spot)


def _not_active(spot: Spot) -> bool:
    return isinstance(spot.value, str) and spot.value != "Active"


def _update_failed(spot: Spot) -> bool:
    return bool(spot.value == "Failed")


def _stopped_state(spot: Spot) -> bool:
    return spot.value in ("Disabled", "Disabling")


def _key_unusable(spot: Spot) -> bool:
    return isinstance(spot.value, str) and spot.value != "Enabled"


def _answer_refused_by_the_api(spot: Spot) -> bool:
    """API Gateway's own words for an answer it could not use (the sandbox's api_gateway.py writes them as
    AWS documents them in api-gateway-troubleshooting-lambda.html)."""
    return isinstance(spot.value, str) and (
        "Malformed Lambda proxy response" in spot.value
        or "Execution failed due to a timeout error" in spot.value
    )


def _http_api_stopped_waiting(spot: Spot) -> bool:
    """A 503 or 504 an HTTP API stage answered (its access line's status: it writes no execution log) with a
    route whose integration timeout is below the longest run any minute of a metrics answer sent shows:
    API Gateway stopped waiting before the function answered."""
    stage = spot.up(2)
    if (
        _number(spot.value) not in (503.0, 504.0)
        or not isinstance(stage, dict)
        or stage.get("protocol") != "HTTP"
    ):
        return False
    runs = [
        run
        for sent in spot.answers
        if sent.tool == METRICS
        for minute in sent.answer.get("minutes") or []
        if (run := _number(minute.get("duration_max_ms"))) is not None
    ]
    waits = [
        _number(route.get("timeout_ms")) for route in stage.get("routes") or [] if isinstance(route, dict)
    ]
    return bool(runs) and any(wait is not None and wait < max(runs) for wait in waits)


def _cannot_connect(spot: Spot) -> bool:
    """Lambda's reason codes for a function it cannot give network interfaces in its VPC
    (API_FunctionConfiguration, StateReasonCode)."""
    return spot.value in (
        "SubnetOutOfIPAddresses",
        "EniLimitExceeded",
        "InvalidSubnet",
        "InvalidSecurityGroup",
    )


def _role_not_granted(spot: Spot) -> bool:
    return isinstance(spot.value, list) and spot.answer.get("Role") not in spot.value


def _empty_list(spot: Spot) -> bool:
    return isinstance(spot.value, list) and not spot.value


_ABOVE_ZERO: Final = "counts only above zero"
_ERRORS: Final = (
    Meaning(METRICS, "errors", _ABOVE_ZERO, _positive),
    Meaning(METRICS, "error_rate", _ABOVE_ZERO, _positive),
    Meaning(METRICS, "minutes.N.errors", _ABOVE_ZERO, _positive),
    Meaning(METRICS, "first_error_minute", "counts only when not null", _not_null),
)
_CHANGE: Final = Meaning(
    CHANGES, "events.N.**", "a change counts only when it succeeded (no error_code)", _change_succeeded, True
)
_AFTER_A_CHANGE: Final = "counts only beside a Lambda configuration change in the change history"

MEANINGS: Final[dict[str, tuple[Meaning, ...]]] = {
    "throttling": (
        Meaning(METRICS, "throttles", _ABOVE_ZERO, _positive),
        Meaning(METRICS, "minutes.N.throttles", _ABOVE_ZERO, _positive),
        Meaning(METRICS, "first_throttle_minute", "counts only when not null", _not_null),
        Meaning(
            CONFIG,
            "ReservedConcurrentExecutions",
            "counts only as 0, a reservation some minute's concurrency reached, or none beside throttles",
            _reservation_throttles,
        ),
        Meaning(
            METRICS,
            "minutes.N.concurrent_executions_max",
            "counts only above zero in a minute with throttles",
            _peak_of_a_throttled_minute,
        ),
        _CHANGE,
    ),
    "code_error": (*_ERRORS, _CHANGE),
    "dependency_failure": (*_ERRORS, _CHANGE),
    "bad_input": (
        *_ERRORS,
        Meaning(
            METRICS,
            "minutes.N.invocations",
            "counts only above the errors of a minute with errors",
            _successes_beside_failures,
        ),
        Meaning(SOURCES, "mappings.N.dead_letter_queue.ApproximateNumberOfMessages", _ABOVE_ZERO, _positive),
        Meaning(SOURCES, "mappings.N.queue.messages_deleted", _ABOVE_ZERO, _positive),
        Meaning(
            SOURCES, "mappings.N.iterator_age_ms", "counts only above the function's timeout", _above_timeout
        ),
        Meaning(SOURCES, "async_config.metrics.*", _ABOVE_ZERO, _positive),
        Meaning(SOURCES, "subscriptions.N.notifications_failed", _ABOVE_ZERO, _positive),
        _CHANGE,
    ),
    "timeout": (
        Meaning(
            METRICS, "duration_to_timeout", "counts only at its limit", lambda s: _at_least(s.value, AT_LIMIT)
        ),
        Meaning(
            METRICS,
            "max_duration_ms",
            "counts only at 99% of the timeout",
            _share_of("timeout_seconds", 1000.0),
        ),
        Meaning(
            METRICS,
            "minutes.N.duration_max_ms",
            "counts only at 99% of the timeout",
            _share_of("timeout_seconds", 1000.0),
        ),
        _CHANGE,
    ),
    "out_of_memory": (
        Meaning(
            METRICS, "memory_to_size", "counts only at its limit", lambda s: _at_least(s.value, AT_LIMIT)
        ),
        Meaning(
            METRICS,
            "peak_memory_used_mb",
            "counts only at 99% of the memory size",
            _share_of("memory_size_mb"),
        ),
        _CHANGE,
    ),
    "resource_exhausted": (
        *_ERRORS,
        Meaning(
            CONFIG,
            "EphemeralStorageMb",
            "counts only while the logs show a write that found the disk full",
            _storage_of_a_full_disk,
        ),
        Meaning(LOGS, "events.N.**", "counts only in a disk-full error", _disk_full_error, True),
        _CHANGE,
    ),
    "network_block": (
        Meaning(NETWORK, "https_egress_allowed", "counts only when false", _is_false),
        Meaning(NETWORK, "egress.N.allowed", "counts only when false", _is_false),
        Meaning(
            NETWORK, "egress.N.reasons.N", "counts only as a reason of a blocked verdict", _blocked_verdict
        ),
        Meaning(NETWORK, "**", "counts only where some egress verdict is blocked", _some_egress_blocked),
        _CHANGE,
    ),
    "permission_loss": (
        Meaning(
            IAM,
            "**.Statement.N.**",
            "a statement counts only as a Deny, or (with none) an Allow of a denied call scoped elsewhere",
            _statement_denies,
        ),
        *(
            Meaning(IAM, pattern, "counts only when it grants nothing wholesale", _grants_nothing_wholesale)
            for pattern in (
                "inline_policies",
                "inline_policies.*",
                "inline_policies.*.Statement",
                "attached_policies",
                "attached_policies.N",
                "attached_policies.N.document",
                "attached_policies.N.document.Statement",
            )
        ),
        Meaning(
            IAM,
            "permissions_boundary.**",
            "counts only for a boundary that grants nothing wholesale",
            _boundary_limits,
        ),
        Meaning(
            SOURCES,
            "mappings.N.LastProcessingResult",
            "counts only when about permissions",
            _mentions_permission,
        ),
        Meaning(SOURCES, "subscriptions.N.invoke_allowed", "counts only when false", _is_false),
        Meaning(SOURCES, "function_url.invoke_allowed", "counts only when false", _is_false),
        Meaning(
            SOURCES,
            "function_url.granted_callers",
            "counts only without a caller whose URL statement the change history shows taken out",
            _lacks_a_caller_taken_out,
        ),
        Meaning(SOURCES, "apis.N.routes.N.invoke_allowed", "counts only when false", _is_false),
        Meaning(LOGS, "events.N.**", "counts only in an access-denied error", _access_denied_error, True),
        _CHANGE,
    ),
    "event_source_stopped": (
        Meaning(SOURCES, "mappings.N.State", "counts only as Disabled or Disabling", _stopped_state),
        Meaning(SOURCES, "mappings", "counts only when empty", _empty_list),
        Meaning(SOURCES, "mappings.N.queue.ApproximateNumberOfMessages", _ABOVE_ZERO, _positive),
        Meaning(SOURCES, "mappings.N.queue.oldest_message_age_seconds", _ABOVE_ZERO, _positive),
        _CHANGE,
    ),
    "platform_refused": (
        Meaning(CONFIG, "EnvironmentKey.KeyState", "counts only when not Enabled", _key_unusable),
        Meaning(
            CONFIG,
            "EnvironmentKey.DecryptGrantees",
            "counts only without the function's role",
            _role_not_granted,
        ),
        Meaning(CONFIG, "State", "counts only when not Active", _not_active),
        Meaning(
            CONFIG, "StateReasonCode", "counts only as a VPC connection Lambda cannot make", _cannot_connect
        ),
        _CHANGE,
    ),
    "invocation_contract": (
        Meaning(
            SOURCES,
            "apis.N.execution_errors.N.message",
            "counts only as API Gateway unable to use the answer",
            _answer_refused_by_the_api,
        ),
        Meaning(
            SOURCES,
            "apis.N.execution_errors.N.status",
            "counts only as an HTTP API's 503 or 504 beside a route that waits less than the function ran",
            _http_api_stopped_waiting,
        ),
        _CHANGE,
    ),
    "configuration_error": (
        Meaning(CONFIG, "State", "counts only when not Active", _not_active),
        Meaning(CONFIG, "LastUpdateStatus", "counts only as Failed", _update_failed),
        Meaning(CONFIG, "StateReasonCode", "counts only when not null", _not_null),
        Meaning(CONFIG, "**", _AFTER_A_CHANGE, _configuration_changed),
        Meaning(SOURCES, "async_config.**", _AFTER_A_CHANGE, _configuration_changed),
        Meaning(
            SOURCES,
            "mappings.N.visibility_timeout_below_function_timeout",
            "counts only as true, " + _AFTER_A_CHANGE,
            _is_true_after_a_change,
        ),
        Meaning(SOURCES, "mappings.N.queue.VisibilityTimeout", _AFTER_A_CHANGE, _configuration_changed),
        replace(_CHANGE, alone=_configuring_event),  # lenient: the product checks what the change set
    ),
}
