"""Code error: an exception or init failure in the function's own code, a bad deployment included."""

from __future__ import annotations

from supervisor.diagnosis.rules import async_faults, bad_input, signs, timeline
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import Failure, failures, first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Remedy, Verdict
from supervisor.diagnosis.rules.trigger_remedy import (
    DEPLOY_OPERATIONS,
    AliasMove,
    alias_pointer,
    alias_rollback,
)
from supervisor.diagnosis.rules.triggers import change_events
from supervisor.faults.meanings import AT_LIMIT

_CONFIG = "get_lambda_config"
CODE_RUNTIME_ERRORS = frozenset(
    {
        "Runtime.UserCodeSyntaxError",
        "Runtime.MarshalError",
        "Runtime.ImportModuleError",
        "Runtime.UnhandledPromiseRejection",  # Node: the code's rejected promise, its reason in the message
        "Runtime.NodeJsExit",  # Node: the code left a promise that never settled
    }
)


def _relevant(event: ChangeEvent) -> bool:
    return event.operation in DEPLOY_OPERATIONS


def is_code_failure(failure: Failure) -> bool:
    """An exception of the code itself, in any runtime, while it runs or while it initialises: an exception
    of the language or a runtime error about the code, or the runtime exiting during the init phase. An AWS
    error (one with its code, a denial) is not one: it says what a call met, which the other checks judge."""
    if failure.kind not in ("error_record", "init_error") or failure.error_type is None:
        return False
    if failure.error_code is not None or failure.denial() is not None:
        return False
    error = signs.runtime_error(failure)
    if error is not None:
        return error in CODE_RUNTIME_ERRORS or (error == "Runtime.ExitError" and failure.kind == "init_error")
    return True


def _latest_code_failure(c: Conversation) -> Failure | None:
    """The newest failure of the code itself since the newest deployment, if any. The runtime exiting at
    init while the memory is at its size is the memory's failure, not the code's."""
    deployed = max((e.time for e in change_events(c) if _relevant(e)), default=None)
    out_of_memory = (c.metrics.get("memory_to_size") or 0) >= AT_LIMIT
    found = [
        f
        for f in failures(c)
        if is_code_failure(f)
        and (deployed is None or (f.started or deployed) >= deployed)
        and not (out_of_memory and f.error_type == "Runtime.ExitError")
    ]  # an error from before the newest deployment is not an error of the code deployed now
    return found[-1] if found else None


def alias_rollback_remedy(
    c: Conversation, move: AliasMove, supports: str, then: str
) -> tuple[Remedy, list[Pointer]]:
    """The alias a deployment moved pointed back at the version it held before, and the pointers that show
    the move (the alias, and the earlier alias call when the history holds it)."""
    alias, previous = move.alias, move.previous
    pointers = [alias_pointer(alias, move.index, supports), *([move.shown_by] if move.shown_by else [])]
    remedy = Remedy(
        f"Point alias {alias['Name']} back to version {previous}",
        f"Roll the alias back to version {previous}, the one it pointed at before the deployment; {then}.",
        command(
            c,
            "lambda",
            "UpdateAlias",
            {"FunctionName": c.name, "Name": alias["Name"], "FunctionVersion": previous},
        ),
        "low",
    )
    return remedy, pointers


def _alias_rollback(c: Conversation, failure: Failure, move: AliasMove) -> tuple[list[Pointer], Remedy, str]:
    """The alias a deployment moved to the failing code, pointing it back, and the cause it shows."""
    remedy, pointers = alias_rollback_remedy(c, move, "code_error", "then fix the code")
    cause = (
        f"A deployment broke {c.name}: alias {move.alias['Name']} was moved to version "
        f"{move.alias['FunctionVersion']}, whose code fails with {_failing(failure)}"
    )
    return pointers, remedy, cause


def _failing(failure: Failure) -> str:
    """What the code fails with, and where when the record names the line: 'KeyError: 'x' (at app.py:12)'."""
    return failure.summary + (f" (at {failure.frame})" if failure.frame else "")


def _code_fix(c: Conversation, failure: Failure) -> tuple[Remedy, str]:
    name = c.name
    where = (
        f"It is raised at {failure.frame}, the first frame of the function's own code: fix it there"
        if failure.frame
        else "Find where the exception is raised (the stack trace follows the error record) and fix it"
    )
    remedy = Remedy(
        f"Fix the {failure.error_type} in {name}'s code",
        f"{where}, or redeploy the last version that worked.",
    )
    return remedy, f"{name}'s code fails: {_failing(failure)}"


def check(c: Conversation) -> Verdict:
    if not c.metrics.get("errors"):
        return None
    failure = _latest_code_failure(c)
    if failure is None or async_faults.poison_event(c):  # the code fails on a discarded event only
        return None
    explained = frozenset(f.request_id for f in failures(c) if is_code_failure(f))
    bounds = timeline.window_at(c, first_failure(c, requests=explained))
    if (bad_input.interleaved(c) or bad_input.retried_batch(c)) and not any(
        _relevant(e) and bounds.holds(e) for e in change_events(c)
    ):
        return None  # no deployment can have started them, and the same code succeeds on other input
    pointers = [
        Pointer(
            "get_function_metrics",
            "errors",
            c.metrics["errors"],
            "Invocations ended in an error",
            "code_error",
        ),
        failure.pointer(f"The function's code raised {failure.error_type}", "code_error"),
        *[p for p in (failure.frame_pointer(),) if p is not None],
    ]
    rollback = alias_rollback(c)
    if rollback is not None:
        cited, remedy, cause = _alias_rollback(c, failure, rollback)
        pointers += cited
    else:
        remedy, cause = _code_fix(c, failure)
    return Finding(
        "code_error",
        cause,
        "high",
        pointers,
        remedy,
        relevant_change=_relevant,
        first_failure=first_failure(c, requests=explained),
        last_failure=last_failure(c, requests=explained),
    )
