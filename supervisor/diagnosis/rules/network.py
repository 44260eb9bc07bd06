"""Network block: the function's VPC path cannot carry HTTPS to AWS (security groups, routes, ACLs)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation, instant
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
from supervisor.faults import sources

_TOOL = "get_network_state"
_EPOCH = datetime.min.replace(tzinfo=UTC)
NETWORK_OPERATIONS = frozenset(sources.NETWORK_OPERATIONS)


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
        _remedy(c, _relevant_to(blocking)),
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


def _earlier_route(c: Conversation, change: ChangeEvent) -> dict[str, Any] | None:
    """The route a DeleteRoute took away, as the newest earlier CreateRoute or ReplaceRoute of the same table
    and destination asked for it."""
    summary = change.event.get("summary") or {}
    for event in c.changes.get("events", []):  # the newest first
        said = event.get("summary") or {}
        if (
            event.get("event_name") in ("CreateRoute", "ReplaceRoute")
            and not event.get("error_code")
            and str(event.get("time")) < str(change.event.get("time"))
            and said.get("routeTableId") == summary.get("routeTableId")
            and said.get("destinationCidrBlock") == summary.get("destinationCidrBlock")
        ):
            return dict(request_shape(said))
    return None


def _undo_params(c: Conversation, change: ChangeEvent) -> tuple[str, str, dict[str, Any]] | None:
    """(what the step does, the EC2 operation, its parameters) that put back what ``change`` took away, from
    its own request (and, for a deleted route, the request that created it); None when they do not show it."""
    summary = change.event.get("summary") or {}
    if change.operation == "RevokeSecurityGroupEgress":
        permissions = request_shape(summary.get("ipPermissions"))
        if summary.get("groupId") and isinstance(permissions, list) and permissions:
            group = summary["groupId"]
            return (
                f"Put back the egress rules revoked from {group}",
                "AuthorizeSecurityGroupEgress",
                {
                    "GroupId": group,
                    "IpPermissions": permissions,
                },
            )
    if change.operation == "CreateNetworkAclEntry" and summary.get("ruleAction") == "deny":
        acl, number = summary.get("networkAclId"), summary.get("ruleNumber")
        if acl and isinstance(number, int):
            return (
                f"Delete the deny rule {number} added to {acl}",
                "DeleteNetworkAclEntry",
                {
                    "NetworkAclId": acl,
                    "RuleNumber": number,
                    "Egress": bool(summary.get("egress")),
                },
            )
    if change.operation == "DeleteRoute":
        route = _earlier_route(c, change)
        if route is not None:
            return f"Put back the route deleted from {route['RouteTableId']}", "CreateRoute", route
    return None


def _remedy(c: Conversation, relevant: Relevant) -> Remedy:
    """Undo the newest change to what blocks the path, as its request shows it; else say what to check."""
    for index, event in enumerate(c.changes.get("events", [])):  # the newest first
        change = ChangeEvent(index, event, instant(event.get("time")) or _EPOCH)
        if event.get("error_code") or not relevant(change):
            continue
        undone = _undo_params(c, change)
        if undone is not None:
            action, operation, params = undone
            return Remedy(
                action,
                f"The {change.operation} at {event.get('time')} blocked the path; this request puts back "
                f"what it took away, as the change history records it: {json.dumps(params, sort_keys=True)}.",
                command(c, "ec2", operation, params),
                "low",
            )
        break
    return Remedy(
        "Restore HTTPS egress from the function's subnets",
        "Allow TCP 443 out of the function's security groups (to 0.0.0.0/0 or the VPC endpoints it "
        "needs), and check the subnets' route to a NAT gateway and their network ACLs both ways.",
    )
