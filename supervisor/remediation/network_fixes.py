"""The allowlisted fixes on the network path of a VPC function: egress rules put back on its security
group, a deny entry taken out of its subnet's network ACL, a route put back in its route table. Each one's
opposite is on the list only as its undo."""

from __future__ import annotations

import json
from typing import Any, Final

from supervisor.remediation.operation import Operation, Params, Reader, State
from supervisor.remediation.plan import ApiCall

# The targets a route may name, as CreateRoute takes them and DescribeRouteTables returns them.
ROUTE_TARGETS: Final = (
    "GatewayId",
    "NatGatewayId",
    "NetworkInterfaceId",
    "TransitGatewayId",
    "VpcPeeringConnectionId",
    "EgressOnlyInternetGatewayId",
)


def _canonical(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rules, key=lambda rule: json.dumps(rule, sort_keys=True))


# --- a security group's egress rules -------------------------------------------------------------------


def _group(params: Params, _state: State) -> tuple[str, ...]:
    return (str(params["GroupId"]),)


def _read_egress(client: Reader, params: Params) -> State:
    group = client("ec2").describe_security_groups(GroupIds=[params["GroupId"]])["SecurityGroups"][0]
    return {"IpPermissionsEgress": _canonical(group.get("IpPermissionsEgress") or [])}


def _revoked(params: Params, _state: State) -> ApiCall:
    return ApiCall(
        service="ec2",
        operation="RevokeSecurityGroupEgress",
        params={"GroupId": params["GroupId"], "IpPermissions": params["IpPermissions"]},
    )


def _authorized(params: Params, _state: State) -> ApiCall:
    return ApiCall(
        service="ec2",
        operation="AuthorizeSecurityGroupEgress",
        params={"GroupId": params["GroupId"], "IpPermissions": params["IpPermissions"]},
    )


def _ranges(rule: dict[str, Any]) -> set[tuple[Any, ...]]:
    ports = (str(rule.get("IpProtocol")), rule.get("FromPort"), rule.get("ToPort"))
    cidrs = [r.get("CidrIp") for r in rule.get("IpRanges") or []] + [
        r.get("CidrIpv6") for r in rule.get("Ipv6Ranges") or []
    ]
    return {(*ports, cidr) for cidr in cidrs}


def _egress_in_place(params: Params, state: State) -> bool:
    present = set().union(*(_ranges(rule) for rule in state["IpPermissionsEgress"]))
    wanted = [_ranges(rule) for rule in params["IpPermissions"] if isinstance(rule, dict)]
    return bool(wanted) and all(ranges <= present for ranges in wanted)


def _wide_or_present(params: Params, state: State) -> str | None:
    wanted = [rule for rule in params["IpPermissions"] if isinstance(rule, dict)]
    if any(str(rule.get("IpProtocol")) == "-1" for rule in wanted):
        return "the rule would allow every protocol and port: a fix puts back one port range"
    if any(rule.get("UserIdGroupPairs") or rule.get("PrefixListIds") for rule in wanted):
        return "a fix puts back address ranges, not groups or prefix lists"
    present = set().union(*(_ranges(rule) for rule in state["IpPermissionsEgress"]))
    if any(_ranges(rule) & present for rule in wanted):
        return f"{params['GroupId']} already allows part of it: its undo would take away what was there"
    return None


# --- a network ACL's entries ---------------------------------------------------------------------------


def _acl(params: Params, _state: State) -> tuple[str, ...]:
    return (str(params["NetworkAclId"]),)


def _read_entry(client: Reader, params: Params) -> State:
    acl = client("ec2").describe_network_acls(NetworkAclIds=[params["NetworkAclId"]])["NetworkAcls"][0]
    entry = next(
        (
            e
            for e in acl.get("Entries") or []
            if e.get("RuleNumber") == params["RuleNumber"] and bool(e.get("Egress")) == bool(params["Egress"])
        ),
        None,
    )
    if entry is None:
        return {"Entry": None}
    kept = ("Protocol", "RuleAction", "CidrBlock", "PortRange")
    return {"Entry": {key: entry[key] for key in kept if key in entry}}


def _entry_back(params: Params, state: State) -> ApiCall:
    where = {
        "NetworkAclId": params["NetworkAclId"],
        "RuleNumber": params["RuleNumber"],
        "Egress": params["Egress"],
    }
    if state["Entry"] is None:
        return ApiCall(service="ec2", operation="DeleteNetworkAclEntry", params=where)
    return ApiCall(service="ec2", operation="CreateNetworkAclEntry", params={**where, **state["Entry"]})


