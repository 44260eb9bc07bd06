"""The pure rules behind ``get_network_state``'s verdicts: network ACL entries in rule-number order,
security-group egress rules, route selection, and how the elements' findings combine. No AWS call here:
:mod:`mcp_server.tools.network.verdicts` applies them to the VPC that :mod:`.reads` read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, ip_network
from typing import Literal

from mcp_server.contract.network import NetworkAclEntry, Route, SecurityGroup, SecurityGroupRule

HTTPS_PORT = 443
EPHEMERAL_PORTS = (1024, 65535)  # the return ports Lambda and NAT gateways use (AWS VPC user guide)
ALL_PORTS = (0, 65535)
# A destination address: a CIDR block, or None for a public AWS endpoint whose address is not known.
Address = IPv4Network | None
PortRange = tuple[int, int]
PrefixLists = Mapping[str, Sequence[IPv4Network]]  # resolved prefix lists: id -> CIDR blocks


@dataclass(frozen=True)
class Finding:
    """What one element (a security group, a route, a network ACL) does to the traffic: allows it (True),
    blocks it (False), or cannot be told (None)."""

    allowed: bool | None
    reason: str
    path: str | None = None


@dataclass(frozen=True)
class AclDecision:
    """The outcome of a network ACL for one direction: the entries that decided it (the blocking one, or
    those allowing every port; none when the '*' rule denies) and narrower deny entries passed over."""

    allowed: bool
    deciding: tuple[NetworkAclEntry, ...]
    caveats: tuple[NetworkAclEntry, ...] = ()


def _carries_tcp(protocol: str) -> bool:
    """Whether a rule with this protocol ('-1' = all, 'tcp' or '6') applies to TCP."""
    return protocol.lower() in {"-1", "tcp", "6"}


def network_of(cidr: str) -> IPv4Network | None:
    """An IPv4 CIDR block; None for an IPv6 one."""
    network = ip_network(cidr, strict=False)
    return network if isinstance(network, IPv4Network) else None


def cidr_networks(cidrs: Iterable[str]) -> list[IPv4Network]:
    return [n for n in map(network_of, cidrs) if n]


def coverage(networks: Iterable[IPv4Network], address: Address) -> Literal["all", "part", "none"]:
    """How much of ``address`` the networks cover. An unknown public address is covered only by
    0.0.0.0/0, partly by any other public range, not by private ranges."""
    networks = list(networks)
    if address is None:
        if any(n.prefixlen == 0 for n in networks):
            return "all"
        return "part" if any(not n.is_private for n in networks) else "none"
    if any(address.subnet_of(n) for n in networks):
        return "all"
    return "part" if any(n.overlaps(address) for n in networks) else "none"


def _overlap(ranges: Sequence[PortRange], low: int, high: int) -> bool:
    return any(start <= high and low <= end for start, end in ranges)


def _without(ranges: Sequence[PortRange], low: int, high: int) -> list[PortRange]:
    left: list[PortRange] = []
    for start, end in ranges:
        if start < low:
            left.append((start, min(end, low - 1)))
        if end > high:
            left.append((max(start, high + 1), end))
    return left


def entry_ports(entry: NetworkAclEntry) -> PortRange:
    if entry.protocol == "-1" or entry.port_from is None or entry.port_to is None:
        return ALL_PORTS
    return entry.port_from, entry.port_to


def acl_decision(
    entries: Sequence[NetworkAclEntry], *, egress: bool, address: Address, ports: PortRange
) -> AclDecision:
    """Evaluate a network ACL for TCP traffic to (egress) or from ``address`` on ``ports``: entries by
    ascending rule number, the first that matches a port decides it. Every port must be allowed; a deny
    covering any of the address denies (for an unknown address only a 0.0.0.0/0 deny does; narrower ones
    are returned as caveats); an allow decides only for an address it covers entirely."""
    remaining = [ports]
    allowing: list[NetworkAclEntry] = []
    caveats: list[NetworkAclEntry] = []
    for entry in sorted(entries, key=lambda e: e.rule_number):
        if entry.egress != egress or entry.cidr_block is None or not _carries_tcp(entry.protocol):
            continue
        low, high = entry_ports(entry)
        reach = coverage(cidr_networks([entry.cidr_block]), address)
        if reach == "none" or not _overlap(remaining, low, high):
            continue
        if entry.rule_action == "deny":
            if reach == "all" or address is not None:
                return AclDecision(False, (entry,), tuple(caveats))
            caveats.append(entry)
        elif reach == "all":
            allowing.append(entry)
            remaining = _without(remaining, low, high)
            if not remaining:
                return AclDecision(True, tuple(allowing), tuple(caveats))
    return AclDecision(False, (), tuple(caveats))


def _rule_carries_https(rule: SecurityGroupRule) -> bool:
    if rule.ip_protocol == "-1":
        return True
    low = 0 if rule.from_port is None else rule.from_port
    high = 65535 if rule.to_port is None else rule.to_port
    return _carries_tcp(rule.ip_protocol) and low <= HTTPS_PORT <= high


def security_group_finding(
    groups: Sequence[SecurityGroup], address: Address, prefix_lists: PrefixLists, label: str
) -> Finding:
    """Some egress rule of some group allows tcp/443 to all of ``address`` (through a CIDR or a prefix
    list); None when only an unresolved prefix list could."""
    unresolved: list[str] = []
    for group in groups:
        for rule in filter(_rule_carries_https, group.egress):
            targets = [(cidr, cidr_networks([cidr])) for cidr in rule.ipv4_ranges]
            for pl in rule.prefix_list_ids:
                if pl in prefix_lists:
                    targets.append((f"prefix list {pl}", list(prefix_lists[pl])))
                else:
                    unresolved.append(pl)
            for target, networks in targets:
                if coverage(networks, address) == "all":
                    return Finding(True, f"security group {group.group_id} allows tcp/443 to {target}")
    ids = ", ".join(g.group_id for g in groups) or "(none attached)"
    if unresolved:
        return Finding(
            None,
            f"security groups {ids}: whether prefix lists {', '.join(unresolved)} cover {label} is unknown",
        )
    return Finding(False, f"no egress rule of security groups {ids} allows tcp/443 to {label}")


def select_route(routes: Sequence[Route], address: Address, prefix_lists: PrefixLists) -> Route | str | None:
    """The route ``address`` takes (longest prefix; a static CIDR route before a prefix-list route of the
    same length); None without one; the id of a prefix list that could not be resolved if it might win."""
    ranked: list[tuple[int, int, Route]] = []
    for route in routes:
        if route.destination.startswith("pl-"):
            if route.destination not in prefix_lists:
                return route.destination
            networks, static = list(prefix_lists[route.destination]), 0
        else:
            networks, static = cidr_networks([route.destination]), 1
        if address is None:
            lengths = [n.prefixlen for n in networks if n.prefixlen == 0]
        else:
            lengths = [n.prefixlen for n in networks if address.subnet_of(n)]
        if lengths:
            ranked.append((max(lengths), static, route))
    return max(ranked, key=lambda r: r[:2])[2] if ranked else None


def combine(findings: Sequence[Finding]) -> tuple[bool | None, list[str]]:
    """Three-valued AND: blocked if any element blocks (those are the reasons), else unknown if any is
    unknown, else allowed (every element's reason)."""
    for value in (False, None):
        deciding = [f.reason for f in findings if f.allowed is value]
        if deciding:
            return value, list(dict.fromkeys(deciding))
    return True, list(dict.fromkeys(f.reason for f in findings))
