"""``get_network_state``: the function's VPC attachment, security groups, subnets, route tables, NAT gateways,
VPC endpoints, prefix lists and network ACLs, and whether they let it reach AWS over HTTPS.

The verdicts follow AWS's documented semantics (IPv4):

- security groups are stateful: some egress rule must allow tcp/443 toward the destination (a CIDR or a
  prefix list);
- a subnet's network ACL is stateless and checked both ways: outbound tcp/443 to the destination, inbound
  return traffic from it on the ephemeral ports 1024-65535 (which Lambda and NAT gateways use); entries are
  evaluated by ascending rule number, the first match decides, the '*' rule denies the rest;
- routes: longest prefix match, a static CIDR route before a prefix-list route of the same length; a NAT
  gateway must be available and public, with its own subnet routing to an internet gateway; an internet
  gateway alone does not serve Lambda (its network interfaces never get public IPs); a gateway endpoint
  reaches its service.

Public AWS endpoints have no known address: only 0.0.0.0/0-wide rules and routes are sure to cover them.
S3 and DynamoDB are their AWS-managed prefix lists' CIDR blocks. A function in several subnets is allowed
only if each subnet allows it. Not evaluated: interface endpoints (listed), endpoint policies, IPv6.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any, Literal

from mcp_server.contract.network import (
    EgressDestination,
    EgressVerdict,
    GetNetworkStateArgs,
    NatGateway,
    NetworkAcl,
    NetworkAclEntry,
    NetworkStateResponse,
    PrefixList,
    Route,
    RouteTable,
    SecurityGroup,
    SecurityGroupRule,
    Subnet,
    VpcEndpoint,
)
from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext
from mcp_server.tools.lambda_config import function_configuration
from mcp_server.tools.network_rules import (
    EPHEMERAL_PORTS,
    HTTPS_PORT,
    Address,
    Finding,
    PortRange,
    PrefixLists,
    acl_decision,
    cidr_networks,
    combine,
    entry_ports,
    network_of,
    security_group_finding,
    select_route,
)

SERVICES: tuple[EgressDestination, ...] = ("s3", "dynamodb")
MAX_PREFIX_LIST_CIDRS = 50
NOT_IN_VPC_NOTE = (
    "the function is not attached to a VPC: it has Lambda's default internet egress and no security "
    "groups, routes or network ACLs apply"
)


@dataclass(frozen=True)
class Destination:
    name: EgressDestination
    label: str  # how reasons name it
    addresses: tuple[Address, ...]  # every address a call may go to
    unknown: str | None = None  # why its addresses could not be read


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


# --------------------------------------------------------------------------- findings on the VPC


def _ports(ports: PortRange) -> str:
    return str(ports[0]) if ports[0] == ports[1] else f"{ports[0]}-{ports[1]}"


def _rule(entry: NetworkAclEntry) -> str:
    number = "* (32767)" if entry.rule_number == 32767 else str(entry.rule_number)
    return f"rule {number} ({entry.rule_action} {entry.cidr_block} ports {_ports(entry_ports(entry))})"


def _acl_finding(
    acl: NetworkAcl, where: str, *, egress: bool, address: Address, ports: PortRange, label: str
) -> Finding:
    """A finding naming the network ACL's deciding rules for one direction."""
    decision = acl_decision(acl.entries, egress=egress, address=address, ports=ports)
    direction = "outbound" if egress else "inbound"
    traffic = f"tcp {_ports(ports)} {'to' if egress else 'from'} {label}"
    subject = f"{where}: network ACL {acl.network_acl_id} {direction}"
    caveat = "".join(
        f"; {_rule(e)} may block some AWS endpoints" for e in decision.caveats if decision.allowed
    )
    if decision.allowed:
        rules = ", ".join(_rule(e) for e in decision.deciding)
        return Finding(True, f"{subject} {rules} allows {traffic}{caveat}")
    if decision.deciding:
        return Finding(False, f"{subject} {_rule(decision.deciding[0])} denies {traffic}")
    return Finding(False, f"{subject}: no rule allows {traffic}; the '*' rule denies it")


def _acl_findings(
    acl: NetworkAcl, where: str, address: Address, label: str, ports: PortRange
) -> list[Finding]:
    """Outbound tcp/443 to the address and inbound return traffic from it on ``ports``."""
    return [
        _acl_finding(acl, where, egress=True, address=address, ports=(HTTPS_PORT, HTTPS_PORT), label=label),
        _acl_finding(acl, where, egress=False, address=address, ports=ports, label=label),
    ]


