"""The sandbox's VPC reachability emulation: rule-order helpers, then VPCs built in the sandbox.

Every case states its expected reachability and the resource that decides it by hand.
"""

from __future__ import annotations

import io
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.reachability import (
    REQUIRED_IAM_ACTIONS,
    VpcNetwork,
    acl_decision,
    best_route,
    permission_allows,
)
from tests.conftest import Undo

# The VPC is read as the runtime reads it: as the identity that plays the Lambda service.
READER = names.LAMBDA_SERVICE
ANYWHERE = "0.0.0.0/0"
PUBLIC = IPv4Address("52.216.8.10")


# Rule order, without the sandbox.


def _acl(number: int, action: str, *, egress: bool, ports: tuple[int, int] | None = None) -> dict[str, Any]:
    """A network ACL entry (as CreateNetworkAclEntry takes it and EC2 describes it): all traffic, or tcp."""
    entry: dict[str, Any] = {
        "RuleNumber": number,
        "RuleAction": action,
        "Egress": egress,
        "CidrBlock": ANYWHERE,
        "Protocol": "-1" if ports is None else "6",
    }
    if ports is not None:
        entry["PortRange"] = {"From": ports[0], "To": ports[1]}
    return entry


def test_acl_lowest_rule_number_decides_whatever_the_listed_order() -> None:
    allow_all, deny_https = _acl(100, "allow", egress=True), _acl(90, "deny", egress=True, ports=(443, 443))
    assert acl_decision([allow_all, deny_https], egress=True, peer=PUBLIC, ports=(443, 443)) == (False, 90)
    allow_https = _acl(80, "allow", egress=True, ports=(443, 443))
    assert acl_decision([allow_all, deny_https, allow_https], egress=True, peer=PUBLIC, ports=(443, 443)) == (
        True,
        80,
    )


def test_acl_return_traffic_needs_every_ephemeral_port() -> None:
    ephemeral = (1024, 65535)
    linux_range_only = [_acl(100, "allow", egress=False, ports=(32768, 65535))]
    assert acl_decision(linux_range_only, egress=False, peer=PUBLIC, ports=ephemeral) == (False, 32767)
    deny_one_port = [_acl(50, "deny", egress=False, ports=(3306, 3306)), _acl(100, "allow", egress=False)]
    assert acl_decision(deny_one_port, egress=False, peer=PUBLIC, ports=ephemeral) == (False, 50)
    two_halves = [
        _acl(100, "allow", egress=False, ports=(1024, 30000)),
        _acl(110, "allow", egress=False, ports=(30001, 65535)),
    ]
    assert acl_decision(two_halves, egress=False, peer=PUBLIC, ports=ephemeral) == (True, 110)


def test_acl_ignores_other_directions_protocols_and_addresses() -> None:
    entries = [
        _acl(100, "allow", egress=False),
        {**_acl(110, "allow", egress=True), "Protocol": "17"},
        {**_acl(120, "allow", egress=True), "CidrBlock": "10.0.0.0/8"},
        _acl(32767, "deny", egress=True),
    ]
    assert acl_decision(entries, egress=True, peer=PUBLIC, ports=(443, 443)) == (False, 32767)


def test_prefix_list_route_beats_default_route_and_loses_a_tie_to_a_cidr_route() -> None:
    lists = {"pl-s3": [IPv4Network("52.216.0.0/15")]}
    default = {"DestinationCidrBlock": ANYWHERE, "NatGatewayId": "nat-1"}
    endpoint = {"DestinationPrefixListId": "pl-s3", "GatewayId": "vpce-1"}
    same_length = {"DestinationCidrBlock": "52.216.0.0/15", "GatewayId": "igw-1"}
    assert best_route([default, endpoint], PUBLIC, lists.__getitem__) == endpoint
    assert best_route([endpoint, same_length, default], PUBLIC, lists.__getitem__) == same_length
    assert best_route([endpoint], IPv4Address("35.182.0.9"), lists.__getitem__) is None


def test_group_reference_never_matches_a_public_endpoint() -> None:
    by_group = {
        "IpProtocol": "tcp",
        "FromPort": 443,
        "ToPort": 443,
        "UserIdGroupPairs": [{"GroupId": "sg-9"}],
    }
    assert not permission_allows(by_group, peer=PUBLIC, peer_groups=frozenset(), prefix_lists=lambda _: [])
    assert permission_allows(
        by_group, peer=PUBLIC, peer_groups=frozenset({"sg-9"}), prefix_lists=lambda _: []
    )


