"""The Resolver: a final, verified diagnosis's fix commands turned into draft steps, each read back with
the product's botocore-based reading and given its precondition and inverse by a fresh read of the world.
A command it cannot turn into an exact, reversible call is named with why; nothing is guessed. Given the
steps the Critic refused, it gives back the rest (its second round, ``Draft.without``)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError

from supervisor.diagnosis.cli_commands import CommandError, parse_command
from supervisor.remediation.operation import Reader, ReadError
from supervisor.remediation.operations import BY_CALL
from supervisor.remediation.plan import ApiCall, DraftStep
from supervisor.schemas import Diagnosis


@dataclass
class Draft:
    steps: list[DraftStep] = field(default_factory=list)
    unplanned: list[str] = field(default_factory=list)  # each diagnosis step left out, and why
    numbers: list[int] = field(default_factory=list)  # each drafted step's number in the diagnosis (1-based)

    def without(self, refused: Collection[int]) -> Draft:
        """The draft without the steps the Critic refused (by their number in the diagnosis): the Resolver's
        second round, which cannot write those differently and reads nothing again."""
        kept = [(step, n) for step, n in zip(self.steps, self.numbers, strict=True) if n not in refused]
        return Draft([step for step, _ in kept], list(self.unplanned), [n for _, n in kept])


def resolve(diagnosis: Diagnosis, *, final: bool, read: Reader) -> Draft:
    """Draft the steps of ``diagnosis`` (``final``: made on a change history that can no longer be
    missing its trigger); ``read`` gives read-only clients."""
    draft = Draft()
    if not final:
        draft.unplanned.append("the diagnosis is provisional: its change history may still lack the trigger")
        return draft
    for number, step in enumerate(diagnosis.remediation_plan, start=1):
        where = f"step {number} ({step.action})"
        if step.command is None:
            draft.unplanned.append(f"{where}: no command (the evidence does not determine one)")
            continue
        try:
            parsed = parse_command(step.command)
        except CommandError as error:
            draft.unplanned.append(f"{where}: {error}")
            continue
        operation = BY_CALL.get((parsed.service, parsed.operation))
        if operation is None:
            draft.unplanned.append(f"{where}: {parsed.service} {parsed.operation} is not on the allowlist")
            continue
        try:
            state = operation.read(read, parsed.params)
        except (ReadError, ClientError, BotoCoreError) as error:
            draft.unplanned.append(f"{where}: reading what it changes failed: {error}")
            continue
        call = ApiCall(service=parsed.service, operation=parsed.operation, params=parsed.params)
        draft.steps.append(
            DraftStep(
                action=step.action,
                call=call,
                precondition=state,
                inverse=operation.inverse(parsed.params, state),
            )
        )
        draft.numbers.append(number)
    return draft
