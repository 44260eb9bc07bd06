"""The sandbox's own emulation of VPC networking for a Lambda function's HTTPS calls to AWS endpoints.

docs/architecture.md, "Principles", 1: the sandbox decides what the network carries by itself. This module
reads the VPC through an EC2 client and applies the rules below; it shares no code or predicate with
the diagnosis.

One call is tcp/443 from the function's network interface in one of its subnets to the service:

- Without subnets in its VpcConfig a function uses Lambda's own network, which reaches every endpoint.
- Addresses. The function's interface has its subnet's first assignable address (base + 4; AWS keeps
  base .. base + 3). A service's public endpoint has a fixed IPv4 address (``endpoint_address``): s3
  and dynamodb inside the ranges of the AWS-managed prefix lists ``com.amazonaws.<region>.s3`` and
  ``.dynamodb`` (moto 5.2.5 serves them, with the same ranges in every region); any other service in
  its region's public range.
- Interface endpoint. If the VPC has an available Interface endpoint for the service with private DNS,
  the call goes to it instead: to its interface in the function's subnet if it has one, else in its
  first subnet, at base + 5 (moto gives these interfaces addresses outside their subnet, so they are
  not read).
- Security groups are stateful. Some egress rule of some function group must have protocol -1 or tcp
  with ports covering 443, and a destination that holds the address: an IPv4 CIDR, a prefix list, or a
  group attached to the destination's interface (only an interface endpoint has one). An interface
  endpoint's groups must also allow ingress tcp/443 from the function's address or one of its groups.
- Network ACLs are stateless: each subnet's ACL (its association, else the VPC's default ACL) is read
  in ascending rule number, the first entry matching a packet decides, and the ``*`` rule (32767)
  denies the rest. Protocol -1 matches everything, 6 matches tcp in its inclusive port range. The
  function's subnet must allow outbound tcp/443 to the destination and inbound return traffic on every
  ephemeral port Lambda may use (tcp/1024-65535) from it; an interface endpoint in another subnet needs
  the mirror image on its own subnet's ACL. Traffic within one subnet crosses no ACL.
- Routes: the subnet's route table (its association, else the VPC's main table), longest prefix first;
  a prefix-list route matches with the length of its entry holding the address, and a CIDR route wins
  a tie (AWS route priority). Targets: ``local`` stays in the VPC; an available gateway endpoint carries
  its service; an available public NAT gateway reaches the endpoint if its own subnet's route for the
  address goes to an internet gateway attached to the VPC; an internet gateway alone does not, since
  Lambda's interfaces get no public IP; blackholes and other targets reach no AWS endpoint.

Not modelled: IPv6, endpoint and resource policies, the VPC's DNS attributes, the ACL of the NAT
gateway's subnet.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from typing import Any

HTTPS_PORT = 443
EPHEMERAL_PORTS = (1024, 65535)
DEFAULT_ACL_RULE = 32767

# What the runtime's identity must be allowed to call for a verdict.
REQUIRED_IAM_ACTIONS = (
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeNetworkAcls",
    "ec2:DescribeRouteTables",
    "ec2:DescribeNatGateways",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeVpcEndpoints",
    "ec2:GetManagedPrefixListEntries",
)

# In moto's AWS-managed prefix lists com.amazonaws.<region>.s3 / .dynamodb (52.216.0.0/15, 52.94.0.0/22).
_PREFIX_LISTED_ADDRESSES = {"s3": "52.216.8.10", "dynamodb": "52.94.0.10"}
# Other services: an address in a public EC2 range of the region.
_REGION_BLOCKS = {"ca-central-1": "35.182.0.0/15", "us-east-1": "52.0.0.0/15", "eu-west-1": "34.240.0.0/13"}
_OTHER_REGIONS_BLOCK = "3.0.0.0/8"
_TCP = frozenset({"6", "tcp"})
_ROUTE_TARGETS = (
    "GatewayId",
    "NatGatewayId",
    "TransitGatewayId",
    "VpcPeeringConnectionId",
    "NetworkInterfaceId",
    "InstanceId",
    "EgressOnlyInternetGatewayId",
    "CarrierGatewayId",
    "LocalGatewayId",
)

Ports = tuple[int, int]
PrefixLists = Callable[[str], Sequence[IPv4Network]]


@dataclass(frozen=True)
class Verdict:
    reachable: bool
    reason: str  # one sentence naming the rule, route or resource that decided


@dataclass(frozen=True)
class _Destination:
    address: IPv4Address
    label: str
    groups: frozenset[str] = frozenset()  # groups of the interface behind the address
    subnet_id: str | None = None  # set for an interface endpoint
    endpoint_id: str | None = None


def endpoint_address(service: str, region: str) -> IPv4Address:
    """The public IPv4 address the sandbox gives ``service``'s endpoint in ``region``."""
    if service in _PREFIX_LISTED_ADDRESSES:
        return IPv4Address(_PREFIX_LISTED_ADDRESSES[service])
    block = IPv4Network(_REGION_BLOCKS.get(region, _OTHER_REGIONS_BLOCK))
    return block[1 + zlib.crc32(f"{service}.{region}".encode()) % (block.num_addresses - 2)]