# VPCs in the sandbox, built as the operator.


@dataclass
class Lab:
    """A new VPC: the function's private subnet routes 0.0.0.0/0 to a NAT gateway in a public subnet,
    which routes it to an attached internet gateway; the function's group has no egress rule yet."""

    ec2: Any
    vpc_id: str
    cidr: str
    private_subnet: str
    private_table: str
    public_table: str
    internet_gateway: str
    nat_gateway: str
    group: str

    def config(self) -> dict[str, Any]:
        return {"SubnetIds": [self.private_subnet], "SecurityGroupIds": [self.group]}

    def allow_egress(self, *permissions: dict[str, Any]) -> None:
        self.ec2.authorize_security_group_egress(GroupId=self.group, IpPermissions=list(permissions))

    def new_group(self, name: str) -> str:
        group_id: str = self.ec2.create_security_group(
            GroupName=f"{name}-{uuid.uuid4().hex[:6]}", Description=name, VpcId=self.vpc_id
        )["GroupId"]
        return group_id

    def private_acl(self, *entries: dict[str, Any]) -> str:
        """A new network ACL with ``entries``, associated with the private subnet."""
        acl_id: str = self.ec2.create_network_acl(VpcId=self.vpc_id)["NetworkAcl"]["NetworkAclId"]
        for entry in entries:
            self.ec2.create_network_acl_entry(NetworkAclId=acl_id, **entry)
        (current,) = self.ec2.describe_network_acls(
            Filters=[{"Name": "association.subnet-id", "Values": [self.private_subnet]}]
        )["NetworkAcls"]
        association = next(
            a["NetworkAclAssociationId"]
            for a in current["Associations"]
            if a["SubnetId"] == self.private_subnet
        )
        self.ec2.replace_network_acl_association(AssociationId=association, NetworkAclId=acl_id)
        return acl_id


def _https(**destination: Sequence[dict[str, str]]) -> dict[str, Any]:
    return {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, **destination}


@pytest.fixture
def lab(sandbox: Sandbox) -> Lab:
    ec2 = sandbox.session(names.OPERATOR).client("ec2")
    cidr = "10.60.0.0/16"
    vpc_id = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    ec2.create_tags(Resources=[vpc_id], Tags=[{"Key": "Name", "Value": "reachability-test"}])

    def subnet(block: str) -> str:
        subnet_id: str = ec2.create_subnet(VpcId=vpc_id, CidrBlock=block)["Subnet"]["SubnetId"]
        return subnet_id

    def table(subnet_id: str, **default_route: str) -> str:
        table_id: str = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
        ec2.associate_route_table(RouteTableId=table_id, SubnetId=subnet_id)
        ec2.create_route(RouteTableId=table_id, DestinationCidrBlock=ANYWHERE, **default_route)
        return table_id

    public_subnet, private_subnet = subnet("10.60.0.0/24"), subnet("10.60.1.0/24")
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    public_table = table(public_subnet, GatewayId=igw)
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public_subnet, AllocationId=allocation)["NatGateway"][
        "NatGatewayId"
    ]
    private_table = table(private_subnet, NatGatewayId=nat)
    group = ec2.create_security_group(
        GroupName=f"function-{uuid.uuid4().hex[:6]}", Description="function", VpcId=vpc_id
    )["GroupId"]
    ec2.revoke_security_group_egress(
        GroupId=group, IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": ANYWHERE}]}]
    )
    return Lab(ec2, vpc_id, cidr, private_subnet, private_table, public_table, igw, nat, group)


@pytest.fixture
def network(sandbox: Sandbox) -> VpcNetwork:
    return VpcNetwork(sandbox.session(READER).client("ec2"), sandbox.region)


