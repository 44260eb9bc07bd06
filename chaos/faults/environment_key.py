"""``key-disable``: make the customer managed key of the function's environment variables unusable, so that
Lambda cannot start an execution environment for it: ``state=disabled`` (the default) disables the key,
``state=pending-deletion`` schedules its deletion with the shortest window KMS allows (7 days),
``state=grant-revoked`` revokes the grants that let the execution role decrypt with it (the grant Lambda
made when the key or the role was set: KMSAccessDeniedException). The saved state also holds those grants.
Restore cancels a scheduled deletion (which leaves the key disabled,
https://docs.aws.amazon.com/kms/latest/developerguide/deleting-keys-scheduling-key-deletion.html), enables
the key, and makes each saved grant again that is missing (same grantee, operations, name, retiring
principal and constraints; KMS gives it a new id). Refused for a function whose variables use Lambda's own
key, or whose key is not enabled to begin with (there is nothing to take away)."""

from __future__ import annotations

import json
from typing import Any, Literal

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosRefused
from chaos.faults.support import give_up

State = Literal["disabled", "pending-deletion", "grant-revoked"]
STATES: tuple[State, ...] = ("disabled", "pending-deletion", "grant-revoked")
PENDING_WINDOW_DAYS = 7  # ScheduleKeyDeletion's shortest waiting period
# What ListGrants answers of a grant that CreateGrant takes back (GrantId aside, which KMS chooses)
_GRANT_FIELDS = ("GrantId", "GranteePrincipal", "Operations", "Name", "RetiringPrincipal", "Constraints")


def _state(chaos: Chaos, key: str) -> str:
    return str(chaos.read("kms", "describe_key", KeyId=key)["KeyMetadata"]["KeyState"])


def _decrypt_grants(chaos: Chaos, key: str, role_arn: str) -> list[dict[str, Any]]:
    """The key's grants that let the role decrypt, with what CreateGrant needs to make each again."""
    grants: list[dict[str, Any]] = []
    params: dict[str, Any] = {"KeyId": key}
    while True:
        page = chaos.read("kms", "list_grants", **params)
        grants += [
            {k: g[k] for k in _GRANT_FIELDS if g.get(k)}
            for g in page.get("Grants", [])
            if g.get("GranteePrincipal") == role_arn and "Decrypt" in g.get("Operations", [])
        ]
        if not page.get("Truncated"):
            return grants
        params["Marker"] = page["NextMarker"]


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
    grants = _decrypt_grants(chaos, key, str(target.configuration["Role"]))
    return {"function": name, "key": key, "role": target.configuration["Role"], "grants": grants}


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any], *, state: State = "disabled") -> None:
    key, now = prior["key"], _state(chaos, prior["key"])
    if state == "pending-deletion":
        if now != "PendingDeletion":
            chaos.call("kms", "schedule_key_deletion", KeyId=key, PendingWindowInDays=PENDING_WINDOW_DAYS)
    elif state == "disabled":
        if now != "Disabled":
            chaos.call("kms", "disable_key", KeyId=key)
    elif state == "grant-revoked":
        if not prior["grants"]:
            error = ChaosRefused(f"no grant of {key} lets {prior['role']} decrypt: nothing to revoke")
            give_up(chaos, KEY_DISABLE.name, prior["function"], error, unchanged=True)
        present = {g["GrantId"] for g in _decrypt_grants(chaos, key, prior["role"])}
        for grant in prior["grants"]:
            if grant["GrantId"] in present:
                chaos.call("kms", "revoke_grant", KeyId=key, GrantId=grant["GrantId"])
    else:  # nothing changed: the saved state goes too
        error = ChaosRefused(f"state {state!r} is not one of: {', '.join(STATES)}")
        give_up(chaos, KEY_DISABLE.name, prior["function"], error, unchanged=True)


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    key = prior["key"]
    if _state(chaos, key) == "PendingDeletion":
        chaos.call("kms", "cancel_key_deletion", KeyId=key)
    if _state(chaos, key) != "Enabled":
        chaos.call("kms", "enable_key", KeyId=key)
    saved = prior.get("grants") or []  # none in a state saved before grants were
    present = {_grant_shape(g) for g in _decrypt_grants(chaos, key, prior["role"])} if saved else set()
    for grant in saved:
        if _grant_shape(grant) not in present:  # made again: KMS gives it a new id
            chaos.call("kms", "create_grant", KeyId=key, **{k: v for k, v in grant.items() if k != "GrantId"})


def _grant_shape(grant: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in grant.items() if k != "GrantId"}, sort_keys=True)


KEY_DISABLE = Fault(
    "key-disable",
    "environment variables' KMS key disabled, pending deletion, or its grant to the role revoked",
    _capture,
    _apply,
    _revert,
)