def acl_decision(
    entries: Sequence[Mapping[str, Any]], *, egress: bool, peer: IPv4Address, ports: Ports
) -> tuple[bool, int]:
    """Whether a network ACL passes tcp on every port in ``ports`` (inclusive) to ``peer`` (egress) or
    from it, and the number of the rule that decided (``DEFAULT_ACL_RULE`` when no entry matched)."""
    undecided = [ports]
    for entry in sorted(entries, key=lambda e: int(e["RuleNumber"])):
        covered = _acl_entry_ports(entry)
        if entry["Egress"] != egress or covered is None or not _holds(entry.get("CidrBlock"), peer):
            continue
        matched, undecided = _subtract(undecided, covered)
        if matched and entry["RuleAction"] == "deny":
            return False, int(entry["RuleNumber"])
        if matched and not undecided:
            return True, int(entry["RuleNumber"])
    return False, DEFAULT_ACL_RULE


def permission_allows(
    permission: Mapping[str, Any],
    *,
    peer: IPv4Address,
    peer_groups: frozenset[str],
    prefix_lists: PrefixLists,
    port: int = HTTPS_PORT,
) -> bool:
    """Whether one security-group permission (ingress or egress, as EC2 describes it) covers tcp/``port``
    with ``peer``: an address, and the groups attached to the interface holding it."""
    protocol = str(permission.get("IpProtocol"))
    if protocol != "-1" and not (
        protocol in _TCP and permission.get("FromPort", 0) <= port <= permission.get("ToPort", 65535)
    ):
        return False
    return (
        any(_holds(item.get("CidrIp"), peer) for item in permission.get("IpRanges", []))
        or any(
            any(peer in cidr for cidr in prefix_lists(item["PrefixListId"]))
            for item in permission.get("PrefixListIds", [])
        )
        or any(pair.get("GroupId") in peer_groups for pair in permission.get("UserIdGroupPairs", []))
    )


def best_route(
    routes: Sequence[Mapping[str, Any]], destination: IPv4Address, prefix_lists: PrefixLists
) -> Mapping[str, Any] | None:
    """The route that carries ``destination``: longest prefix first, a CIDR route before a prefix-list
    route of the same length; a prefix-list route matches with its entry that holds the address."""
    best: Mapping[str, Any] | None = None
    best_rank = (-1, False)
    for route in routes:
        if "DestinationCidrBlock" in route:
            cidrs: Sequence[IPv4Network] = [IPv4Network(route["DestinationCidrBlock"], strict=False)]
        elif "DestinationPrefixListId" in route:
            cidrs = prefix_lists(route["DestinationPrefixListId"])
        else:
            continue
        lengths = [cidr.prefixlen for cidr in cidrs if destination in cidr]
        rank = (max(lengths, default=-1), "DestinationCidrBlock" in route)
        if lengths and rank > best_rank:
            best, best_rank = route, rank
    return best


