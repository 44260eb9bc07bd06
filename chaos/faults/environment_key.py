"""``key-disable``: make the customer managed key of the function's environment variables unusable, so that
Lambda cannot start an execution environment for it: ``state=disabled`` (the default) disables the key,
``state=pending-deletion`` schedules its deletion with the shortest window KMS allows (7 days). Restore
cancels a scheduled deletion (which leaves the key disabled,
https://docs.aws.amazon.com/kms/latest/developerguide/deleting-keys-scheduling-key-deletion.html) and
enables the key. Refused for a function whose variables use Lambda's own key, or whose key is not enabled
to begin with (there is nothing to take away)."""

from __future__ import annotations

from typing import Any, Literal

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosRefused
from chaos.faults.support import give_up

State = Literal["disabled", "pending-deletion"]
PENDING_WINDOW_DAYS = 7  # ScheduleKeyDeletion's shortest waiting period


def _state(chaos: Chaos, key: str) -> str:
    return str(chaos.read("kms", "describe_key", KeyId=key)["KeyMetadata"]["KeyState"])


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    name, key = target.function_name, target.configuration.get("KMSKeyArn")
    if not key:
        raise ChaosRefused(
            f"nothing to disable: {name} encrypts its environment variables with Lambda's own key "
            "(no KMSKeyArn); give it a customer managed key first"
        )
    state = _state(chaos, key)
    if state != "Enabled":
        raise ChaosRefused(f"the key of {name}'s environment variables, {key}, is {state}, not Enabled")
    return {"function": name, "key": key}


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any], *, state: State = "disabled") -> None:
    key, now = prior["key"], _state(chaos, prior["key"])
    if state == "pending-deletion":
        if now != "PendingDeletion":
            chaos.call("kms", "schedule_key_deletion", KeyId=key, PendingWindowInDays=PENDING_WINDOW_DAYS)
    elif state == "disabled":
        if now != "Disabled":
            chaos.call("kms", "disable_key", KeyId=key)
    else:  # nothing changed: the saved state goes too
        error = ChaosRefused(f"state {state!r} is not one of: disabled, pending-deletion")
        give_up(chaos, KEY_DISABLE.name, prior["function"], error, unchanged=True)


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    key = prior["key"]
    if _state(chaos, key) == "PendingDeletion":
        chaos.call("kms", "cancel_key_deletion", KeyId=key)
    if _state(chaos, key) != "Enabled":
        chaos.call("kms", "enable_key", KeyId=key)


KEY_DISABLE = Fault(
    "key-disable", "environment variables' KMS key disabled or pending deletion", _capture, _apply, _revert
)
