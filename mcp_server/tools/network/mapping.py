"""EC2's describe answers as the contract's network models, and the function's VPC assembled from them
(:class:`VpcView`, what the verdicts judge). No AWS call here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcp_server.contract.network import (
    NatGateway,
    NetworkAcl,
    NetworkAclEntry,
    PrefixList,
    Route,
    RouteTable,
    SecurityGroup,
    SecurityGroupRule,
    Subnet,
    VpcEndpoint,
)
from mcp_server.tools.network.rules import PrefixLists

MAX_PREFIX_LIST_CIDRS = 50

_ROUTE_TARGETS = (
    "GatewayId",
    "NatGatewayId",
    "TransitGatewayId",
    "VpcPeeringConnectionId",
    "NetworkInterfaceId",
    "InstanceId",
    "EgressOnlyInternetGatewayId",
    "LocalGatewayId",
    "CarrierGatewayId",
    "CoreNetworkArn",
)


@dataclass(frozen=True)
class VpcView:
    """What was read of the VPC; None where the read failed."""

    subnets: Mapping[str, Subnet]
    # subnet id -> its route table and network ACL, for the function's subnets and its NAT gateways' ones
    tables: Mapping[str, RouteTable] | None
    acls: Mapping[str, NetworkAcl] | None
    nat_gateways: Mapping[str, NatGateway] | None
    endpoints: Mapping[str, VpcEndpoint] | None
    prefix_lists: PrefixLists


def _sg_rule(permission: dict[str, Any]) -> SecurityGroupRule:
    return SecurityGroupRule(
        ip_protocol=str(permission["IpProtocol"]),
        from_port=permission.get("FromPort"),
        to_port=permission.get("ToPort"),
        ipv4_ranges=[r["CidrIp"] for r in permission.get("IpRanges", [])],
        ipv6_ranges=[r["CidrIpv6"] for r in permission.get("Ipv6Ranges", [])],
        prefix_list_ids=[p["PrefixListId"] for p in permission.get("PrefixListIds", [])],
        referenced_group_ids=[p["GroupId"] for p in permission.get("UserIdGroupPairs", []) if "GroupId" in p],
    )


def security_group(group: dict[str, Any]) -> SecurityGroup:
    return SecurityGroup(
        group_id=group["GroupId"],
        group_name=group.get("GroupName", ""),
        vpc_id=group.get("VpcId"),
        ingress=[_sg_rule(p) for p in group.get("IpPermissions", [])],
        egress=[_sg_rule(p) for p in group.get("IpPermissionsEgress", [])],
    )


def prefix_list_names(lists: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Managed prefix lists: id -> name."""
    return {pl["PrefixListId"]: pl["PrefixListName"] for pl in lists}


def _network_acl(acl: dict[str, Any]) -> NetworkAcl:
    entries = [
        NetworkAclEntry(
            rule_number=entry["RuleNumber"],
            protocol=str(entry["Protocol"]),
            rule_action=entry["RuleAction"].lower(),
            egress=entry["Egress"],
            cidr_block=entry.get("CidrBlock"),
            ipv6_cidr_block=entry.get("Ipv6CidrBlock"),
            port_from=entry.get("PortRange", {}).get("From"),
            port_to=entry.get("PortRange", {}).get("To"),
        )
        for entry in acl.get("Entries", [])
    ]
    return NetworkAcl(
        network_acl_id=acl["NetworkAclId"],
        is_default=bool(acl.get("IsDefault")),
        entries=sorted(entries, key=lambda e: (not e.egress, e.rule_number)),
    )


def _route(route: dict[str, Any]) -> Route:
    destination = next(
        route[key]
        for key in ("DestinationCidrBlock", "DestinationPrefixListId", "DestinationIpv6CidrBlock")
        if key in route
    )
    target = next((route[key] for key in _ROUTE_TARGETS if route.get(key)), "unknown")
    return Route(destination=destination, target=target, state=route.get("State"))