def _nat_hop(
    nat: NatGateway, function_subnet: Subnet, address: Address, dest: Destination, view: VpcView
) -> Finding:
    """A NAT gateway forwards when it is available and public, its subnet routes the address to an
    internet gateway (or to the service's gateway endpoint), and its subnet's network ACL passes both
    legs both ways."""
    if nat.state != "available":
        return Finding(False, f"NAT gateway {nat.nat_gateway_id} is {nat.state}: it forwards nothing")
    if nat.connectivity_type == "private":
        return Finding(False, f"NAT gateway {nat.nat_gateway_id} is private: it does not reach the internet")
    where = f"NAT gateway {nat.nat_gateway_id}'s subnet {nat.subnet_id}"
    if view.tables is None or view.acls is None or nat.subnet_id is None:
        return Finding(None, f"{where}: its route table or network ACL could not be read")
    table = view.tables.get(nat.subnet_id)
    route = select_route(table.routes, address, view.prefix_lists) if table else None
    exit_ = _nat_exit(route, where, dest, view)
    acl = view.acls.get(nat.subnet_id)
    if exit_.allowed is not True or acl is None:
        return exit_
    legs = _nat_acl_findings(acl, nat.subnet_id, function_subnet, address, dest.label)
    blocked = next((leg for leg in legs if not leg.allowed), None)
    passes = f"; its network ACL {acl.network_acl_id} passes both legs both ways" if legs else ""
    return blocked or Finding(True, exit_.reason + passes)


def _nat_exit(route: Route | str | None, where: str, dest: Destination, view: VpcView) -> Finding:
    """Where the NAT gateway's subnet sends the traffic: an internet gateway, or the service's endpoint."""
    if isinstance(route, str):
        return Finding(None, f"{where}: prefix list {route} of its route table could not be resolved")
    if route is not None and route.state != "blackhole" and route.target.startswith("igw-"):
        return Finding(True, f"{where} routes {dest.label} to internet gateway {route.target}")
    if route is not None and route.state != "blackhole" and route.target.startswith("vpce-"):
        return _endpoint_finding(
            route.target, f"{where}: route {route.destination} -> {route.target}", dest, view
        )
    to = f"{route.target} ({route.state})" if route else "nothing"
    return Finding(
        False,
        f"{where} routes {dest.label} to {to}: a public NAT gateway needs a route to an internet gateway",
    )


def _nat_acl_findings(
    acl: NetworkAcl, nat_subnet_id: str, function_subnet: Subnet, address: Address, label: str
) -> list[Finding]:
    """The NAT subnet's network ACL: tcp/443 in from the function's subnet and out to the address, the
    return traffic in from the address and out to the function's subnet on ephemeral ports. Nothing to
    check when the NAT gateway shares the function's subnet (traffic within a subnet skips its ACL)."""
    if nat_subnet_id == function_subnet.subnet_id or function_subnet.cidr_block is None:
        return []
    inner = network_of(function_subnet.cidr_block)
    where, subnet = f"NAT gateway subnet {nat_subnet_id}", f"subnet {function_subnet.subnet_id}"
    https = (HTTPS_PORT, HTTPS_PORT)
    return [
        *_acl_findings(acl, where, address, label, EPHEMERAL_PORTS),
        _acl_finding(acl, where, egress=False, address=inner, ports=https, label=subnet),
        _acl_finding(acl, where, egress=True, address=inner, ports=EPHEMERAL_PORTS, label=subnet),
    ]


def _target_finding(
    route: Route, subnet: Subnet, address: Address, dest: Destination, view: VpcView
) -> Finding:
    """Where a route's target takes the traffic."""
    table = subnet.route_table.route_table_id if subnet.route_table else "?"
    where = f"subnet {subnet.subnet_id}: route table {table} sends {route.destination} to {route.target}"
    target = route.target
    if route.state == "blackhole":
        return Finding(False, f"{where} is a blackhole (its target no longer exists)")
    if target.startswith("nat-"):
        if view.nat_gateways is None:
            return Finding(None, f"{where}: the NAT gateway's state could not be read")
        nat = view.nat_gateways.get(target)
        if nat is None:
            return Finding(False, f"{where}: that NAT gateway does not exist")
        hop = _nat_hop(nat, subnet, address, dest, view)
        reason = f"{where} ({nat.state}); {hop.reason}" if hop.allowed else f"{where}: {hop.reason}"
        return Finding(hop.allowed, reason, f"nat-gateway {target}" if hop.allowed else None)
    if target.startswith("igw-"):
        return Finding(
            False,
            f"{where}: an internet gateway does not serve Lambda, whose network interfaces "
            "have no public IP; a VPC function needs a NAT gateway or a VPC endpoint",
        )
    if target.startswith("vpce-"):
        return _endpoint_finding(target, where, dest, view)
    if target == "local":
        return Finding(False, f"{where}: the traffic stays inside the VPC")
    return Finding(None, f"{where}: where that target leads is not visible to this tool")


