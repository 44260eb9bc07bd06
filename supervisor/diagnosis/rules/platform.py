"""Platform refused: Lambda will not start an execution environment for the function.

Two readings of the configuration tool, which the function's users cannot write, each making every
invocation fail before the code runs (Invoke's own errors: no logs, no ``Invocations``), so that work backs
up on the function's queues while its own metrics stay silent:

- ``EnvironmentKey`` (KMS's own description of the key that encrypts the environment variables, and the
  principals its grants let decrypt): a key that is not Enabled, or grants that no longer name the
  execution role. The trigger is the KMS change to that key (DisableKey, ScheduleKeyDeletion, RevokeGrant,
  RetireGrant).
- ``State`` and ``StateReasonCode``: a function Lambda cannot connect to its VPC (no free address in a
  subnet, the account's network interfaces used up, a subnet or group gone) is not Active, and stays so
  until that changes. The trigger is what took the addresses: network interfaces or instances made in its
  subnets.
"""

from __future__ import annotations

from typing import Any

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.event_paths import impact
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Gap, Pointer, Rejection, Remedy, Verdict
from supervisor.faults.meanings import UNCONNECTED_CODES

_FAULT = "platform_refused"
_CONFIG = "get_lambda_config"
KEY_OPERATIONS = frozenset({"DisableKey", "ScheduleKeyDeletion", "RevokeGrant", "RetireGrant"})


def _names_key(key_arn: str) -> Any:
    """A KMS change whose request names this key, by ARN or by id."""
    key_id = key_arn.rsplit("/", 1)[-1]

    def relevant(event: ChangeEvent) -> bool:
        named = str((event.event.get("summary") or {}).get("keyId") or "")
        return event.operation in KEY_OPERATIONS and named in (key_arn, key_id)

    return relevant


def key_remedy(c: Conversation, key_arn: str, state: str, enabled_lets: str) -> Remedy | None:
    """The command that makes a Disabled or PendingDeletion key usable again; None in another state."""
    enable = command(c, "kms", "EnableKey", {"KeyId": key_arn})
    if state == "Disabled":
        return Remedy(f"Enable the key {key_arn}", f"Enabling the key lets {enabled_lets}.", enable, "low")
    if state == "PendingDeletion":
        return Remedy(
            f"Cancel the deletion of the key {key_arn}, then enable it",
            f"Cancelling the deletion leaves the key disabled: enable it next ({enable}).",
            command(c, "kms", "CancelKeyDeletion", {"KeyId": key_arn}),
            "low",
        )
    return None


def _remedy(c: Conversation, key_arn: str, state: str) -> tuple[Remedy, tuple[Gap, ...]]:
    enabled_lets = "Lambda decrypt the environment variables again when it starts an execution environment"
    if (remedy := key_remedy(c, key_arn, state, enabled_lets)) is not None:
        return remedy, ()
    role = str(c.config.get("Role") or "the execution role")
    what = f"its grant for the execution role {role}" if state == "Enabled" else f"its state {state}"
    gap = Gap(
        "remediation",
        f"No single command restores {what}: switch the function to another role and back (Lambda "
        "grants the role again), or give it a usable key and its variables again.",
    )
    remedy = Remedy(f"Make the key {key_arn} usable by {c.name} again", gap.reason, None, "medium")
    return remedy, (gap,)


def _held_back(c: Conversation) -> list[str]:
    """The queues and topics whose work waits or was lost while no environment starts."""
    function = c.event_sources.get("function_arn")
    return list(dict.fromkeys(f["resource"] for f, _ in impact(c) if f["resource"] != function))


_ADDRESS_OPERATIONS = frozenset({"CreateNetworkInterface", "AssignPrivateIpAddresses", "RunInstances"})
_UNCONNECTED = {
    "SubnetOutOfIPAddresses": "a subnet it runs in has no free IP address",
    "EniLimitExceeded": "the account has used up its network interfaces",
    "InvalidSubnet": "a subnet it names is gone or invalid",
    "InvalidSecurityGroup": "a security group it names is gone or invalid",
}


