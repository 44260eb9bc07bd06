"""Whether Lambda invokes a function in the state its configuration answers.

Only an ``Active`` function is invoked (https://docs.aws.amazon.com/lambda/latest/dg/functions-states.html).
The Invoke API's errors (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html#API_Invoke_Errors):
an ``Inactive`` function answers ``ResourceNotReadyException`` (its VPC connection is gone), and the attempt
makes Lambda connect it again (the runtime tells the emulator: chaos/sandbox/extensions/lambda_vpc.py); a
``Failed`` one that could not get an address in a subnet ``SubnetIPAddressLimitReachedException``, or over
the account's network interfaces ``ENILimitReachedException``; any other state (``Pending`` while its
interfaces are made) ``ResourceConflictException``. Like a key that cannot decrypt, such a request is an
invocation error: no ``Invocations``, no logs.
"""

from __future__ import annotations

from typing import Any

FUNCTION_STATES_PATH = "/_sandbox/lambda/function-states/"  # the emulator's (extensions/lambda_vpc.py)

_REFUSALS = {
    "SubnetOutOfIPAddresses": (
        "SubnetIPAddressLimitReachedException",
        "Lambda was not able to set up VPC access for the Lambda function because one or more configured "
        "subnets has no available IP addresses.",
    ),
    "EniLimitExceeded": (
        "ENILimitReachedException",
        "Lambda was not able to create an Elastic Network Interface in the VPC, specified as part of Lambda "
        "function configuration, because the limit for network interfaces has been reached.",
    ),
}
_INACTIVE = (
    "ResourceNotReadyException",
    "The function is inactive and its VPC connection is no longer available. Wait for the VPC connection to "
    "reestablish and try again.",
)


def refusal(config: dict[str, Any]) -> tuple[str, str] | None:
    """``(error type, message)`` of the Invoke error for the function's state, or None when it is invoked."""
    state = config.get("State") or "Active"
    if state == "Active":
        return None
    if state == "Inactive":
        return _INACTIVE
    if state == "Failed" and (known := _REFUSALS.get(str(config.get("StateReasonCode")))) is not None:
        return known
    return (
        "ResourceConflictException",
        f"The operation cannot be performed at this time. The function is currently in the following state: "
        f"{state}",
    )
