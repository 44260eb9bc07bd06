"""What a remediation operation declares (:class:`Operation`), and the few rules every declaration uses."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from supervisor.remediation.plan import ApiCall, Risk

Params = Mapping[str, Any]
State = dict[str, Any]
Reader = Callable[[str], Any]  # a botocore service name -> a read-only boto3 client for it


# The value an inverse takes for an identifier its step's call creates (a new mapping's UUID): unknown when
# the plan is made, read in the state after the call, and filled in by the executor before it undoes it.
CREATED: Final = "(created by the step's call)"
VOLATILE: Final = ("RevisionId",)  # changes with every write: part of a precondition, not of a state put back


def settled(state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` without what every write changes: what an undo must give back."""
    return {key: value for key, value in state.items() if key not in VOLATILE}


def undo_of(inverse: ApiCall, after: Mapping[str, Any]) -> ApiCall:
    """``inverse`` with each ``CREATED`` value read from ``after``, the state its step's call left."""
    params = {key: after.get(key) if value == CREATED else value for key, value in inverse.params.items()}
    return inverse.model_copy(update={"params": params})


class ReadError(Exception):
    """The fresh read a step needs failed or found nothing to change: the step cannot be planned."""


def function_name(value: object) -> str:
    """A function's name from its name, partial ARN or ARN (``arn:aws:lambda:r:a:function:name[:q]``); any
    other ARN as it is."""
    text = str(value)
    parts = text.split(":")
    if text.startswith("arn:"):
        return parts[6] if len(parts) >= 7 and parts[2] == "lambda" and parts[5] == "function" else text
    if len(parts) >= 3 and parts[1] == "function":  # account:function:name[:qualifier]
        return parts[2]
    return parts[0]  # name[:qualifier]


@dataclass(frozen=True)
class Operation:
    service: str  # botocore's service name
    name: str  # botocore's operation name
    risk: Risk
    fixes: str  # the kind of fix, for people
    allowed: frozenset[str]  # the parameters the call may carry; any other is refused
    reads: tuple[str, ...]  # the IAM actions of ``read``
    read: Callable[[Reader, Params], State]
    inverse: Callable[[Params, State], ApiCall]
    targets: Callable[[Params, State], tuple[str, ...]]  # the resources it changes, by name
    refuse: Callable[[Params, State], str | None] = lambda _params, _state: None
    fix: bool = True  # False: on the list only as the undo of a fix, never a fix itself
    recorded: tuple[str, ...] = ()  # parameters whose value a change before the trigger must show
    # Whether a state already holds what the call sets (someone applied the same fix since the plan was
    # made): the executor then has nothing to call. Never true where that cannot be read exactly.
    done: Callable[[Params, State], bool] = lambda _params, _state: False

    @property
    def key(self) -> tuple[str, str]:
        return self.service, self.name

    @property
    def action(self) -> str:
        """The IAM action of the call (the allowlist's services name their actions as botocore does)."""
        return f"{self.service}:{self.name}"

    def refusal(self, params: Params, state: State) -> str | None:
        """Why the call may not be applied with these parameters on this state; None when it may."""
        if not self.fix:
            return f"{self.name} is on the allowlist only to undo a fix, never as a fix"
        extra = sorted(set(params) - self.allowed)
        if extra:
            return f"{self.name} may set only {', '.join(sorted(self.allowed))}, not {', '.join(extra)}"
        return self.refuse(params, state)
