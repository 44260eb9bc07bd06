"""Configuration error: a handler, runtime, environment or setting with which the function cannot work.

Read from the runtime's own signs in the failed invocations' error records (``signs``), in any runtime and
log format, each tied to the function's configuration so that a bug of the code is not called one: a handler
that cannot be loaded after the handler (not the code) changed; a variable the code reads that the
configuration does not set; a value the code cannot use after the environment changed, with nothing deployed
and nothing succeeding since.
"""

from __future__ import annotations

from supervisor.diagnosis.causality import PROPAGATION
from supervisor.diagnosis.rules import async_faults, event_faults, missing_grant, signs, timeline
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation, instant
from supervisor.diagnosis.rules.failures import Failure, alike, failures, first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Remedy, Verdict
from supervisor.diagnosis.rules.trigger_remedy import DEPLOY_OPERATIONS, environment_undo
from supervisor.diagnosis.rules.triggers import change_events, previous_setting

_CONFIG = "get_lambda_config"
HANDLER_ERRORS = frozenset(
    {"Runtime.HandlerNotFound", "Runtime.MalformedHandlerName", "Runtime.ImportModuleError"}
)
_SETTINGS = frozenset({"handler", "runtime", "environment", "layers", "kmskeyarn", "architectures"})


def _relevant(event: ChangeEvent) -> bool:
    return event.operation == "UpdateFunctionConfiguration" and bool(event.changed_fields & _SETTINGS)


def _handler_changed(c: Conversation, failure: Failure) -> bool:
    """Whether the newest change to what the runtime imports, before the failure, was the handler's (a
    module that cannot be imported after new code was deployed is the code's error, not the setting's)."""
    changes = [
        e
        for e in change_events(c)
        if (failure.started is None or e.time <= failure.started)
        and (e.operation in DEPLOY_OPERATIONS or (_relevant(e) and "handler" in e.changed_fields))
    ]
    newest = max(changes, key=lambda e: e.time, default=None)
    return newest is not None and newest.operation == "UpdateFunctionConfiguration"


def _handler_remedy(c: Conversation, handler: str) -> tuple[Remedy, list[Pointer]]:
    """Put the handler back to what the change history shows it was, when it shows it."""
    name = c.name
    previous = previous_setting(c, "handler")
    if previous is None or previous[0] == handler:
        remedy = Remedy(
            f"Point the handler of {name} at a function its package defines",
            f"Set the handler to '<module>.<function>' of the deployed code; '{handler}' does not resolve, "
            "and the change history does not show the value it had before.",
        )
        return remedy, []
    value = str(previous[0])
    remedy = Remedy(
        f"Set the handler of {name} back to {value}",
        f"The change history shows the handler was '{value}' before it was changed to '{handler}'.",
        command(c, "lambda", "UpdateFunctionConfiguration", {"FunctionName": name, "Handler": value}),
        "low",
    )
    return remedy, [previous[1]]


def _finding(
    c: Conversation, failure: Failure, cause: str, pointers: list[Pointer], remedy: Remedy
) -> Finding:
    return Finding(
        "configuration_error",
        cause,
        "high",
        [failure.pointer("The runtime's error for a failed invocation", "configuration_error"), *pointers],
        remedy,
        relevant_change=_relevant,
        first_failure=first_failure(c, requests=alike(c, failure)),
        last_failure=last_failure(c, requests=alike(c, failure)),
    )


def check(c: Conversation) -> Verdict:
    return _failures(c) or event_faults.short_visibility(c) or async_faults.dead_letter_missing(c)