def _not_a_deny(params: Params, state: State) -> str | None:
    entry = state["Entry"]
    if entry is None:
        return f"{params['NetworkAclId']} has no rule {params['RuleNumber']}: nothing to delete"
    if entry.get("RuleAction") != "deny":
        return f"rule {params['RuleNumber']} allows: deleting it would block, not fix"
    return None


# --- a route table's routes ----------------------------------------------------------------------------


def _table(params: Params, _state: State) -> tuple[str, ...]:
    return (str(params["RouteTableId"]),)


def _read_route(client: Reader, params: Params) -> State:
    table = client("ec2").describe_route_tables(RouteTableIds=[params["RouteTableId"]])["RouteTables"][0]
    route = next(
        (
            r
            for r in table.get("Routes") or []
            if r.get("DestinationCidrBlock") == params["DestinationCidrBlock"]
        ),
        None,
    )
    if route is None:
        return {"Route": None}
    return {"Route": {key: route[key] for key in ROUTE_TARGETS if route.get(key)}}


def _route_back(params: Params, state: State) -> ApiCall:
    where = {"RouteTableId": params["RouteTableId"], "DestinationCidrBlock": params["DestinationCidrBlock"]}
    if state["Route"] is None:
        return ApiCall(service="ec2", operation="DeleteRoute", params=where)
    return ApiCall(service="ec2", operation="CreateRoute", params={**where, **state["Route"]})


def _route_present(params: Params, state: State) -> str | None:
    if state["Route"] is not None:
        return (
            f"{params['RouteTableId']} already routes {params['DestinationCidrBlock']}: nothing to put back"
        )
    if sum(1 for key in ROUTE_TARGETS if key in params) != 1:
        return "a route put back names exactly one target"
    return None


_ACL_ENTRY: Final = frozenset({"NetworkAclId", "RuleNumber", "Egress"})
_ROUTE: Final = frozenset({"RouteTableId", "DestinationCidrBlock"})

FIXES: Final[tuple[Operation, ...]] = (
    Operation(
        "ec2",
        "AuthorizeSecurityGroupEgress",
        "high",
        "put back the egress rules revoked from the function's security group",
        frozenset({"GroupId", "IpPermissions"}),
        ("ec2:DescribeSecurityGroups",),
        _read_egress,
        _revoked,
        _group,
        _wide_or_present,
        done=_egress_in_place,
    ),
    Operation(
        "ec2",
        "RevokeSecurityGroupEgress",
        "high",
        "revoke egress rules again (the undo of putting them back)",
        frozenset({"GroupId", "IpPermissions"}),
        ("ec2:DescribeSecurityGroups",),
        _read_egress,
        _authorized,
        _group,
        fix=False,
    ),
    Operation(
        "ec2",
        "DeleteNetworkAclEntry",
        "high",
        "take out a deny entry added to the subnet's network ACL",
        _ACL_ENTRY,
        ("ec2:DescribeNetworkAcls",),
        _read_entry,
        _entry_back,
        _acl,
        _not_a_deny,
        done=lambda _params, state: state["Entry"] is None,
    ),
    Operation(
        "ec2",
        "CreateNetworkAclEntry",
        "high",
        "put an entry back in a network ACL (the undo of deleting it)",
        _ACL_ENTRY | {"Protocol", "RuleAction", "CidrBlock", "PortRange"},
        ("ec2:DescribeNetworkAcls",),
        _read_entry,
        _entry_back,
        _acl,
        fix=False,
    ),
    Operation(
        "ec2",
        "CreateRoute",
        "high",
        "put back the route deleted from the subnet's route table",
        _ROUTE | set(ROUTE_TARGETS),
        ("ec2:DescribeRouteTables",),
        _read_route,
        _route_back,
        _table,
        _route_present,
        done=lambda params, state: state["Route"] == {k: params[k] for k in ROUTE_TARGETS if k in params},
    ),
    Operation(
        "ec2",
        "DeleteRoute",
        "high",
        "delete a route again (the undo of putting it back)",
        _ROUTE,
        ("ec2:DescribeRouteTables",),
        _read_route,
        _route_back,
        _table,
        fix=False,
    ),
)
