"""Applying a plan's steps and undoing them. Before each call the state it changes is read again and must
equal the step's precondition (a world that moved since the plan voids the rest), but for the revision an
earlier step of the same run left on the same resource; each call is recorded with its request id and the
state before and after. An undo applies the inverses of the applied steps in
reverse order and checks that each put back the state the step found."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore import xform_name
from botocore.exceptions import BotoCoreError, ClientError

from supervisor.remediation.operation import VOLATILE, Operation, Reader, ReadError, settled, undo_of
from supervisor.remediation.operations import BY_CALL
from supervisor.remediation.plan import ApiCall, Plan

Writer = Callable[[str], Any]  # a botocore service name -> a boto3 client that may apply the step


class StepRefused(Exception):
    """A step was not applied: what the executor found instead of what the plan expected."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"step {step}: {reason}")
        self.step = step


@dataclass(frozen=True)
class AppliedCall:
    step: int  # 1-based, in the plan
    call: ApiCall
    request_id: str | None
    before: dict[str, Any]
    after: dict[str, Any]


def apply_steps(
    plan: Plan,
    *,
    read: Reader,
    write: Writer,
    applied: Callable[[AppliedCall], None],
    calling: Callable[[int], None] = lambda step: None,
    in_place: Callable[[int], None] = lambda step: None,
) -> list[AppliedCall]:
    """Apply the plan's steps in order, each after its precondition is read true; ``calling`` is told of
    each step just before its call (so that a run that dies in the call knows to look at it), ``applied``
    of each call as soon as it returned, ``in_place`` of each step the world moved to exactly what it sets
    (someone applied the same fix since the plan): nothing is called for it, and nothing is undone. Raises
    :class:`StepRefused` at the first step that may not run (the steps before it stay applied: the caller
    undoes them)."""
    done: list[AppliedCall] = []
    revised: dict[tuple[object, str], dict[str, Any]] = {}  # what this run's own calls left, by resource
    for number, step in enumerate(plan.steps, start=1):
        operation = _allowlisted(number, step.call)
        resource = (operation.read, operation.targets(step.call.params, step.precondition)[0])
        expected = step.precondition | revised.get(resource, {})
        before = _read(number, operation, read, step.call.params)
        if before != expected and operation.done(step.call.params, before):
            in_place(number)
            continue
        if before != expected:
            raise StepRefused(number, f"the world moved since the plan: {_difference(expected, before)}")
        calling(number)
        response = _call(number, write, step.call)
        after = _read(number, operation, read, step.call.params)
        revised[resource] = {key: after[key] for key in VOLATILE if key in after and key in step.precondition}
        record = AppliedCall(number, step.call, _request_id(response), before, after)
        applied(record)
        done.append(record)
    return done


def undo_steps(plan: Plan, done: list[AppliedCall], *, read: Reader, write: Writer) -> list[str]:
    """Apply the inverses of ``done`` in reverse order; what could not be put back, one line each (empty
    when the world is back as each step found it, revision ids aside)."""
    left: list[str] = []
    for record in reversed(done):
        inverse = undo_of(plan.steps[record.step - 1].inverse, record.after)
        try:
            operation = _allowlisted(record.step, inverse)
            _call(record.step, write, inverse)
            now = _read(
                record.step, BY_CALL[(record.call.service, record.call.operation)], read, record.call.params
            )
        except StepRefused as error:
            left.append(str(error))
            continue
        if settled(now) != settled(record.before):
            left.append(
                f"step {record.step}: {operation.name} left {settled(now)}, not {settled(record.before)}"
            )
    return left


def _allowlisted(number: int, call: ApiCall) -> Operation:
    operation = BY_CALL.get((call.service, call.operation))
    if operation is None:
        raise StepRefused(number, f"{call.service} {call.operation} is not an allowlisted operation")
    return operation


def _read(number: int, operation: Operation, read: Reader, params: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return operation.read(read, params)
    except (ReadError, ClientError, BotoCoreError) as error:
        raise StepRefused(number, f"reading what it changes failed: {error}") from error


def _call(number: int, write: Writer, call: ApiCall) -> Mapping[str, Any]:
    try:
        response: Mapping[str, Any] = getattr(write(call.service), xform_name(call.operation))(**call.params)
    except (ClientError, BotoCoreError) as error:
        raise StepRefused(number, f"{call.operation} failed: {error}") from error
    return response


def _request_id(response: Mapping[str, Any]) -> str | None:
    metadata = response.get("ResponseMetadata")
    return str(metadata["RequestId"]) if isinstance(metadata, Mapping) and "RequestId" in metadata else None


def _difference(expected: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    keys = sorted(set(expected) | set(now))
    return ", ".join(
        f"{k} {expected.get(k)!r} → {now.get(k)!r}" for k in keys if expected.get(k) != now.get(k)
    )


def interrupted(plan: Plan, step: int, *, read: Reader) -> AppliedCall | None:
    """Step ``step`` as a run that died during its call may have left it: a record to undo when what it
    changes no longer reads as its precondition (revision ids aside), else None (the call never landed)."""
    planned = plan.steps[step - 1]
    now = _read(step, _allowlisted(step, planned.call), read, planned.call.params)
    if settled(now) == settled(planned.precondition):
        return None
    return AppliedCall(step, planned.call, None, dict(planned.precondition), now)