def _failures(c: Conversation) -> Verdict:
    config = c.config
    if not config or not c.metrics.get("errors"):
        return None
    denied = missing_grant.finding(c)
    if denied is not None:
        return denied
    for failure in failures(c):
        error = signs.runtime_error(failure)
        if error in HANDLER_ERRORS and (error != "Runtime.ImportModuleError" or _handler_changed(c, failure)):
            return _handler_finding(c, failure)
        sign = signs.read(failure)
        found = None
        if sign is not None and sign.variable is not None:
            found = _unset_variable(c, failure, sign.variable)
        elif sign is not None:
            found = _changed_environment(c, failure, sign)
        if found is not None:
            return found
    return None


def _handler_finding(c: Conversation, failure: Failure) -> Finding:
    handler = c.config.get("Handler")
    remedy, restore_pointers = _handler_remedy(c, str(handler))
    return _finding(
        c,
        failure,
        f"The handler of {c.name} ({handler}) cannot be loaded: {failure.summary}.",
        [
            Pointer(_CONFIG, "Handler", handler, "The handler Lambda runs", "configuration_error"),
            *restore_pointers,
        ],
        remedy,
    )


def _unset_variable(c: Conversation, failure: Failure, variable: str) -> Finding | None:
    """The code reads a variable the configuration does not set (none when it does: the bug is elsewhere)."""
    name, variables = c.name, c.config.get("EnvironmentVariableNames") or []
    if variable in variables:
        return None
    finding = _finding(
        c,
        failure,
        f"{name} reads the environment variable {variable}, which its configuration does not set.",
        [
            Pointer(
                _CONFIG,
                "EnvironmentVariableNames",
                variables,
                f"The variables set: {variable} is not among them",
                "configuration_error",
            )
        ],
        Remedy(
            f"Set {variable} on {name} again",
            f"Add {variable} to the function's environment with the value the code expects (keep the other "
            "variables: update-function-configuration replaces the whole environment).",
        ),
    )
    finding.gaps = (
        Gap(
            "remediation",
            f"the value {variable} had is not recorded (CloudTrail hides environment values): no command can "
            "set it back",
        ),
    )
    return finding


def _changed_environment(c: Conversation, failure: Failure, sign: signs.Sign) -> Finding | None:
    """A sign that names no variable is the configuration's only when the function's environment changed
    before the failure (after its last success), nothing was deployed after that change, and no invocation
    read has succeeded since: else the value the code could not use is the code's own bug."""
    change = _environment_change(c, failure)
    if change is None:
        return None
    variables = c.config.get("EnvironmentVariableNames") or []
    shown = ", ".join(variables) or "none"
    undo = environment_undo(c, change)
    finding = _finding(
        c,
        failure,
        f"{c.name} cannot work with its environment as it was changed at {change.event['time']}: "
        f"{sign.shows}: a value its code reads from the environment is missing or not valid "
        f"(variables set now: {shown}).",
        [
            Pointer(
                _CONFIG,
                "EnvironmentVariableNames",
                variables,
                "The variables set since the environment was changed",
                "configuration_error",
            )
        ],
        undo.remedy,
    )
    finding.gaps = (Gap("remediation", undo.gap),) if undo.gap else ()
    return finding


def _environment_change(c: Conversation, failure: Failure) -> ChangeEvent | None:
    """The environment change the failure followed: the newest change to the function's code or environment
    before it, within the failure's causal window, with no invocation read succeeding after it."""
    if failure.started is None:
        return None
    bounds = timeline.window_at(c, (failure.started, failure.pointer("", None)))
    changes = [
        e
        for e in change_events(c)
        if bounds.holds(e) and (e.operation in DEPLOY_OPERATIONS or _environment(e))
    ]
    newest = max(changes, key=lambda e: e.time, default=None)
    if newest is None or not _environment(newest):
        return None
    since = newest.time + PROPAGATION
    for invocation in c.logs.get("invocations", []):
        started = instant(invocation.get("started"))
        if invocation.get("outcome") == "no_error_seen" and started is not None and started > since:
            return None
    return newest


def _environment(event: ChangeEvent) -> bool:
    return event.operation == "UpdateFunctionConfiguration" and "environment" in event.changed_fields