class VpcNetwork:
    """Decides, from the VPC's state read through ``ec2``, whether a function's call reaches a service."""

    def __init__(self, ec2: Any, region: str) -> None:
        self._ec2 = ec2
        self._region = region

    def verdict(self, vpc_config: Mapping[str, Any], service: str, subnet_index: int = 0) -> Verdict:
        """``vpc_config`` as Lambda returns it; ``service`` as in its endpoint name (``s3``, ``logs``)."""
        subnet_ids = vpc_config.get("SubnetIds") or []
        if not subnet_ids:
            return Verdict(True, f"the function is not in a VPC: Lambda's own network carries {service}")
        subnet = self._subnet(subnet_ids[subnet_index])
        source = _interface_address(subnet, 4)
        group_ids = list(vpc_config.get("SecurityGroupIds") or [])
        endpoints = {
            e["VpcEndpointId"]: e
            for e in self._ec2.describe_vpc_endpoints(Filters=[_filter("vpc-id", subnet["VpcId"])])[
                "VpcEndpoints"
            ]
        }
        destination = self._destination(service, subnet, endpoints.values())

        egress = [p for g in self._groups(group_ids) for p in g.get("IpPermissionsEgress", [])]
        if not any(self._allows(p, destination.address, destination.groups) for p in egress):
            return Verdict(
                False,
                f"{_groups_phrase(group_ids)} no egress rule for tcp/{HTTPS_PORT} to {destination.label}",
            )
        blocked = self._acl_block(subnet, source, destination)
        if blocked:
            return blocked
        table = self._route_table(subnet["SubnetId"], subnet["VpcId"])
        route = best_route(table["Routes"], destination.address, self._prefix_list)
        if route is None:
            return Verdict(False, f"route table {table['RouteTableId']} has no route to {destination.label}")
        routed = self._follow(route, table["RouteTableId"], destination, service, subnet["VpcId"], endpoints)
        if not routed.reachable or destination.endpoint_id is None:
            return routed
        ingress = [p for g in self._groups(sorted(destination.groups)) for p in g.get("IpPermissions", [])]
        if not any(self._allows(p, source, frozenset(group_ids)) for p in ingress):
            return Verdict(
                False,
                f"no security group of interface endpoint {destination.endpoint_id} allows ingress "
                f"tcp/{HTTPS_PORT} from {source} or {', '.join(group_ids)}",
            )
        return Verdict(True, f"interface endpoint {destination.endpoint_id} carries {service} inside the VPC")

    def _destination(
        self, service: str, subnet: Mapping[str, Any], endpoints: Iterable[Mapping[str, Any]]
    ) -> _Destination:
        name = f"com.amazonaws.{self._region}.{service}"
        for endpoint in endpoints:
            if (
                endpoint["ServiceName"] == name
                and endpoint["VpcEndpointType"].lower() == "interface"
                and endpoint["State"].lower() == "available"
                and endpoint.get("PrivateDnsEnabled")
                and endpoint.get("SubnetIds")
            ):
                home = (
                    subnet
                    if subnet["SubnetId"] in endpoint["SubnetIds"]
                    else self._subnet(endpoint["SubnetIds"][0])
                )
                address = _interface_address(home, 5)
                return _Destination(
                    address,
                    f"interface endpoint {endpoint['VpcEndpointId']} at {address}",
                    frozenset(g["GroupId"] for g in endpoint.get("Groups", [])),
                    home["SubnetId"],
                    endpoint["VpcEndpointId"],
                )
        address = endpoint_address(service, self._region)
        return _Destination(address, f"{service} at {address}")

    def _acl_block(
        self, subnet: Mapping[str, Any], source: IPv4Address, destination: _Destination
    ) -> Verdict | None:
        """The first ACL crossing that drops the call or its replies, as a verdict; None if all pass."""
        own, other = subnet["SubnetId"], destination.subnet_id
        if other == own:
            return None
        https, ephemeral = (HTTPS_PORT, HTTPS_PORT), EPHEMERAL_PORTS
        crossings = [(own, True, destination.address, https), (own, False, destination.address, ephemeral)]
        if other is not None:
            crossings += [(other, False, source, https), (other, True, source, ephemeral)]
        for subnet_id, egress, peer, ports in crossings:
            acl = self._network_acl(subnet_id, subnet["VpcId"])
            allowed, rule = acl_decision(acl["Entries"], egress=egress, peer=peer, ports=ports)
            if not allowed:
                return Verdict(False, _acl_reason(acl["NetworkAclId"], rule, egress, peer, ports))
        return None

    def _follow(
        self,
        route: Mapping[str, Any],
        table_id: str,
        destination: _Destination,
        service: str,
        vpc_id: str,
        endpoints: Mapping[str, Mapping[str, Any]],
    ) -> Verdict:
        where = (
            f"route {route.get('DestinationCidrBlock') or route.get('DestinationPrefixListId')} in {table_id}"
        )
        target = next((str(route[key]) for key in _ROUTE_TARGETS if route.get(key)), "nothing")
        if route.get("State") == "blackhole":
            return Verdict(False, f"{where} is a blackhole (its target {target} is gone)")
        if target == "local":
            return Verdict(True, f"{where} is local: {destination.label} is inside the VPC")
        if target.startswith("vpce-"):
            endpoint = endpoints.get(target)
            if endpoint is None or endpoint["State"].lower() != "available":
                return Verdict(False, f"{where} goes to VPC endpoint {target}, which is not available")
            return Verdict(True, f"gateway endpoint {target} carries {service}")
        if target.startswith("igw-"):
            return Verdict(
                False,
                f"{where} goes to internet gateway {target}, "
                "but Lambda's network interfaces have no public IP",
            )
        if target.startswith("nat-"):
            return self._through_nat(target, where, destination, vpc_id)
        return Verdict(False, f"{where} goes to {target}, which leads to no AWS service endpoint")

    def _through_nat(self, nat_id: str, where: str, destination: _Destination, vpc_id: str) -> Verdict:
        nats = self._ec2.describe_nat_gateways(Filters=[_filter("nat-gateway-id", nat_id)])["NatGateways"]
        state = nats[0]["State"] if nats else "missing"
        if state != "available":
            return Verdict(False, f"{where} goes to NAT gateway {nat_id}, which is {state}")
        if nats[0].get("ConnectivityType") == "private":
            return Verdict(False, f"{where} goes to NAT gateway {nat_id}, which is private (no internet)")
        table = self._route_table(nats[0]["SubnetId"], vpc_id)
        onward = best_route(table["Routes"], destination.address, self._prefix_list)
        gateway = str(onward.get("GatewayId", "")) if onward and onward.get("State") != "blackhole" else ""
        attached = (
            gateway.startswith("igw-")
            and self._ec2.describe_internet_gateways(
                Filters=[_filter("internet-gateway-id", gateway), _filter("attachment.vpc-id", vpc_id)]
            )["InternetGateways"]
        )
        if not attached:
            return Verdict(
                False,
                f"NAT gateway {nat_id} is in subnet {nats[0]['SubnetId']}, whose route table "
                f"{table['RouteTableId']} sends {destination.address} to no internet gateway of the VPC",
            )
        return Verdict(
            True, f"{where} goes to NAT gateway {nat_id}, which reaches {destination.label} via {gateway}"
        )

    def _allows(self, permission: Mapping[str, Any], peer: IPv4Address, peer_groups: frozenset[str]) -> bool:
        return permission_allows(
            permission, peer=peer, peer_groups=peer_groups, prefix_lists=self._prefix_list
        )

    def _subnet(self, subnet_id: str) -> Mapping[str, Any]:
        subnet: Mapping[str, Any] = self._ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]
        return subnet

    def _groups(self, group_ids: Sequence[str]) -> list[Mapping[str, Any]]:
        if not group_ids:  # no ids would describe every group of the account
            return []
        groups: list[Mapping[str, Any]] = self._ec2.describe_security_groups(GroupIds=list(group_ids))[
            "SecurityGroups"
        ]
        return groups

    def _network_acl(self, subnet_id: str, vpc_id: str) -> Mapping[str, Any]:
        associated = self._ec2.describe_network_acls(Filters=[_filter("association.subnet-id", subnet_id)])
        acls = (
            associated["NetworkAcls"]
            or self._ec2.describe_network_acls(
                Filters=[_filter("vpc-id", vpc_id), _filter("default", "true")]
            )["NetworkAcls"]
        )
        acl: Mapping[str, Any] = acls[0]
        return acl

    def _route_table(self, subnet_id: str, vpc_id: str) -> Mapping[str, Any]:
        associated = self._ec2.describe_route_tables(Filters=[_filter("association.subnet-id", subnet_id)])
        tables = (
            associated["RouteTables"]
            or self._ec2.describe_route_tables(
                Filters=[_filter("vpc-id", vpc_id), _filter("association.main", "true")]
            )["RouteTables"]
        )
        table: Mapping[str, Any] = tables[0]
        return table

    def _prefix_list(self, prefix_list_id: str) -> list[IPv4Network]:
        pages = self._ec2.get_paginator("get_managed_prefix_list_entries").paginate(
            PrefixListId=prefix_list_id
        )
        return [
            IPv4Network(entry["Cidr"], strict=False)
            for page in pages
            for entry in page["Entries"]
            if ":" not in entry["Cidr"]
        ]


