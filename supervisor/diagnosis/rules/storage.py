"""Resource exhausted: the function's writes find its /tmp (``EphemeralStorage``) full.

An execution environment's /tmp lasts as long as the environment and is shared by its invocations, so what
each run leaves there adds up: the runs after a leaking deployment succeed until it is full. The trigger is
the latest deployment or storage change before the first failure, whatever succeeded since; the changes
since the last success before it are the other candidates.
"""

from __future__ import annotations

from supervisor.diagnosis.rules.code import alias_rollback_remedy
from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import Failure, failures, first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Remedy, Verdict
from supervisor.diagnosis.rules.trigger_remedy import DEPLOY_OPERATIONS, alias_rollback
from supervisor.diagnosis.rules.triggers import change_events, previous_setting
from supervisor.faults.meanings import NO_SPACE

_FAULT = "resource_exhausted"


def _relevant(event: ChangeEvent) -> bool:
    return event.operation in DEPLOY_OPERATIONS or (
        event.operation == "UpdateFunctionConfiguration" and "ephemeralstorage" in event.changed_fields
    )


def _full(failure: Failure) -> bool:
    return failure.kind in ("error_record", "init_error") and NO_SPACE.search(failure.text) is not None


def _size(value: object) -> int | None:
    """The size CloudTrail records of ``EphemeralStorage`` (``{"size": 1024}``)."""
    if isinstance(value, dict):
        value = next((v for k, v in value.items() if str(k).lower() == "size"), None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _remedy(c: Conversation, size: int) -> tuple[Remedy, list[Pointer]]:
    """A deployment rolled back (an alias pointed back); a size a change lowered put back; else advice."""
    name = c.name
    newest = max((e for e in change_events(c) if _relevant(e)), key=lambda e: e.time, default=None)
    if newest is not None and newest.operation in DEPLOY_OPERATIONS:
        move = alias_rollback(c, newest)
        if move is not None:
            then = "then make the new build delete what it writes to /tmp"
            return alias_rollback_remedy(c, move, _FAULT, then)
    previous = previous_setting(c, "ephemeralStorage")
    earlier = _size(previous[0]) if previous is not None else None
    if previous is not None and earlier is not None and earlier > size:
        remedy = Remedy(
            f"Give {name} back its {earlier} MB of /tmp",
            f"Set EphemeralStorage to {earlier} MB, its size before the change that lowered it to {size} MB.",
            command(
                c,
                "lambda",
                "UpdateFunctionConfiguration",
                {"FunctionName": name, "EphemeralStorage": {"Size": earlier}},
            ),
            "low",
        )
        return remedy, [previous[1]]
    remedy = Remedy(
        f"Stop {name} filling its /tmp",
        f"Delete what each invocation writes to /tmp once it is used (an environment keeps its /tmp between "
        f"invocations), or redeploy the build that worked; if the work needs more than {size} MB, raise "
        "EphemeralStorage (at most 10,240 MB).",
    )
    return remedy, []


def check(c: Conversation) -> Verdict:
    size = c.config.get("EphemeralStorageMb")
    if not c.metrics.get("errors") or not isinstance(size, int):
        return None
    full = [f for f in failures(c) if _full(f)]
    if not full:
        return None
    failure, explained = full[-1], frozenset(f.request_id for f in full)
    remedy, cited = _remedy(c, size)
    pointers = [
        Pointer("get_function_metrics", "errors", c.metrics["errors"], "Invocations failed", _FAULT),
        Pointer(
            "get_lambda_config", "EphemeralStorageMb", size, f"The {size} MB of /tmp the function has", _FAULT
        ),
        failure.pointer(f"A write found no space left: {failure.error_type}", _FAULT),
        *[p for p in (failure.frame_pointer(),) if p is not None],
        *cited,
    ]
    return Finding(
        _FAULT,
        f"{c.name} fills its {size} MB of /tmp (EphemeralStorage): its writes fail with {failure.summary}",
        "high",
        pointers,
        remedy,
        relevant_change=_relevant,
        first_failure=first_failure(c, requests=explained),
        last_failure=last_failure(c, requests=explained),
        accumulates=True,
    )
