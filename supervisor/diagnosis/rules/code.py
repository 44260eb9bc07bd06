"""Code error: an exception or init failure in the function's own code, a bad deployment included."""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.iam_policy import parse_denial
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import Failure, failures, first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Remedy, Verdict
from supervisor.diagnosis.rules.trigger_remedy import DEPLOY_OPERATIONS, alias_pointer, alias_rollback
from supervisor.diagnosis.rules.triggers import change_events

_CONFIG = "get_lambda_config"
CODE_RUNTIME_ERRORS = frozenset(
    {"Runtime.UserCodeSyntaxError", "Runtime.MarshalError", "Runtime.ImportModuleError"}
)


def _relevant(event: ChangeEvent) -> bool:
    return event.operation in DEPLOY_OPERATIONS


def is_code_failure(failure: Failure) -> bool:
    """An exception of the code itself: a Python exception or a runtime error about the code. An AWS error
    (a ClientError with its code, a denial) is not one: it says what a call met, which the other checks
    judge."""
    if failure.kind != "error_record" or failure.error_type is None:
        return False
    if failure.error_type.startswith("Runtime."):
        return failure.error_type in CODE_RUNTIME_ERRORS
    return failure.error_code is None and parse_denial(failure.message) is None


def _latest_code_failure(c: Conversation) -> Failure | None:
    """The newest failure of the code itself since the newest deployment, if any."""
    deployed = max((e.time for e in change_events(c) if _relevant(e)), default=None)
    found = [
        f
        for f in failures(c)
        if is_code_failure(f) and (deployed is None or (f.started or deployed) >= deployed)
    ]  # an error from before the newest deployment is not an error of the code deployed now
    return found[-1] if found else None


def _alias_rollback(
    c: Conversation, failure: Failure, alias: dict[str, Any], index: int, previous: str
) -> tuple[Pointer, Remedy, str]:
    """The alias a deployment moved to the failing code, pointing it back, and the cause it shows."""
    name = c.name
    pointer = alias_pointer(alias, index, "code_error")
    remedy = Remedy(
        f"Point alias {alias['Name']} back to version {previous}",
        f"Roll the alias back to version {previous}, the version before the deployment; then fix the code.",
        command(
            c,
            "lambda",
            "UpdateAlias",
            {"FunctionName": name, "Name": alias["Name"], "FunctionVersion": previous},
        ),
        "low",
    )
    cause = (
        f"A deployment broke {name}: alias {alias['Name']} was moved to version "
        f"{alias['FunctionVersion']}, whose code fails with {failure.headline.removeprefix('[ERROR] ')}"
    )
    return pointer, remedy, cause


def _code_fix(c: Conversation, failure: Failure) -> tuple[Remedy, str]:
    name = c.name
    remedy = Remedy(
        f"Fix the {failure.error_type} in {name}'s code",
        "Find where the exception is raised (the traceback follows the error record) and fix it, or "
        "redeploy the last version that worked.",
    )
    return remedy, f"{name}'s code fails: {failure.headline.removeprefix('[ERROR] ')}"


def check(c: Conversation) -> Verdict:
    if not c.metrics.get("errors"):
        return None
    failure = _latest_code_failure(c)
    if failure is None:
        return None
    pointers = [
        Pointer(
            "get_function_metrics",
            "errors",
            c.metrics["errors"],
            "Invocations ended in an error",
            "code_error",
        ),
        failure.pointer(f"The function's code raised {failure.error_type}", "code_error"),
    ]
    rollback = alias_rollback(c)
    if rollback is not None:
        pointer, remedy, cause = _alias_rollback(c, failure, *rollback)
        pointers.append(pointer)
    else:
        remedy, cause = _code_fix(c, failure)
    return Finding(
        "code_error",
        cause,
        "high",
        pointers,
        remedy,
        relevant_change=_relevant,
        first_failure=first_failure(c),
        last_failure=last_failure(c),
    )