def _endpoint_finding(endpoint_id: str, where: str, dest: Destination, view: VpcView) -> Finding:
    if view.endpoints is None:
        return Finding(None, f"{where}: the VPC endpoint could not be read")
    endpoint = view.endpoints.get(endpoint_id)
    if endpoint is None or endpoint.endpoint_type != "Gateway":
        return Finding(None, f"{where}: where that endpoint leads is not visible to this tool")
    if (endpoint.state or "available").lower() != "available":
        return Finding(False, f"{where}: gateway endpoint for {endpoint.service_name} is {endpoint.state}")
    if not endpoint.service_name.endswith(f".{dest.name}"):
        return Finding(False, f"{where}: a gateway endpoint for {endpoint.service_name}, not {dest.label}")
    return Finding(
        True, f"{where} (gateway endpoint for {endpoint.service_name})", f"gateway-endpoint {endpoint_id}"
    )


def _route_finding(subnet: Subnet, address: Address, dest: Destination, view: VpcView) -> Finding:
    """The subnet's route for the address and where its target leads."""
    if view.tables is None or subnet.route_table is None:
        return Finding(None, f"subnet {subnet.subnet_id}: its route table could not be read")
    table = subnet.route_table
    route = select_route(table.routes, address, view.prefix_lists)
    if isinstance(route, str):
        return Finding(
            None,
            f"subnet {subnet.subnet_id}: prefix list {route} in route table "
            f"{table.route_table_id} could not be resolved",
        )
    if route is None:
        return Finding(
            False,
            f"subnet {subnet.subnet_id}: no route: route table {table.route_table_id} has none for "
            f"{dest.label}",
        )
    return _target_finding(route, subnet, address, dest, view)


def _subnet_findings(subnet: Subnet, address: Address, dest: Destination, view: VpcView) -> list[Finding]:
    route = _route_finding(subnet, address, dest, view)
    if subnet.network_acl is None:
        acl = [Finding(None, f"subnet {subnet.subnet_id}: its network ACL could not be read")]
    else:
        acl = _acl_findings(
            subnet.network_acl, f"subnet {subnet.subnet_id}", address, dest.label, EPHEMERAL_PORTS
        )
    return [route, *acl]


def _verdict(dest: Destination, groups: Sequence[SecurityGroup] | None, view: VpcView) -> EgressVerdict:
    """One destination's verdict over every subnet and every address of the destination."""
    if dest.unknown:
        return EgressVerdict(destination=dest.name, allowed=None, reasons=[dest.unknown])
    findings = [] if view.subnets else [Finding(None, "the function's subnets could not be read")]
    for address in dest.addresses:
        findings.append(
            security_group_finding(groups, address, view.prefix_lists, dest.label)
            if groups is not None
            else Finding(None, "the security groups could not be read")
        )
        for subnet in view.subnets.values():
            findings += _subnet_findings(subnet, address, dest, view)
    allowed, reasons = combine(findings)
    paths = list(dict.fromkeys(f.path for f in findings if f.path))
    return EgressVerdict(
        destination=dest.name, allowed=allowed, path=", ".join(paths) or None, reasons=reasons
    )


# --------------------------------------------------------------------------- reading and shaping


def _paged(client: Any, operation: str, key: str, **params: Any) -> list[dict[str, Any]]:
    return [item for page in client.get_paginator(operation).paginate(**params) for item in page.get(key, [])]


def _in_vpc(vpc_id: str) -> list[dict[str, Any]]:
    return [{"Name": "vpc-id", "Values": [vpc_id]}]


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


def _security_group(group: dict[str, Any]) -> SecurityGroup:
    return SecurityGroup(
        group_id=group["GroupId"],
        group_name=group.get("GroupName", ""),
        vpc_id=group.get("VpcId"),
        ingress=[_sg_rule(p) for p in group.get("IpPermissions", [])],
        egress=[_sg_rule(p) for p in group.get("IpPermissionsEgress", [])],
    )


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


