"""The EC2 reads behind ``get_network_state``: the function's security groups and subnets, the managed
prefix lists and their entries, and the route tables, network ACLs, NAT gateways and VPC endpoints of its
VPC. Each is a :class:`Read`, so that a failure becomes a gap."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from ipaddress import IPv4Network
from typing import Any

from mcp_server.reads import Read
from mcp_server.tools.context import ToolContext
from mcp_server.tools.network.mapping import (
    VpcView,
    acls_by_subnet,
    endpoints_by_id,
    nat_gateways_by_id,
    subnets_by_id,
    tables_by_subnet,
)
from mcp_server.tools.network.rules import cidr_networks


def _paged(client: Any, operation: str, key: str, **params: Any) -> list[dict[str, Any]]:
    return [item for page in client.get_paginator(operation).paginate(**params) for item in page.get(key, [])]


def _in_vpc(vpc_id: str) -> list[dict[str, Any]]:
    return [{"Name": "vpc-id", "Values": [vpc_id]}]


class Ec2Reads:
    """The EC2 reads of one call."""

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


def _resolve(reads: Ec2Reads, ids: Iterable[str], into: dict[str, list[IPv4Network]]) -> None:
    """Read the entries of the prefix lists not resolved yet (concurrently) into ``into``."""
    wanted = [pl for pl in dict.fromkeys(ids) if pl not in into]
    _store(into, wanted, reads.ctx.reads.many([reads.entries(pl) for pl in wanted]))


def read_vpc(reads: Ec2Reads, raw_subnets: list[dict[str, Any]] | None, referenced: list[str]) -> VpcView:
    """Route tables, network ACLs, NAT gateways and endpoints of the function's VPC, read concurrently with
    the prefix lists ``referenced``; then the prefix lists the routes name."""
    vpc_reads = reads.vpc(raw_subnets[0]["VpcId"]) if raw_subnets else []
    wanted = list(dict.fromkeys(referenced))
    results = reads.ctx.reads.many([*vpc_reads, *(reads.entries(pl) for pl in wanted)])
    resolved: dict[str, list[IPv4Network]] = {}
    _store(resolved, wanted, results[len(vpc_reads) :])
    tables, acls, nats, endpoints = results[: len(vpc_reads)] or [None] * 4
    nat_gateways = None if nats is None else nat_gateways_by_id(nats)
    function_subnets = [s["SubnetId"] for s in raw_subnets or []]
    relevant = function_subnets + [n.subnet_id for n in (nat_gateways or {}).values() if n.subnet_id]
    subnet_tables = None if tables is None else tables_by_subnet(tables, relevant)
    route_lists = [r.destination for t in (subnet_tables or {}).values() for r in t.routes]
    _resolve(reads, [d for d in route_lists if d.startswith("pl-")], resolved)
    subnet_acls = None if acls is None else acls_by_subnet(acls, relevant)
    return VpcView(
        subnets=subnets_by_id(raw_subnets or [], subnet_tables, subnet_acls),
        tables=subnet_tables,
        acls=subnet_acls,
        nat_gateways=nat_gateways,
        endpoints=None if endpoints is None else endpoints_by_id(endpoints),
        prefix_lists=resolved,
    )
