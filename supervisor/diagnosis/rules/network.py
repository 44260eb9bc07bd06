"""Network block: the function's VPC path cannot carry HTTPS to AWS (security groups, routes, ACLs)."""

from __future__ import annotations

import json
import re
from typing import Any

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import first_failure, last_failure
from supervisor.diagnosis.rules.findings import (
    ChangeEvent,
    Finding,
    Pointer,
    Rejection,
    Relevant,
    Remedy,
    Verdict,
)

_TOOL = "get_network_state"
NETWORK_OPERATIONS = frozenset(
    {
        "RevokeSecurityGroupEgress",
        "ModifySecurityGroupRules",
        "ModifyNetworkInterfaceAttribute",
        "CreateNetworkAclEntry",
        "ReplaceNetworkAclEntry",
        "DeleteNetworkAclEntry",
        "ReplaceNetworkAclAssociation",
        "CreateRoute",
        "ReplaceRoute",
        "DeleteRoute",
        "ReplaceRouteTableAssociation",
        "DeleteNatGateway",
        "DeleteVpcEndpoints",
    }
)


# The ids the verdicts' reasons name: the security group, network ACL or route table that blocks.
_RESOURCE_ID = re.compile(r"\b(?:sg|acl|rtb|nat|vpce)-[0-9a-f]+\b")


def _relevant_to(blocking: set[str]) -> Relevant:
    """A network change to one of the blocking resources, or a change of the function's VPC settings."""

    def relevant(event: ChangeEvent) -> bool:
        if event.operation == "UpdateFunctionConfiguration":
            return "vpcconfig" in event.changed_fields
        return event.operation in NETWORK_OPERATIONS and bool(
            blocking & set(_RESOURCE_ID.findall(json.dumps(event.event)))
        )

    return relevant


def check(c: Conversation) -> Verdict:
    network = c.network
    if not network or network.get("error"):
        return None
    if network.get("in_vpc") is False:
        pointer = Pointer(_TOOL, "in_vpc", False, "Not attached to a VPC: no VPC rule can block it", None)
        return Rejection("network_block", "The function is not in a VPC", [pointer])
    verdicts = list(enumerate(network.get("egress", [])))
    blocked = [(i, v) for i, v in verdicts if v.get("allowed") is False]
    if not blocked:
        if verdicts and all(v.get("allowed") for _, v in verdicts):
            pointers = [
                Pointer(_TOOL, f"egress.{i}.allowed", True, f"HTTPS to {v['destination']} is allowed", None)
                for i, v in verdicts
            ]
            return Rejection("network_block", "Every subnet carries HTTPS to AWS both ways", pointers)
        return None
    pointers = []
    for i, verdict in blocked:
        pointers.append(
            Pointer(
                _TOOL,
                f"egress.{i}.allowed",
                False,
                f"HTTPS to {verdict['destination']} is blocked",
                "network_block",
            )
        )
        pointers += [
            Pointer(_TOOL, f"egress.{i}.reasons.{j}", reason, "What blocks it", "network_block")
            for j, reason in enumerate(verdict.get("reasons", [])[:2])
        ]
    destinations = ", ".join(str(v["destination"]) for _, v in blocked)
    reasons = "; ".join(str(r) for _, v in blocked[:1] for r in v.get("reasons", [])[:2])
    timeouts = c.metrics.get("duration_to_timeout")
    if timeouts is not None and timeouts >= 0.95:
        pointers.append(
            Pointer(
                "get_function_metrics",
                "duration_to_timeout",
                timeouts,
                "Invocations run into the timeout, as calls that cannot leave the VPC do",
                "network_block",
            )
        )
    blocking = {i for _, v in blocked for r in v.get("reasons", []) for i in _RESOURCE_ID.findall(str(r))}
    return Finding(
        "network_block",
        f"The function's VPC path blocks HTTPS to {destinations} ({reasons}), so its AWS calls hang until "
        "the function times out.",
        "high",
        pointers,
        _remedy(c),
        relevant_change=_relevant_to(blocking),
        first_failure=first_failure(c, outcomes=frozenset({"timeout"})),
        last_failure=last_failure(c, outcomes=frozenset({"timeout"})),
        subsumes=("timeout",),
        resources=tuple(sorted(blocking)),
    )


_RENAMED = {"groups": "UserIdGroupPairs"}


def request_shape(value: Any) -> Any:
    """CloudTrail's record of an EC2 request in the API's own shape: camelCase keys capitalized,
    ``{"items": [...]}`` wrappers and empty members dropped ('ipRanges' -> 'IpRanges')."""
    if isinstance(value, dict):
        if set(value) == {"items"}:
            return request_shape(value["items"])
        return {
            _RENAMED.get(key, key[:1].upper() + key[1:]): request_shape(item)
            for key, item in value.items()
            if item not in ({}, [], None)
        }
    if isinstance(value, list):
        return [request_shape(item) for item in value]
    return value


def _removed_egress(c: Conversation) -> tuple[str, list[dict[str, Any]]] | None:
    """The group and rules of the newest RevokeSecurityGroupEgress, as its request listed them."""
    for event in c.changes.get("events", []):
        if event.get("event_name") != "RevokeSecurityGroupEgress" or event.get("error_code"):
            continue
        summary = event.get("summary") or {}
        group = summary.get("groupId") or next(
            (r["name"] for r in event.get("resources", []) if str(r.get("name", "")).startswith("sg-")), None
        )
        permissions = request_shape(summary.get("ipPermissions"))
        if group and isinstance(permissions, list) and permissions:
            return str(group), permissions
    return None


def _remedy(c: Conversation) -> Remedy:
    removed = _removed_egress(c)
    if removed is None:
        return Remedy(
            "Restore HTTPS egress from the function's subnets",
            "Allow TCP 443 out of the function's security groups (to 0.0.0.0/0 or the VPC endpoints it "
            "needs), and check the subnets' route to a NAT gateway and their network ACLs both ways.",
        )
    group, permissions = removed
    return Remedy(
        f"Put back the egress rule removed from {group}",
        f"Authorize again the egress rules the change history shows were revoked: {json.dumps(permissions)}.",
        command(c, "ec2", "AuthorizeSecurityGroupEgress", {"GroupId": group, "IpPermissions": permissions}),
        "low",
    )
