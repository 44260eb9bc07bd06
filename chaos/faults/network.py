"""Network faults on a VPC function: its calls to AWS then hang until the function times out.

``NETWORK_BLOCK[via]`` is the fault for each way of cutting HTTPS egress; none takes an ``apply`` parameter
(``via`` picks the Fault, so each way has its own saved state and restores on its own):

- ``sg`` = ``BLOCK_EGRESS`` (``network``): remove the egress rules that carry HTTPS from the function's
  security groups; restore authorizes exactly those rules again. A rule that also carries other traffic
  (all protocols, or a port range around 443) goes as a whole.
- ``nacl`` (``network-nacl``): in the network ACL of each of the function's subnets that allows outbound
  tcp/443, add an entry denying outbound tcp/443 to 0.0.0.0/0, numbered just below its lowest egress
  entry (so it decides first); restore deletes that entry (only if it is still the one added).
- ``route`` (``network-route``): delete the 0.0.0.0/0 route (to a NAT gateway, or another gateway) from
  the route table of each of the function's subnets (its association, else the VPC's main table: every
  subnet using that table loses it); restore creates it again with the same target.
"""

from __future__ import annotations

from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosRefused

HTTPS_PORT = 443


def carries_https(rule: dict[str, Any]) -> bool:
    """An egress rule (as EC2 describes it) covering tcp/443 towards some destination."""
    protocol = str(rule.get("IpProtocol"))
    covers_443 = protocol == "-1" or (
        protocol in ("tcp", "6") and rule.get("FromPort", 0) <= HTTPS_PORT <= rule.get("ToPort", 65535)
    )
    has_destination = (
        rule.get("IpRanges")
        or rule.get("Ipv6Ranges")
        or rule.get("PrefixListIds")
        or rule.get("UserIdGroupPairs")
    )
    return covers_443 and bool(has_destination)


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    group_ids = (target.configuration.get("VpcConfig") or {}).get("SecurityGroupIds") or []
    if not group_ids:
        raise ChaosRefused(f"nothing to block: {target.function_name} is not attached to a VPC")
    groups = chaos.read("ec2", "describe_security_groups", GroupIds=group_ids)["SecurityGroups"]
    removed = {
        group["GroupId"]: rules
        for group in groups
        if (rules := [rule for rule in group.get("IpPermissionsEgress", []) if carries_https(rule)])
    }
    if not removed:
        raise ChaosRefused(
            f"nothing to block: no security group of {target.function_name} allows HTTPS egress"
        )
    return {"groups": removed}


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for group_id, rules in prior["groups"].items():
        chaos.call(
            "ec2",
            "revoke_security_group_egress",
            GroupId=group_id,
            IpPermissions=rules,
            tolerate=("InvalidPermission.NotFound",),
        )


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    for group_id, rules in prior["groups"].items():
        chaos.call(
            "ec2",
            "authorize_security_group_egress",
            GroupId=group_id,
            IpPermissions=rules,
            tolerate=("InvalidPermission.Duplicate",),
        )


BLOCK_EGRESS = Fault("network", "HTTPS egress removed from the security groups", _capture, _apply, _revert)


NACL_DEFAULT_RULE = 32767
ALL_IPV4 = "0.0.0.0/0"
# A route's target as EC2 describes it, each also a parameter of CreateRoute (NetworkInterfaceId before
# InstanceId: an instance's route is recreated through its interface).
ROUTE_TARGETS = (
    "NatGatewayId",
    "GatewayId",
    "TransitGatewayId",
    "VpcPeeringConnectionId",
    "NetworkInterfaceId",
    "CarrierGatewayId",
    "LocalGatewayId",
)
_DENY_ENTRY: dict[str, Any] = {"Protocol": "6", "RuleAction": "deny", "Egress": True, "CidrBlock": ALL_IPV4}


def _subnets(chaos: Chaos, target: Target) -> list[dict[str, Any]]:
    subnet_ids = (target.configuration.get("VpcConfig") or {}).get("SubnetIds") or []
    if not subnet_ids:
        raise ChaosRefused(f"nothing to block: {target.function_name} is not attached to a VPC")
    subnets: list[dict[str, Any]] = chaos.read("ec2", "describe_subnets", SubnetIds=list(subnet_ids))[
        "Subnets"
    ]
    return subnets


def _associated(
    chaos: Chaos, method: str, key: str, subnet: dict[str, Any], default: dict[str, Any]
) -> dict[str, Any]:
    """The ACL or route table associated with the subnet, else the VPC's default one (``default`` filter)."""
    found = chaos.read(
        "ec2", method, Filters=[{"Name": "association.subnet-id", "Values": [subnet["SubnetId"]]}]
    )[key]
    if not found:
        filters = [{"Name": "vpc-id", "Values": [subnet["VpcId"]]}, default]
        found = chaos.read("ec2", method, Filters=filters)[key]
    item: dict[str, Any] = found[0]
    return item


