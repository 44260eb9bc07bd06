"""Whether a later change put back what an earlier one took away, read from the two changes' own request
parameters (the change history's ``summary``): the same rule authorised again, the same policy put back or
taken away again, the same setting set to another value, the same mapping enabled again.

A fault is resolved only when the change that undid it restores what the change that caused it took away;
a later change that merely touched the same resource (a rule for port 80 after 443 was revoked) is not a
restoration, and the fault stays current. Pairs this module does not know are not restorations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from supervisor.faults.meanings import operation

Summary = Mapping[str, Any]


def _same(caused: Summary, undone: Summary, *keys: str) -> bool:
    return all(caused.get(key) is not None and caused.get(key) == undone.get(key) for key in keys)


def _port_range(permission: Mapping[str, Any]) -> tuple[int, int]:
    low, high = permission.get("fromPort"), permission.get("toPort")
    return (low if isinstance(low, int) else 0, high if isinstance(high, int) else 65535)


def _targets(permission: Mapping[str, Any]) -> set[str]:
    ranges = [r.get("cidrIp") for r in permission.get("ipRanges") or [] if isinstance(r, Mapping)]
    ranges += [r.get("cidrIpv6") for r in permission.get("ipv6Ranges") or [] if isinstance(r, Mapping)]
    ranges += [r.get("prefixListId") for r in permission.get("prefixListIds") or [] if isinstance(r, Mapping)]
    ranges += [r.get("groupId") for r in permission.get("groups") or [] if isinstance(r, Mapping)]
    return {str(r) for r in ranges if r}


def _covers(granted: Mapping[str, Any], taken: Mapping[str, Any]) -> bool:
    """Whether the rule ``granted`` allows at least what the rule ``taken`` allowed."""
    protocol = str(granted.get("ipProtocol"))
    if protocol not in ("-1", str(taken.get("ipProtocol"))):
        return False
    low, high = _port_range(granted) if protocol != "-1" else (0, 65535)
    taken_low, taken_high = _port_range(taken) if str(taken.get("ipProtocol")) != "-1" else (0, 65535)
    targets = _targets(granted)
    return low <= taken_low and taken_high <= high and (_targets(taken) <= targets or "0.0.0.0/0" in targets)


def _rules_back(caused: Summary, undone: Summary) -> bool:
    taken = [p for p in caused.get("ipPermissions") or [] if isinstance(p, Mapping)]
    granted = [p for p in undone.get("ipPermissions") or [] if isinstance(p, Mapping)]
    return (
        _same(caused, undone, "groupId")
        and bool(taken)
        and all(any(_covers(g, t) for g in granted) for t in taken)
    )


def _entry_back(caused: Summary, undone: Summary, name: str) -> bool:
    if not _same(caused, undone, "networkAclId", "ruleNumber") or caused.get("egress") != undone.get(
        "egress"
    ):
        return False
    return name == "DeleteNetworkAclEntry" or undone.get("ruleAction") != caused.get("ruleAction")


def _document(summary: Summary) -> Any:
    document = summary.get("policyDocument")
    if isinstance(document, str):
        try:
            return json.loads(document)
        except ValueError:
            return document
    return document


def _policy_back(caused: Summary, undone: Summary, name: str) -> bool:
    if not _same(caused, undone, "roleName", "policyName"):
        return False
    return name == "DeleteRolePolicy" or _document(undone) != _document(caused)


def _setting_back(caused: Summary, undone: Summary) -> bool:
    """Every field the first configuration change set, set again to another value (the environment, whose
    values CloudTrail never records, set again at all)."""
    fields = [str(f) for f in caused.get("changed_fields") or []]
    again = {str(f) for f in undone.get("changed_fields") or []}
    if not _same(caused, undone, "functionName") or not fields or not set(fields) <= again:
        return False
    return all(f.lower() == "environment" or undone.get(f) != caused.get(f) for f in fields)


def _concurrency_back(caused: Summary, undone: Summary, name: str) -> bool:
    if not _same(caused, undone, "functionName"):
        return False
    if name == "DeleteFunctionConcurrency":
        return True
    before, after = caused.get("reservedConcurrentExecutions"), undone.get("reservedConcurrentExecutions")
    return isinstance(before, int) and isinstance(after, int) and after > before


def _mapping_back(caused: Summary, undone: Summary) -> bool:
    keys = [k for k in caused if k not in ("uUID", "functionName", "functionArn", "eventSourceArn")]
    return (
        _same(caused, undone, "uUID")
        and bool(keys)
        and all(undone.get(k, caused[k]) != caused[k] for k in keys)
    )


Restores = Callable[[Summary, Summary, str], bool]
# The change that takes something away -> the changes that can put it back, and how to tell they did.
_RESTORATIONS: Final[dict[str, dict[str, Restores]]] = {
    "RevokeSecurityGroupEgress": {"AuthorizeSecurityGroupEgress": lambda c, u, _: _rules_back(c, u)},
    "CreateNetworkAclEntry": {
        "DeleteNetworkAclEntry": _entry_back,
        "ReplaceNetworkAclEntry": _entry_back,
    },
    "DeleteRoute": {
        name: lambda c, u, _: _same(c, u, "routeTableId", "destinationCidrBlock")
        for name in ("CreateRoute", "ReplaceRoute")
    },
    "DeleteRolePolicy": {"PutRolePolicy": lambda c, u, _: _same(c, u, "roleName", "policyName")},
    "PutRolePolicy": {"DeleteRolePolicy": _policy_back, "PutRolePolicy": _policy_back},
    "AttachRolePolicy": {"DetachRolePolicy": lambda c, u, _: _same(c, u, "roleName", "policyArn")},
    "DetachRolePolicy": {"AttachRolePolicy": lambda c, u, _: _same(c, u, "roleName", "policyArn")},
    "PutRolePermissionsBoundary": {
        "DeleteRolePermissionsBoundary": lambda c, u, _: _same(c, u, "roleName"),
        "PutRolePermissionsBoundary": lambda c, u, _: (
            _same(c, u, "roleName") and u.get("permissionsBoundary") != c.get("permissionsBoundary")
        ),
    },
    "PutFunctionConcurrency": {
        "DeleteFunctionConcurrency": _concurrency_back,
        "PutFunctionConcurrency": _concurrency_back,
    },
    "UpdateFunctionConfiguration": {"UpdateFunctionConfiguration": lambda c, u, _: _setting_back(c, u)},
    "UpdateAlias": {
        "UpdateAlias": lambda c, u, _: (
            _same(c, u, "functionName", "name") and u.get("functionVersion") != c.get("functionVersion")
        )
    },
    "UpdateEventSourceMapping": {"UpdateEventSourceMapping": lambda c, u, _: _mapping_back(c, u)},
    "DeleteEventSourceMapping": {
        "CreateEventSourceMapping": lambda c, u, _: (
            _same(c, u, "eventSourceArn")
            and (c.get("functionArn") or c.get("functionName"))
            in (u.get("functionArn"), u.get("functionName"))
        )
    },
    "RemovePermission": {"AddPermission": lambda c, u, _: _same(c, u, "functionName", "statementId")},
    "SetQueueAttributes": {
        "SetQueueAttributes": lambda c, u, _: (
            _same(c, u, "queueUrl")
            and all(
                (u.get("attributes") or {}).get(k, v) != v for k, v in (c.get("attributes") or {}).items()
            )
            and bool(c.get("attributes"))
        )
    },
}


def restoration_problem(caused: Mapping[str, Any], undone: Mapping[str, Any]) -> str:
    """'' when the change event ``undone`` puts back what the change event ``caused`` took away, else why
    it does not (both as the change history gives them, with their ``summary``)."""
    first, second = operation(str(caused.get("event_name"))), operation(str(undone.get("event_name")))
    if undone.get("error_code"):
        return f"the {second} that undid it failed ({undone['error_code']}): it changed nothing"
    check = _RESTORATIONS.get(first, {}).get(second)
    before, after = caused.get("summary") or {}, undone.get("summary") or {}
    if check is not None and check(before, after, second):
        return ""
    return (
        f"the {second} at {undone.get('time')} does not put back what the {first} at {caused.get('time')} "
        f"changed (its parameters: {json.dumps(after, sort_keys=True)[:300]}): the fault is current unless a "
        "change restored the same rule, policy, setting or value"
    )