def _route_table(table: dict[str, Any], main: bool) -> RouteTable:
    routes = [_route(r) for r in table.get("Routes", [])]
    default = next((r.target for r in routes if r.destination == "0.0.0.0/0"), None)
    kind: Literal["nat-gateway", "internet-gateway", "other", "none"] = (
        "none"
        if default is None
        else "nat-gateway"
        if default.startswith("nat-")
        else "internet-gateway"
        if default.startswith("igw-")
        else "other"
    )
    return RouteTable(
        route_table_id=table["RouteTableId"],
        main=main,
        default_route=kind,
        default_route_target=default,
        routes=routes,
    )


def tables_by_subnet(tables: list[dict[str, Any]], subnet_ids: Iterable[str]) -> dict[str, RouteTable]:
    """Each subnet's route table: its explicit association, else its VPC's main table."""
    explicit = {a["SubnetId"]: t for t in tables for a in t.get("Associations", []) if a.get("SubnetId")}
    main = next((t for t in tables for a in t.get("Associations", []) if a.get("Main")), None)
    found = {s: _route_table(explicit[s], main=False) for s in subnet_ids if s in explicit}
    return found | {s: _route_table(main, main=True) for s in subnet_ids if s not in explicit and main}


def acls_by_subnet(acls: list[dict[str, Any]], subnet_ids: Iterable[str]) -> dict[str, NetworkAcl]:
    """Each subnet's network ACL: its association, else its VPC's default network ACL."""
    associated = {
        a["SubnetId"]: acl for acl in acls for a in acl.get("Associations", []) if a.get("SubnetId")
    }
    default = next((acl for acl in acls if acl.get("IsDefault")), None)
    chosen = {s: associated.get(s, default) for s in subnet_ids}
    return {s: _network_acl(acl) for s, acl in chosen.items() if acl}


def nat_gateways_by_id(nats: Iterable[dict[str, Any]]) -> dict[str, NatGateway]:
    return {
        nat["NatGatewayId"]: NatGateway(
            nat_gateway_id=nat["NatGatewayId"],
            state=nat.get("State", "unknown"),
            connectivity_type=nat.get("ConnectivityType"),
            subnet_id=nat.get("SubnetId"),
        )
        for nat in nats
    }


def endpoints_by_id(endpoints: Iterable[dict[str, Any]]) -> dict[str, VpcEndpoint]:
    return {
        endpoint["VpcEndpointId"]: VpcEndpoint(
            vpc_endpoint_id=endpoint["VpcEndpointId"],
            endpoint_type=endpoint.get("VpcEndpointType", "Gateway"),
            service_name=endpoint.get("ServiceName", ""),
            state=endpoint.get("State"),
            route_table_ids=endpoint.get("RouteTableIds", []),
            subnet_ids=endpoint.get("SubnetIds", []),
        )
        for endpoint in endpoints
    }


def subnets_by_id(
    subnets: Iterable[dict[str, Any]],
    tables: Mapping[str, RouteTable] | None,
    acls: Mapping[str, NetworkAcl] | None,
) -> dict[str, Subnet]:
    """The function's subnets, each with its route table and network ACL where they were read."""
    return {
        s["SubnetId"]: Subnet(
            subnet_id=s["SubnetId"],
            vpc_id=s["VpcId"],
            cidr_block=s.get("CidrBlock"),
            availability_zone=s.get("AvailabilityZone"),
            network_acl=(acls or {}).get(s["SubnetId"]),
            route_table=(tables or {}).get(s["SubnetId"]),
        )
        for s in subnets
    }


def prefix_list_models(resolved: PrefixLists, names: Mapping[str, str]) -> list[PrefixList]:
    return [
        PrefixList(
            prefix_list_id=pl,
            name=names.get(pl),
            cidrs=[str(n) for n in cidrs[:MAX_PREFIX_LIST_CIDRS]],
            cidr_count=len(cidrs),
        )
        for pl, cidrs in resolved.items()
    ]


def reachable_endpoints(endpoints: Iterable[VpcEndpoint], subnets: Iterable[Subnet]) -> list[VpcEndpoint]:
    """Gateway endpoints in one of the subnets' route tables; every other endpoint of the VPC."""
    tables = {s.route_table.route_table_id for s in subnets if s.route_table}
    return [e for e in endpoints if e.endpoint_type != "Gateway" or tables & set(e.route_table_ids)]