def _filter(name: str, value: str) -> dict[str, Any]:
    return {"Name": name, "Values": [value]}


def _holds(cidr: str | None, address: IPv4Address) -> bool:
    return cidr is not None and address in IPv4Network(cidr, strict=False)


def _interface_address(subnet: Mapping[str, Any], offset: int) -> IPv4Address:
    return IPv4Network(subnet["CidrBlock"], strict=False)[offset]


def _acl_entry_ports(entry: Mapping[str, Any]) -> Ports | None:
    """The tcp ports an ACL entry matches; None if it matches no tcp."""
    protocol = str(entry["Protocol"])
    if protocol == "-1":
        return (0, 65535)
    if protocol in _TCP:
        return (int(entry["PortRange"]["From"]), int(entry["PortRange"]["To"]))
    return None


def _subtract(ranges: list[Ports], covered: Ports) -> tuple[bool, list[Ports]]:
    """(whether ``covered`` overlaps ``ranges``, what of ``ranges`` it leaves)."""
    low, high = covered
    overlaps, left = False, []
    for start, end in ranges:
        if end < low or start > high:
            left.append((start, end))
            continue
        overlaps = True
        left += [(start, low - 1)] if start < low else []
        left += [(high + 1, end)] if end > high else []
    return overlaps, left


def _acl_reason(acl_id: str, rule: int, egress: bool, peer: IPv4Address, ports: Ports) -> str:
    direction = "outbound" if egress else "inbound"
    traffic = f"tcp/{ports[0]}" if ports[0] == ports[1] else f"return traffic tcp/{ports[0]}-{ports[1]}"
    what = f"{direction} {traffic} {'to' if egress else 'from'} {peer}"
    if rule == DEFAULT_ACL_RULE:
        return f"network ACL {acl_id} has no rule allowing {what}, so its default rule (*) denies it"
    return f"network ACL {acl_id} rule {rule} denies {what}"


def _groups_phrase(group_ids: Sequence[str]) -> str:
    if len(group_ids) == 1:
        return f"security group {group_ids[0]} has"
    return f"security groups {', '.join(group_ids) or '(none)'} have"