def _entry_carries_https(entry: dict[str, Any]) -> bool:
    """An IPv4 ACL entry (as EC2 describes it) matching some outbound tcp/443."""
    protocol = str(entry.get("Protocol"))
    ports = entry.get("PortRange") or {}
    return bool(entry.get("CidrBlock")) and (
        protocol == "-1"
        or (protocol in ("6", "tcp") and ports.get("From", 0) <= HTTPS_PORT <= ports.get("To", 65535))
    )


def _capture_nacl(chaos: Chaos, target: Target) -> dict[str, Any]:
    acls = {}
    for subnet in _subnets(chaos, target):
        acl = _associated(
            chaos, "describe_network_acls", "NetworkAcls", subnet, {"Name": "default", "Values": ["true"]}
        )
        acls[acl["NetworkAclId"]] = acl
    rules: dict[str, int] = {}
    for acl_id, acl in acls.items():
        egress = [e for e in acl["Entries"] if e["Egress"] and int(e["RuleNumber"]) != NACL_DEFAULT_RULE]
        if not any(e["RuleAction"] == "allow" and _entry_carries_https(e) for e in egress):
            continue
        lowest = min(int(e["RuleNumber"]) for e in egress)
        if lowest <= 1:
            raise ChaosRefused(f"no free rule number below {lowest} in network ACL {acl_id} for a deny entry")
        rules[acl_id] = lowest - 1
    if not rules:
        raise ChaosRefused(
            f"nothing to block: no network ACL of {target.function_name}'s subnets allows outbound "
            f"tcp/{HTTPS_PORT}"
        )
    return {"rules": rules}


def _apply_nacl(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for acl_id, number in prior["rules"].items():
        chaos.call(
            "ec2",
            "create_network_acl_entry",
            NetworkAclId=acl_id,
            RuleNumber=number,
            **_DENY_ENTRY,
            PortRange={"From": HTTPS_PORT, "To": HTTPS_PORT},
            tolerate=("NetworkAclEntryAlreadyExists",),
        )


def _is_added_deny(entry: dict[str, Any]) -> bool:
    ports = entry.get("PortRange") or {}
    https = (ports.get("From"), ports.get("To")) == (HTTPS_PORT, HTTPS_PORT)
    return https and all(entry.get(key) == value for key, value in _DENY_ENTRY.items())


def _revert_nacl(chaos: Chaos, prior: dict[str, Any]) -> None:
    for acl_id, number in prior["rules"].items():
        (acl,) = chaos.read("ec2", "describe_network_acls", NetworkAclIds=[acl_id])["NetworkAcls"]
        entry = next((e for e in acl["Entries"] if e["Egress"] and int(e["RuleNumber"]) == number), None)
        if entry is None:
            chaos.say(f"  network ACL {acl_id} has no egress rule {number} (already removed)")
        elif not _is_added_deny(entry):
            chaos.say(
                f"  left alone: egress rule {number} of network ACL {acl_id} is no longer the deny added"
            )
        else:
            chaos.call("ec2", "delete_network_acl_entry", NetworkAclId=acl_id, RuleNumber=number, Egress=True)


def _capture_route(chaos: Chaos, target: Target) -> dict[str, Any]:
    tables = {}
    for subnet in _subnets(chaos, target):
        table = _associated(
            chaos,
            "describe_route_tables",
            "RouteTables",
            subnet,
            {"Name": "association.main", "Values": ["true"]},
        )
        tables[table["RouteTableId"]] = table
    routes: dict[str, dict[str, str]] = {}
    for table_id, table in tables.items():
        route = next((r for r in table["Routes"] if r.get("DestinationCidrBlock") == ALL_IPV4), None)
        key = next((k for k in ROUTE_TARGETS if route and route.get(k)), None)
        if route is None or key is None or route.get("State") == "blackhole" or route[key] == "local":
            continue
        routes[table_id] = {"DestinationCidrBlock": ALL_IPV4, key: route[key]}
    if not routes:
        raise ChaosRefused(
            f"nothing to block: no route table of {target.function_name}'s subnets has an active "
            f"{ALL_IPV4} route"
        )
    return {"routes": routes}


def _apply_route(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for table_id in prior["routes"]:
        chaos.call(
            "ec2",
            "delete_route",
            RouteTableId=table_id,
            DestinationCidrBlock=ALL_IPV4,
            tolerate=("InvalidRoute.NotFound",),
        )


def _revert_route(chaos: Chaos, prior: dict[str, Any]) -> None:
    for table_id, route in prior["routes"].items():
        chaos.call("ec2", "create_route", RouteTableId=table_id, **route, tolerate=("RouteAlreadyExists",))


BLOCK_NACL = Fault(
    "network-nacl",
    f"outbound tcp/{HTTPS_PORT} denied first in the subnets' network ACLs",
    _capture_nacl,
    _apply_nacl,
    _revert_nacl,
)
BLOCK_ROUTE = Fault(
    "network-route",
    f"the {ALL_IPV4} route removed from the subnets' route tables",
    _capture_route,
    _apply_route,
    _revert_route,
)
NETWORK_BLOCK = {"sg": BLOCK_EGRESS, "nacl": BLOCK_NACL, "route": BLOCK_ROUTE}