def _tables_by_subnet(tables: list[dict[str, Any]], subnet_ids: Iterable[str]) -> dict[str, RouteTable]:
    """Each subnet's route table: its explicit association, else its VPC's main table."""
    explicit = {a["SubnetId"]: t for t in tables for a in t.get("Associations", []) if a.get("SubnetId")}
    main = next((t for t in tables for a in t.get("Associations", []) if a.get("Main")), None)
    found = {s: _route_table(explicit[s], main=False) for s in subnet_ids if s in explicit}
    return found | {s: _route_table(main, main=True) for s in subnet_ids if s not in explicit and main}


def _acls_by_subnet(acls: list[dict[str, Any]], subnet_ids: Iterable[str]) -> dict[str, NetworkAcl]:
    """Each subnet's network ACL: its association, else its VPC's default network ACL."""
    associated = {
        a["SubnetId"]: acl for acl in acls for a in acl.get("Associations", []) if a.get("SubnetId")
    }
    default = next((acl for acl in acls if acl.get("IsDefault")), None)
    chosen = {s: associated.get(s, default) for s in subnet_ids}
    return {s: _network_acl(acl) for s, acl in chosen.items() if acl}


def _nat_gateway(nat: dict[str, Any]) -> NatGateway:
    return NatGateway(
        nat_gateway_id=nat["NatGatewayId"],
        state=nat.get("State", "unknown"),
        connectivity_type=nat.get("ConnectivityType"),
        subnet_id=nat.get("SubnetId"),
    )


def _endpoint(endpoint: dict[str, Any]) -> VpcEndpoint:
    return VpcEndpoint(
        vpc_endpoint_id=endpoint["VpcEndpointId"],
        endpoint_type=endpoint.get("VpcEndpointType", "Gateway"),
        service_name=endpoint.get("ServiceName", ""),
        state=endpoint.get("State"),
        route_table_ids=endpoint.get("RouteTableIds", []),
        subnet_ids=endpoint.get("SubnetIds", []),
    )


def _service_list_name(region: str, service: str) -> str:
    return f"com.amazonaws.{region}.{service}"


