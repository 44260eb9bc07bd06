"""``get_network_state``: the function's VPC attachment, security groups, subnets and network ACLs, and
whether they let it reach AWS APIs over HTTPS."""

from __future__ import annotations

from typing import Any

from mcp_server.contract import (
    GetNetworkStateArgs,
    NetworkAcl,
    NetworkAclEntry,
    NetworkStateResponse,
    SecurityGroup,
    SecurityGroupRule,
    Subnet,
)
from mcp_server.errors import aws_errors
from mcp_server.tools.lambda_config import function_configuration

HTTPS_PORT = 443
_ANYWHERE = "0.0.0.0/0"
NOT_IN_VPC_NOTE = (
    "the function is not attached to a VPC: it has Lambda's default internet egress and no security "
    "groups or network ACLs apply"
)


def _carries_https(protocol: str, port_from: int | None, port_to: int | None) -> bool:
    """Whether a rule with this protocol ('-1' = all, 'tcp' or '6') and port range covers tcp/443."""
    if protocol == "-1":
        return True
    if protocol.lower() not in {"tcp", "6"}:
        return False
    low = 0 if port_from is None else port_from
    high = 65535 if port_to is None else port_to
    return low <= HTTPS_PORT <= high


def _rule(permission: dict[str, Any]) -> SecurityGroupRule:
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
        ingress=[_rule(p) for p in group.get("IpPermissions", [])],
        egress=[_rule(p) for p in group.get("IpPermissionsEgress", [])],
    )


def _network_acl(acl: dict[str, Any]) -> NetworkAcl:
    return NetworkAcl(
        network_acl_id=acl["NetworkAclId"],
        entries=[
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
        ],
    )


def _groups_allow_https(groups: list[SecurityGroup]) -> bool:
    """Some egress rule covers tcp/443 towards some destination (CIDR, prefix list or group)."""
    return any(
        _carries_https(rule.ip_protocol, rule.from_port, rule.to_port)
        and (rule.ipv4_ranges or rule.ipv6_ranges or rule.prefix_list_ids or rule.referenced_group_ids)
        for group in groups
        for rule in group.egress
    )


def _acl_allows_https(acl: NetworkAcl) -> bool:
    """The first outbound 0.0.0.0/0 entry covering tcp/443, in rule-number order, decides; none denies."""
    for entry in sorted(acl.entries, key=lambda e: e.rule_number):
        if (
            entry.egress
            and entry.cidr_block == _ANYWHERE
            and _carries_https(entry.protocol, entry.port_from, entry.port_to)
        ):
            return entry.rule_action == "allow"
    return False


def _subnet_acls(
    ec2_client: Any, subnets: list[dict[str, Any]], *, region: str | None
) -> dict[str, NetworkAcl]:
    """Subnet id -> its network ACL: the associated one, else the default ACL of the subnet's VPC."""
    subnet_ids = [s["SubnetId"] for s in subnets]
    with aws_errors(f"network ACLs of subnets {', '.join(subnet_ids)}", region):
        acls = ec2_client.describe_network_acls(
            Filters=[{"Name": "association.subnet-id", "Values": subnet_ids}]
        )["NetworkAcls"]
    found = {
        association["SubnetId"]: _network_acl(acl)
        for acl in acls
        for association in acl.get("Associations", [])
        if association.get("SubnetId") in subnet_ids
    }
    for subnet in subnets:
        if subnet["SubnetId"] in found:
            continue
        vpc_id = subnet["VpcId"]
        with aws_errors(f"default network ACL of VPC {vpc_id}", region):
            defaults = ec2_client.describe_network_acls(
                Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "default", "Values": ["true"]}]
            )["NetworkAcls"]
        if defaults:
            found[subnet["SubnetId"]] = _network_acl(defaults[0])
    return found


def network_state(
    lambda_client: Any, ec2_client: Any, args: GetNetworkStateArgs, *, region: str | None
) -> NetworkStateResponse:
    """Security groups, subnets and network ACLs of a VPC function, and whether HTTPS egress is allowed."""
    config = function_configuration(lambda_client, args.lambda_name, region=region)
    vpc = config.get("VpcConfig") or {}
    subnet_ids: list[str] = vpc.get("SubnetIds") or []
    if not subnet_ids:
        return NetworkStateResponse(function_name=config["FunctionName"], in_vpc=False, note=NOT_IN_VPC_NOTE)
    group_ids: list[str] = vpc.get("SecurityGroupIds") or []
    groups: list[SecurityGroup] = []
    if group_ids:  # DescribeSecurityGroups without GroupIds would list every group of the account
        with aws_errors(f"security groups {', '.join(group_ids)}", region):
            groups = [
                _security_group(g)
                for g in ec2_client.describe_security_groups(GroupIds=group_ids)["SecurityGroups"]
            ]
    with aws_errors(f"subnets {', '.join(subnet_ids)}", region):
        raw_subnets: list[dict[str, Any]] = ec2_client.describe_subnets(SubnetIds=subnet_ids)["Subnets"]
    acls = _subnet_acls(ec2_client, raw_subnets, region=region)
    subnets = [
        Subnet(
            subnet_id=s["SubnetId"],
            vpc_id=s["VpcId"],
            cidr_block=s.get("CidrBlock"),
            availability_zone=s.get("AvailabilityZone"),
            network_acl=acls.get(s["SubnetId"]),
        )
        for s in raw_subnets
    ]

    blocked = [] if _groups_allow_https(groups) else ["no security-group egress rule allows tcp/443"]
    blocked += [
        f"network ACL {s.network_acl.network_acl_id} of subnet {s.subnet_id} does not allow outbound "
        f"tcp/443 to {_ANYWHERE}"
        for s in subnets
        if s.network_acl is not None and not _acl_allows_https(s.network_acl)
    ]
    note = (
        "HTTPS egress is blocked: " + "; ".join(blocked)
        if blocked
        else "HTTPS egress is allowed: a security-group egress rule allows tcp/443 and every subnet's "
        f"network ACL allows outbound tcp/443 to {_ANYWHERE} (routes and the ACLs' inbound rules for "
        "return traffic are not checked)"
    )
    return NetworkStateResponse(
        function_name=config["FunctionName"],
        in_vpc=True,
        # EC2 names the VPC authoritatively (the sandbox emulator puts a placeholder in VpcConfig.VpcId).
        vpc_id=subnets[0].vpc_id if subnets else vpc.get("VpcId"),
        security_groups=groups,
        subnets=subnets,
        https_egress_allowed=not blocked,
        note=note,
    )
