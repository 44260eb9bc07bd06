"""The allowlisted fixes on a customer managed key the function's environment is encrypted with: a disabled
key enabled again (disabling one is on the list only as that fix's undo)."""

from __future__ import annotations

from typing import Final

from supervisor.remediation.operation import Operation, Params, Reader, State
from supervisor.remediation.plan import ApiCall


def _key(params: Params, _state: State) -> tuple[str, ...]:
    return (str(params["KeyId"]),)


def _read_key(client: Reader, params: Params) -> State:
    return {"KeyState": client("kms").describe_key(KeyId=params["KeyId"])["KeyMetadata"]["KeyState"]}


def _key_back(params: Params, state: State) -> ApiCall:
    operation = "DisableKey" if state["KeyState"] == "Disabled" else "EnableKey"
    return ApiCall(service="kms", operation=operation, params={"KeyId": params["KeyId"]})


def _not_disabled(params: Params, state: State) -> str | None:
    if state["KeyState"] != "Disabled":
        return f"key {params['KeyId']} is {state['KeyState']}, not Disabled: enabling it is not the fix"
    return None


FIXES: Final[tuple[Operation, ...]] = (
    Operation(
        "kms",
        "EnableKey",
        "high",
        "enable again the disabled key the function's environment is encrypted with",
        frozenset({"KeyId"}),
        ("kms:DescribeKey",),
        _read_key,
        _key_back,
        _key,
        _not_disabled,
        done=lambda _params, state: state["KeyState"] == "Enabled",
    ),
    Operation(
        "kms",
        "DisableKey",
        "high",
        "disable a key again (the undo of enabling it)",
        frozenset({"KeyId"}),
        ("kms:DescribeKey",),
        _read_key,
        _key_back,
        _key,
        fix=False,
    ),
)