class _Reader:
    """The EC2 reads of one call, each a :class:`Read` so that a failure becomes a gap."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx, self.ec2 = ctx, ctx.clients.ec2

    def groups(self, ids: list[str]) -> Read:
        return Read(
            "ec2:DescribeSecurityGroups",
            f"security groups {', '.join(ids)}",
            # Without GroupIds, DescribeSecurityGroups would list every group of the account.
            lambda: self.ec2.describe_security_groups(GroupIds=ids)["SecurityGroups"] if ids else [],
            "which egress the security groups allow is unknown",
        )

    def subnets(self, ids: list[str]) -> Read:
        return Read(
            "ec2:DescribeSubnets",
            f"subnets {', '.join(ids)}",
            lambda: self.ec2.describe_subnets(SubnetIds=ids)["Subnets"],
            "the function's VPC, and so its routes and network ACLs, are unknown",
        )

    def service_lists(self, names: list[str]) -> Read:
        return Read(
            "ec2:DescribeManagedPrefixLists",
            f"prefix lists {', '.join(names)}",
            lambda: _paged(
                self.ec2,
                "describe_managed_prefix_lists",
                "PrefixLists",
                Filters=[{"Name": "prefix-list-name", "Values": names}],
            ),
            "which address ranges and routes belong to S3 and DynamoDB is unknown",
        )

    def entries(self, prefix_list_id: str) -> Read:
        return Read(
            "ec2:GetManagedPrefixListEntries",
            f"prefix list {prefix_list_id}",
            lambda: _paged(
                self.ec2, "get_managed_prefix_list_entries", "Entries", PrefixListId=prefix_list_id
            ),
            "which addresses the rules and routes naming this prefix list cover is unknown",
        )

    def vpc(self, vpc_id: str) -> list[Read]:
        """Route tables, network ACLs, NAT gateways and VPC endpoints of the VPC."""
        where, ec2 = f"VPC {vpc_id}", self.ec2
        return [
            Read(
                "ec2:DescribeRouteTables",
                f"route tables of {where}",
                lambda: _paged(ec2, "describe_route_tables", "RouteTables", Filters=_in_vpc(vpc_id)),
                "where the subnets route their traffic (NAT gateway, internet gateway, endpoint) is unknown",
            ),
            Read(
                "ec2:DescribeNetworkAcls",
                f"network ACLs of {where}",
                lambda: _paged(ec2, "describe_network_acls", "NetworkAcls", Filters=_in_vpc(vpc_id)),
                "what the subnets' network ACLs allow is unknown",
            ),
            Read(
                "ec2:DescribeNatGateways",
                f"NAT gateways of {where}",
                lambda: _paged(ec2, "describe_nat_gateways", "NatGateways", Filter=_in_vpc(vpc_id)),
                "whether the NAT gateways the routes name exist and forward traffic is unknown",
            ),
            Read(
                "ec2:DescribeVpcEndpoints",
                f"VPC endpoints of {where}",
                lambda: _paged(ec2, "describe_vpc_endpoints", "VpcEndpoints", Filters=_in_vpc(vpc_id)),
                "which services the VPC endpoints in the routes reach is unknown",
            ),
        ]


def _store(into: dict[str, list[IPv4Network]], ids: Sequence[str], results: Sequence[Any]) -> None:
    for pl, entries in zip(ids, results, strict=True):
        if entries is not None:
            into[pl] = cidr_networks(e["Cidr"] for e in entries)


def _resolve(reader: _Reader, ids: Iterable[str], into: dict[str, list[IPv4Network]]) -> None:
    """Read the entries of the prefix lists not resolved yet (concurrently) into ``into``."""
    wanted = [pl for pl in dict.fromkeys(ids) if pl not in into]
    _store(into, wanted, reader.ctx.reads.many([reader.entries(pl) for pl in wanted]))


def _read_vpc(
    reader: _Reader,
    raw_subnets: list[dict[str, Any]] | None,
    referenced: list[str],
    resolved: dict[str, list[IPv4Network]],
) -> VpcView:
    """Route tables, network ACLs, NAT gateways and endpoints of the function's VPC, read concurrently with
    the prefix lists ``referenced``; then the prefix lists the routes name."""
    vpc_reads = reader.vpc(raw_subnets[0]["VpcId"]) if raw_subnets else []
    wanted = list(dict.fromkeys(referenced))
    results = reader.ctx.reads.many([*vpc_reads, *(reader.entries(pl) for pl in wanted)])
    _store(resolved, wanted, results[len(vpc_reads) :])
    tables, acls, nats, endpoints = results[: len(vpc_reads)] or [None] * 4
    nat_gateways = None if nats is None else {n["NatGatewayId"]: _nat_gateway(n) for n in nats}
    function_subnets = [s["SubnetId"] for s in raw_subnets or []]
    relevant = function_subnets + [n.subnet_id for n in (nat_gateways or {}).values() if n.subnet_id]
    subnet_tables = None if tables is None else _tables_by_subnet(tables, relevant)
    route_lists = [r.destination for t in (subnet_tables or {}).values() for r in t.routes]
    _resolve(reader, [d for d in route_lists if d.startswith("pl-")], resolved)
    subnet_acls = None if acls is None else _acls_by_subnet(acls, relevant)
    subnets = {
        s["SubnetId"]: Subnet(
            subnet_id=s["SubnetId"],
            vpc_id=s["VpcId"],
            cidr_block=s.get("CidrBlock"),
            availability_zone=s.get("AvailabilityZone"),
            network_acl=(subnet_acls or {}).get(s["SubnetId"]),
            route_table=(subnet_tables or {}).get(s["SubnetId"]),
        )
        for s in raw_subnets or []
    }
    return VpcView(
        subnets=subnets,
        tables=subnet_tables,
        acls=subnet_acls,
        nat_gateways=nat_gateways,
        endpoints=None if endpoints is None else {e["VpcEndpointId"]: _endpoint(e) for e in endpoints},
        prefix_lists=resolved,
    )


def _destinations(
    region: str, lists: list[dict[str, Any]] | None, resolved: PrefixLists
) -> list[Destination]:
    """AWS public endpoints in general, and S3 and DynamoDB as their managed prefix lists' CIDR blocks."""
    found = {pl["PrefixListName"]: pl["PrefixListId"] for pl in lists or []}
    destinations = [Destination("aws-apis", "AWS public endpoints (0.0.0.0/0)", (None,))]
    for service in SERVICES:
        name = _service_list_name(region, service)
        pl = found.get(name)
        if lists is None or (pl is not None and pl not in resolved):
            why = f"the address ranges of {service} (prefix list {pl or name}) could not be read"
            destinations.append(Destination(service, service, (), unknown=why))
        elif pl is None:  # no managed list in this region: a public endpoint like any other
            destinations.append(Destination(service, f"{service} (0.0.0.0/0)", (None,)))
        else:
            destinations.append(Destination(service, f"{service} ({pl})", tuple(resolved[pl])))
    return destinations