def _takes_addresses(subnets: list[str]) -> Any:
    """A call that took addresses in one of ``subnets``."""

    def relevant(event: ChangeEvent) -> bool:
        return (
            event.operation in _ADDRESS_OPERATIONS
            and event.event.get("summary", {}).get("subnetId") in subnets
        )

    return relevant


def _unconnected(c: Conversation) -> Finding | None:
    """The function is not Active because Lambda cannot connect it to its VPC."""
    state, code = c.config.get("State"), c.config.get("StateReasonCode")
    if state not in ("Pending", "Inactive", "Failed") or code not in UNCONNECTED_CODES:
        return None
    subnets = [str(s) for s in (c.config.get("VpcConfig") or {}).get("SubnetIds") or []]
    where = ", ".join(subnets) or "its subnets"
    why = _UNCONNECTED[str(code)]
    pointers = [
        Pointer(_CONFIG, "State", state, f"{c.name} is {state}: Lambda does not invoke it", _FAULT),
        Pointer(
            _CONFIG, "StateReasonCode", code, f"Lambda cannot connect {c.name} to its VPC: {why}", _FAULT
        ),
    ]
    fix = (
        f"free addresses in {where} (delete the network interfaces that hold addresses no longer needed) or "
        f"add a subnet that has free addresses to the function's VpcConfig"
        if code == "SubnetOutOfIPAddresses"
        else "raise the account's network interface quota or delete unused interfaces"
        if code == "EniLimitExceeded"
        else "point the function's VpcConfig at subnets and security groups that exist"
    )
    gap = Gap(
        "remediation",
        f"No single command gives {c.name} its network interfaces back: {fix}; Lambda connects it at its "
        "next invocation.",
    )
    return Finding(
        _FAULT,
        f"Lambda cannot connect {c.name} to its VPC ({code}: {why}), so the function is {state} and no "
        "invocation runs its code.",
        "critical",
        pointers,
        Remedy(f"Let Lambda connect {c.name} to {where} again", gap.reason, None, "medium"),
        relevant_change=_takes_addresses(subnets),
        resources=(*subnets, *_held_back(c)),
        gaps=(gap,),
        ends_successes=True,
    )


def check(c: Conversation) -> Verdict:
    if (unconnected := _unconnected(c)) is not None:
        return unconnected
    key, key_arn, role = c.config.get("EnvironmentKey"), c.config.get("KMSKeyArn"), c.config.get("Role")
    if not isinstance(key, dict) or not key_arn:
        return None
    state, grantees = key.get("KeyState"), key.get("DecryptGrantees")
    granted = None if not isinstance(grantees, list) else role in grantees
    state_pointer = Pointer(_CONFIG, "EnvironmentKey.KeyState", state, f"The key {key_arn} is {state}", None)
    if state is None or (state == "Enabled" and granted is not False):
        reason = "The environment variables' key is enabled and its grants let the role decrypt"
        return Rejection(_FAULT, reason, [state_pointer] if state else [])
    pointers = [Pointer(_CONFIG, "KMSKeyArn", key_arn, "The key of the environment variables", None)]
    if state != "Enabled":
        pointers.append(Pointer(_CONFIG, "EnvironmentKey.KeyState", state, f"The key is {state}", _FAULT))
        why = f"is {state}"
    else:
        shown = f"No grant lets {role} decrypt with the key"
        pointers.append(Pointer(_CONFIG, "EnvironmentKey.DecryptGrantees", grantees, shown, _FAULT))
        why = f"grants its role {role} no decryption"
    remedy, gaps = _remedy(c, str(key_arn), state)
    return Finding(
        _FAULT,
        f"Lambda cannot decrypt the environment variables of {c.name}: their KMS key {key_arn} {why}, so no "
        "new execution environment starts and invocations fail before the code runs.",
        "critical",
        pointers,
        remedy,
        relevant_change=_names_key(str(key_arn)),
        resources=(str(key_arn), *_held_back(c)),
        gaps=gaps,
        ends_successes=True,
    )
