"""Configuration error: a handler, runtime, environment or setting with which the function cannot work."""

from __future__ import annotations

import re

from supervisor.diagnosis.rules import missing_grant
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import Failure, failures, first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Remedy, Verdict
from supervisor.diagnosis.rules.trigger_remedy import DEPLOY_OPERATIONS
from supervisor.diagnosis.rules.triggers import change_events, previous_setting

_CONFIG = "get_lambda_config"
HANDLER_ERRORS = frozenset(
    {"Runtime.HandlerNotFound", "Runtime.MalformedHandlerName", "Runtime.ImportModuleError"}
)
_MISSING_VARIABLE = re.compile(r"^\[ERROR\] KeyError: '([A-Z_][A-Z0-9_]*)'")
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
        first_failure=first_failure(c),
        last_failure=last_failure(c),
    )


def check(c: Conversation) -> Verdict:
    config = c.config
    if not config or not c.metrics.get("errors"):
        return None
    denied = missing_grant.finding(c)
    if denied is not None:
        return denied
    name, handler = c.name, config.get("Handler")
    for failure in failures(c):
        if failure.error_type in HANDLER_ERRORS and (
            failure.error_type != "Runtime.ImportModuleError" or _handler_changed(c, failure)
        ):
            remedy, restore_pointers = _handler_remedy(c, str(handler))
            loaded = failure.headline.removeprefix("[ERROR] ")
            return _finding(
                c,
                failure,
                f"The handler of {name} ({handler}) cannot be loaded: {loaded}.",
                [
                    Pointer(_CONFIG, "Handler", handler, "The handler Lambda runs", "configuration_error"),
                    *restore_pointers,
                ],
                remedy,
            )
        missing = _MISSING_VARIABLE.match(failure.message)
        variables = config.get("EnvironmentVariableNames") or []
        if missing and missing[1] not in variables:
            return _finding(
                c,
                failure,
                f"{name} reads the environment variable {missing[1]}, which its configuration does not set.",
                [
                    Pointer(
                        _CONFIG,
                        "EnvironmentVariableNames",
                        variables,
                        f"The variables set: {missing[1]} is not among them",
                        "configuration_error",
                    )
                ],
                Remedy(
                    f"Set {missing[1]} on {name} again",
                    f"Add {missing[1]} to the function's environment with the value the code expects (keep "
                    "the other variables: update-function-configuration replaces the whole environment).",
                ),
            )
    return None
