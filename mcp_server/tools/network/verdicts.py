"""Whether HTTPS can leave the function's VPC for each destination, and which rule, route or gateway
decides it. The verdicts follow AWS's documented semantics (IPv4):

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcp_server.contract.network import (
    EgressDestination,
    EgressVerdict,
    NatGateway,
    NetworkAcl,
    NetworkAclEntry,
    Route,
    SecurityGroup,
    Subnet,
    VpcEndpoint,
)
from mcp_server.tools.network.mapping import VpcView
from mcp_server.tools.network.rules import (
    EPHEMERAL_PORTS,
    HTTPS_PORT,
    Address,
    Finding,
    PortRange,
    PrefixLists,
    acl_decision,
    combine,
    entry_ports,
    network_of,
    security_group_finding,
    select_route,
)

SERVICES: tuple[EgressDestination, ...] = ("s3", "dynamodb")


@dataclass(frozen=True)
class Destination:
    name: EgressDestination
    label: str  # how reasons name it
    addresses: tuple[Address, ...]  # every address a call may go to
    unknown: str | None = None  # why its addresses could not be read


def service_list_name(region: str, service: str) -> str:
    """The name of the AWS-managed prefix list of a service's addresses in a region."""
    return f"com.amazonaws.{region}.{service}"


def destinations(region: str, names: Mapping[str, str] | None, resolved: PrefixLists) -> list[Destination]:
    """AWS public endpoints in general, and S3 and DynamoDB as their managed prefix lists' CIDR blocks
    (``names``: the managed prefix lists found, id -> name; None when they could not be read)."""
    found = {name: pl for pl, name in (names or {}).items()}
    destinations = [Destination("aws-apis", "AWS public endpoints (0.0.0.0/0)", (None,))]
    for service in SERVICES:
        name = service_list_name(region, service)
        pl = found.get(name)
        if names is None or (pl is not None and pl not in resolved):
            why = f"the address ranges of {service} (prefix list {pl or name}) could not be read"
            destinations.append(Destination(service, service, (), unknown=why))
        elif pl is None:  # no managed list in this region: a public endpoint like any other
            destinations.append(Destination(service, f"{service} (0.0.0.0/0)", (None,)))
        else:
            destinations.append(Destination(service, f"{service} ({pl})", tuple(resolved[pl])))
    return destinations


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


def egress_verdict(dest: Destination, groups: Sequence[SecurityGroup] | None, view: VpcView) -> EgressVerdict:
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


def egress_note(verdicts: Sequence[EgressVerdict], endpoints: Sequence[VpcEndpoint]) -> str:
    """One paragraph: each destination's verdict with its path or its first deciding reason."""
    parts = []
    for v in verdicts:
        state = {True: "allowed", False: "blocked", None: "unknown"}[v.allowed]
        detail = f"via {v.path}" if v.allowed else (v.reasons[0] if v.reasons else "")
        parts.append(f"{v.destination}: {state} ({detail})")
    interface = [e.vpc_endpoint_id for e in endpoints if e.endpoint_type != "Gateway"]
    extra = f" Interface endpoints {', '.join(interface)} are listed but not evaluated." if interface else ""
    return "HTTPS egress (tcp/443, IPv4) from every subnet of the function: " + "; ".join(parts) + "." + extra