def _function_vpc_config(sandbox: Sandbox, undo: Undo, vpc_config: dict[str, Any] | None) -> dict[str, Any]:
    """Create a function (in ``vpc_config``, or none) and return its VpcConfig as Lambda describes it."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as package:
        package.writestr("index.py", "def handler(event, context):\n    return event\n")
    name = f"reachability-{uuid.uuid4().hex[:8]}"
    operator = sandbox.session(names.OPERATOR).client("lambda")
    extra = {"VpcConfig": vpc_config} if vpc_config else {}
    operator.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=sandbox.world.role_arn,
        Handler="index.handler",
        Code={"ZipFile": archive.getvalue()},
        **extra,
    )
    undo(lambda: operator.delete_function(FunctionName=name))
    function = sandbox.session(names.LAMBDA_SERVICE).client("lambda").get_function(FunctionName=name)
    vpc: dict[str, Any] = function["Configuration"].get("VpcConfig", {})
    return vpc


def test_https_egress_to_anywhere_through_nat_reaches_s3(
    sandbox: Sandbox, undo: Undo, lab: Lab, network: VpcNetwork
) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    config = _function_vpc_config(sandbox, undo, lab.config())

    verdict = network.verdict(config, "s3")

    assert verdict.reachable is True
    assert lab.nat_gateway in verdict.reason
    assert lab.internet_gateway in verdict.reason


def test_function_outside_a_vpc_reaches_everything(sandbox: Sandbox, undo: Undo, network: VpcNetwork) -> None:
    config = _function_vpc_config(sandbox, undo, None)

    assert network.verdict(config, "s3").reachable is True
    assert network.verdict({}, "dynamodb").reachable is True


def test_egress_to_the_s3_prefix_list_carries_s3_but_not_dynamodb(
    sandbox: Sandbox, lab: Lab, network: VpcNetwork
) -> None:
    (s3_list,) = lab.ec2.describe_managed_prefix_lists(
        Filters=[{"Name": "prefix-list-name", "Values": [f"com.amazonaws.{sandbox.region}.s3"]}]
    )["PrefixLists"]
    lab.allow_egress(_https(PrefixListIds=[{"PrefixListId": s3_list["PrefixListId"]}]))

    s3, dynamodb = network.verdict(lab.config(), "s3"), network.verdict(lab.config(), "dynamodb")

    assert s3.reachable is True
    assert lab.nat_gateway in s3.reason
    assert dynamodb.reachable is False
    assert f"security group {lab.group} has no egress rule for tcp/443" in dynamodb.reason


def test_egress_on_port_80_only_reaches_nothing(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress({"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80, "IpRanges": [{"CidrIp": ANYWHERE}]})

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is False
    assert lab.group in verdict.reason


def test_all_traffic_egress_reaches_s3(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress({"IpProtocol": "-1", "IpRanges": [{"CidrIp": ANYWHERE}]})

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is True
    assert lab.nat_gateway in verdict.reason


def test_egress_to_another_group_does_not_reach_a_public_endpoint(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(UserIdGroupPairs=[{"GroupId": lab.new_group("peer")}]))

    verdict = network.verdict(lab.config(), "sts")

    assert verdict.reachable is False
    assert lab.group in verdict.reason


def test_acl_deny_rule_90_before_allow_rule_100_blocks(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    acl = lab.private_acl(
        _acl(90, "deny", egress=True, ports=(443, 443)),
        _acl(100, "allow", egress=True),
        _acl(100, "allow", egress=False),
    )

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is False
    assert f"network ACL {acl} rule 90 denies outbound tcp/443" in verdict.reason


def test_acl_without_inbound_return_traffic_blocks(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    acl = lab.private_acl(_acl(100, "allow", egress=True, ports=(443, 443)))

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is False
    assert f"network ACL {acl} has no rule allowing inbound return traffic tcp/1024-65535" in verdict.reason


def test_acl_allowing_all_traffic_passes(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    lab.private_acl(_acl(100, "allow", egress=True), _acl(100, "allow", egress=False))

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is True
    assert lab.nat_gateway in verdict.reason


def test_without_a_default_route_nothing_is_reached(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    lab.ec2.delete_route(RouteTableId=lab.private_table, DestinationCidrBlock=ANYWHERE)

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is False
    assert f"route table {lab.private_table} has no route" in verdict.reason


def test_subnet_without_an_associated_table_uses_the_main_table(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    loose = lab.ec2.create_subnet(VpcId=lab.vpc_id, CidrBlock="10.60.2.0/24")["Subnet"]["SubnetId"]
    (main,) = lab.ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [lab.vpc_id]}, {"Name": "association.main", "Values": ["true"]}]
    )["RouteTables"]

    verdict = network.verdict({"SubnetIds": [loose], "SecurityGroupIds": [lab.group]}, "s3")

    assert verdict.reachable is False
    assert f"route table {main['RouteTableId']} has no route" in verdict.reason


def test_default_route_to_an_internet_gateway_does_not_serve_lambda(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    lab.ec2.replace_route(
        RouteTableId=lab.private_table, DestinationCidrBlock=ANYWHERE, GatewayId=lab.internet_gateway
    )

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is False
    assert f"internet gateway {lab.internet_gateway}" in verdict.reason
    assert "no public IP" in verdict.reason


def test_deleted_nat_gateway_reaches_nothing(lab: Lab, network: VpcNetwork) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    lab.ec2.delete_nat_gateway(NatGatewayId=lab.nat_gateway)

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is False
    assert f"NAT gateway {lab.nat_gateway}, which is deleted" in verdict.reason


def test_nat_gateway_without_a_route_to_the_internet_gateway_reaches_nothing(
    lab: Lab, network: VpcNetwork
) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    lab.ec2.delete_route(RouteTableId=lab.public_table, DestinationCidrBlock=ANYWHERE)

    verdict = network.verdict(lab.config(), "s3")

    assert verdict.reachable is False
    assert lab.nat_gateway in verdict.reason
    assert lab.public_table in verdict.reason


def test_s3_gateway_endpoint_without_nat_carries_s3_only(
    sandbox: Sandbox, lab: Lab, network: VpcNetwork
) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": ANYWHERE}]))
    lab.ec2.delete_route(RouteTableId=lab.private_table, DestinationCidrBlock=ANYWHERE)
    endpoint = lab.ec2.create_vpc_endpoint(
        VpcId=lab.vpc_id,
        ServiceName=f"com.amazonaws.{sandbox.region}.s3",
        VpcEndpointType="Gateway",
        RouteTableIds=[lab.private_table],
    )["VpcEndpoint"]["VpcEndpointId"]

    s3, dynamodb = network.verdict(lab.config(), "s3"), network.verdict(lab.config(), "dynamodb")

    assert s3.reachable is True
    assert f"gateway endpoint {endpoint} carries s3" in s3.reason
    assert dynamodb.reachable is False
    assert f"route table {lab.private_table} has no route" in dynamodb.reason


def test_interface_endpoint_carries_its_service_inside_the_vpc(
    sandbox: Sandbox, lab: Lab, network: VpcNetwork
) -> None:
    lab.allow_egress(_https(IpRanges=[{"CidrIp": lab.cidr}]))
    lab.ec2.delete_route(RouteTableId=lab.private_table, DestinationCidrBlock=ANYWHERE)
    endpoint_group = lab.new_group("logs-endpoint")
    endpoint = lab.ec2.create_vpc_endpoint(
        VpcId=lab.vpc_id,
        ServiceName=f"com.amazonaws.{sandbox.region}.logs",
        VpcEndpointType="Interface",
        SubnetIds=[lab.private_subnet],
        SecurityGroupIds=[endpoint_group],
        PrivateDnsEnabled=True,
    )["VpcEndpoint"]["VpcEndpointId"]

    closed = network.verdict(lab.config(), "logs")
    lab.ec2.authorize_security_group_ingress(
        GroupId=endpoint_group, IpPermissions=[_https(UserIdGroupPairs=[{"GroupId": lab.group}])]
    )
    logs, sts = network.verdict(lab.config(), "logs"), network.verdict(lab.config(), "sts")

    assert closed.reachable is False
    assert f"no security group of interface endpoint {endpoint} allows ingress" in closed.reason
    assert logs.reachable is True
    assert f"interface endpoint {endpoint} carries logs" in logs.reason
    assert sts.reachable is False
    assert lab.group in sts.reason


def test_required_actions_cover_every_call(sandbox: Sandbox, lab: Lab) -> None:
    ec2 = sandbox.session(READER).client("ec2")
    called: set[str] = set()
    ec2.meta.events.register("before-call.ec2", lambda model, **_: called.add(f"ec2:{model.name}"))
    (s3_list,) = lab.ec2.describe_managed_prefix_lists(
        Filters=[{"Name": "prefix-list-name", "Values": [f"com.amazonaws.{sandbox.region}.s3"]}]
    )["PrefixLists"]
    lab.allow_egress(_https(PrefixListIds=[{"PrefixListId": s3_list["PrefixListId"]}]))

    assert VpcNetwork(ec2, sandbox.region).verdict(lab.config(), "s3").reachable is True
    assert called == set(REQUIRED_IAM_ACTIONS)