def _prefix_list_models(resolved: PrefixLists, names: Mapping[str, str]) -> list[PrefixList]:
    return [
        PrefixList(
            prefix_list_id=pl,
            name=names.get(pl),
            cidrs=[str(n) for n in cidrs[:MAX_PREFIX_LIST_CIDRS]],
            cidr_count=len(cidrs),
        )
        for pl, cidrs in resolved.items()
    ]


def _reachable_endpoints(endpoints: Iterable[VpcEndpoint], subnets: Iterable[Subnet]) -> list[VpcEndpoint]:
    """Gateway endpoints in one of the subnets' route tables; every other endpoint of the VPC."""
    tables = {s.route_table.route_table_id for s in subnets if s.route_table}
    return [e for e in endpoints if e.endpoint_type != "Gateway" or tables & set(e.route_table_ids)]


def _note(verdicts: Sequence[EgressVerdict], endpoints: Sequence[VpcEndpoint]) -> str:
    """One paragraph: each destination's verdict with its path or its first deciding reason."""
    parts = []
    for v in verdicts:
        state = {True: "allowed", False: "blocked", None: "unknown"}[v.allowed]
        detail = f"via {v.path}" if v.allowed else (v.reasons[0] if v.reasons else "")
        parts.append(f"{v.destination}: {state} ({detail})")
    interface = [e.vpc_endpoint_id for e in endpoints if e.endpoint_type != "Gateway"]
    extra = f" Interface endpoints {', '.join(interface)} are listed but not evaluated." if interface else ""
    return "HTTPS egress (tcp/443, IPv4) from every subnet of the function: " + "; ".join(parts) + "." + extra


def network_state(ctx: ToolContext, args: GetNetworkStateArgs) -> NetworkStateResponse:
    """The function's network attachment and, per destination, whether HTTPS egress works and why."""
    config = function_configuration(ctx)
    vpc_config = config.get("VpcConfig") or {}
    subnet_ids: list[str] = vpc_config.get("SubnetIds") or []
    if not subnet_ids:
        return NetworkStateResponse(
            function_name=config["FunctionName"], in_vpc=False, note=NOT_IN_VPC_NOTE, gaps=ctx.reads.gaps
        )
    reader, region = _Reader(ctx), ctx.target.region
    raw_groups, raw_subnets, service_lists = ctx.reads.many(
        [
            reader.groups(vpc_config.get("SecurityGroupIds") or []),
            reader.subnets(subnet_ids),
            reader.service_lists([_service_list_name(region, s) for s in SERVICES]),
        ]
    )
    groups = None if raw_groups is None else [_security_group(g) for g in raw_groups]
    names = {pl["PrefixListId"]: pl["PrefixListName"] for pl in service_lists or []}
    referenced = [*names, *(pl for g in groups or [] for rule in g.egress for pl in rule.prefix_list_ids)]
    resolved: dict[str, list[IPv4Network]] = {}
    view = _read_vpc(reader, raw_subnets, referenced, resolved)
    verdicts = [_verdict(d, groups, view) for d in _destinations(region, service_lists, resolved)]
    targets = {r.target for s in view.subnets.values() if s.route_table for r in s.route_table.routes}
    endpoints = _reachable_endpoints((view.endpoints or {}).values(), view.subnets.values())
    return NetworkStateResponse(
        function_name=config["FunctionName"],
        in_vpc=True,
        # EC2 names the VPC authoritatively (the sandbox emulator puts a placeholder in VpcConfig.VpcId).
        vpc_id=raw_subnets[0]["VpcId"] if raw_subnets else vpc_config.get("VpcId"),
        security_groups=groups or [],
        subnets=list(view.subnets.values()),
        nat_gateways=[n for n in (view.nat_gateways or {}).values() if n.nat_gateway_id in targets],
        vpc_endpoints=endpoints,
        prefix_lists=_prefix_list_models(resolved, names),
        egress=verdicts,
        https_egress_allowed=verdicts[0].allowed,
        note=_note(verdicts, endpoints),
        gaps=ctx.reads.gaps,
    )
