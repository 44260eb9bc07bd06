"""``get_network_state`` v2: its rule-order helpers, and its verdicts on networks built for each case in a new
VPC of the sandbox (as the operator), read as the `mcp-server` identity. Every expected verdict is written
by hand from AWS's documented semantics, not computed."""

from __future__ import annotations

import configparser
import io
import itertools
import json
import uuid
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any, Literal

import boto3
import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, profile_session
from mcp_server.aws import AwsClients
from mcp_server.contract.network import (
    EgressVerdict,
    GetNetworkStateArgs,
    NetworkAclEntry,
    NetworkStateResponse,
    Route,
    SecurityGroup,
    SecurityGroupRule,
)
from mcp_server.permissions import required_iam_actions
from mcp_server.settings import ServerSettings
from mcp_server.tools.network import network_state
from mcp_server.tools.network.rules import (
    EPHEMERAL_PORTS,
    Finding,
    acl_decision,
    combine,
    coverage,
    security_group_finding,
    select_route,
)
from tests.conftest import Undo
from tests.tool_support import call_tool

# --------------------------------------------------------------------------- pure helpers

S3 = IPv4Network("52.216.0.0/15")
HTTPS = (443, 443)


def _entry(
    number: int,
    action: Literal["allow", "deny"],
    cidr: str = "0.0.0.0/0",
    ports: tuple[int, int] | None = HTTPS,
    *,
    egress: bool = True,
    protocol: str = "6",
) -> NetworkAclEntry:
    low, high = ports or (None, None)
    return NetworkAclEntry(
        rule_number=number,
        protocol=protocol,
        rule_action=action,
        egress=egress,
        cidr_block=cidr,
        port_from=low,
        port_to=high,
    )


def test_acl_first_matching_rule_by_number_decides_whatever_the_listed_order() -> None:
    entries = [_entry(100, "allow"), _entry(90, "deny")]
    decision = acl_decision(entries, egress=True, address=None, ports=HTTPS)
    assert (decision.allowed, [e.rule_number for e in decision.deciding]) == (False, [90])
    decision = acl_decision(
        [_entry(100, "allow"), _entry(110, "deny")], egress=True, address=None, ports=HTTPS
    )
    assert (decision.allowed, [e.rule_number for e in decision.deciding]) == (True, [100])


def test_acl_checks_only_its_direction_and_tcp() -> None:
    inbound_only = [_entry(100, "allow", egress=False)]
    assert acl_decision(inbound_only, egress=True, address=None, ports=HTTPS).allowed is False
    udp = [_entry(100, "allow", protocol="17")]
    assert acl_decision(udp, egress=True, address=None, ports=HTTPS).allowed is False
    every_protocol = [_entry(100, "allow", ports=None, protocol="-1")]
    assert acl_decision(every_protocol, egress=True, address=None, ports=HTTPS).allowed is True
    port_80 = [_entry(100, "allow", ports=(80, 80))]
    assert acl_decision(port_80, egress=True, address=None, ports=HTTPS).allowed is False


def test_acl_return_traffic_needs_every_ephemeral_port() -> None:
    half = [_entry(100, "allow", ports=(32768, 65535), egress=False)]
    decision = acl_decision(half, egress=False, address=None, ports=EPHEMERAL_PORTS)
    assert (decision.allowed, decision.deciding) == (False, ())  # 1024-32767 fall to the '*' rule
    both = [*half, _entry(110, "allow", ports=(1024, 32767), egress=False)]
    decision = acl_decision(both, egress=False, address=None, ports=EPHEMERAL_PORTS)
    assert (decision.allowed, [e.rule_number for e in decision.deciding]) == (True, [100, 110])
    denied_part = [_entry(50, "deny", ports=(1024, 2000), egress=False), *both]
    decision = acl_decision(denied_part, egress=False, address=None, ports=EPHEMERAL_PORTS)
    assert (decision.allowed, [e.rule_number for e in decision.deciding]) == (False, [50])
    # A deny on ports already allowed by an earlier rule changes nothing.
    late_deny = [*both, _entry(120, "deny", ports=(1024, 2000), egress=False)]
    assert acl_decision(late_deny, egress=False, address=None, ports=EPHEMERAL_PORTS).allowed is True


def test_acl_narrower_ranges_against_known_and_unknown_addresses() -> None:
    entries = [_entry(80, "deny", "10.0.0.0/8"), _entry(90, "deny", "52.0.0.0/8"), _entry(100, "allow")]
    # A public endpoint of unknown address: the private range is irrelevant, the public one a caveat.
    decision = acl_decision(entries, egress=True, address=None, ports=HTTPS)
    assert decision.allowed is True
    assert [e.rule_number for e in decision.caveats] == [90]
    # S3's range lies inside 52.0.0.0/8: rule 90 blocks it.
    decision = acl_decision(entries, egress=True, address=S3, ports=HTTPS)
    assert (decision.allowed, [e.rule_number for e in decision.deciding]) == (False, [90])
    # An allow for part of S3's range decides nothing; the rest falls to the '*' rule.
    partial = [_entry(100, "allow", "52.216.0.0/16")]
    assert acl_decision(partial, egress=True, address=S3, ports=HTTPS).allowed is False
    assert acl_decision([_entry(100, "allow", "52.0.0.0/8")], egress=True, address=S3, ports=HTTPS).allowed


def test_coverage() -> None:
    anywhere, private, public = (IPv4Network(c) for c in ("0.0.0.0/0", "10.0.0.0/8", "52.0.0.0/8"))
    assert [coverage([n], None) for n in (anywhere, private, public)] == ["all", "none", "part"]
    assert [coverage([n], S3) for n in (anywhere, private, public)] == ["all", "none", "all"]
    assert coverage([IPv4Network("52.217.0.0/16")], S3) == "part"


def _route(destination: str, target: str) -> Route:
    return Route(destination=destination, target=target, state="active")


def test_route_selection_longest_prefix_then_static_before_prefix_list() -> None:
    local, default = _route("10.0.0.0/16", "local"), _route("0.0.0.0/0", "nat-1")
    endpoint = _route("pl-s3", "vpce-1")
    lists = {"pl-s3": [S3]}
    assert select_route([local, default, endpoint], S3, lists) is endpoint
    assert select_route([local, default, endpoint], None, lists) is default  # unknown address: only /0
    assert select_route([local, endpoint], None, lists) is None
    same_length = _route("52.216.0.0/15", "pcx-1")
    assert select_route([endpoint, same_length, default], S3, lists) is same_length
    assert select_route([local, default, endpoint], S3, {}) == "pl-s3"  # could not be resolved


def _group(*rules: SecurityGroupRule) -> SecurityGroup:
    return SecurityGroup(group_id="sg-1", group_name="g", vpc_id="vpc-1", ingress=[], egress=list(rules))


def _sg_rule(
    protocol: str = "tcp", ports: tuple[int, int] = HTTPS, **targets: list[str]
) -> SecurityGroupRule:
    return SecurityGroupRule(ip_protocol=protocol, from_port=ports[0], to_port=ports[1], **targets)


def test_security_group_destinations() -> None:
    lists = {"pl-s3": [S3]}
    to_s3 = [_group(_sg_rule(prefix_list_ids=["pl-s3"]))]
    assert security_group_finding(to_s3, S3, lists, "s3").allowed is True
    assert security_group_finding(to_s3, None, lists, "AWS").allowed is False
    assert security_group_finding(to_s3, S3, {}, "s3").allowed is None  # its prefix list is unknown
    port_80 = [_group(_sg_rule(ports=(80, 80), ipv4_ranges=["0.0.0.0/0"]))]
    assert security_group_finding(port_80, None, lists, "AWS").allowed is False
    everything = [
        _group(SecurityGroupRule(ip_protocol="-1", from_port=None, to_port=None, ipv4_ranges=["0.0.0.0/0"]))
    ]
    assert security_group_finding(everything, S3, lists, "s3").allowed is True
    peer_group = [_group(_sg_rule(referenced_group_ids=["sg-2"]))]
    assert security_group_finding(peer_group, None, lists, "AWS").allowed is False


def test_combine_is_a_three_valued_and() -> None:
    yes, no, unknown = Finding(True, "a"), Finding(False, "b"), Finding(None, "c")
    assert combine([yes, yes]) == (True, ["a"])
    assert combine([yes, unknown, no]) == (False, ["b"])
    assert combine([yes, unknown]) == (None, ["c"])


# --------------------------------------------------------------------------- networks in the sandbox

AclRule = tuple[int, bool, str, int, int]  # rule number, egress, action, from port, to port (tcp, 0.0.0.0/0)
HEALTHY_ACL: tuple[AclRule, ...] = ((100, True, "allow", 443, 443), (100, False, "allow", 1024, 65535))
HTTPS_ANYWHERE = {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
_CIDRS = itertools.count(100)
_HANDLER = b"def handler(event, context):\n    return {}\n"


@dataclass(frozen=True)
class Network:
    vpc_id: str
    subnet_id: str
    public_subnet_id: str
    route_table_id: str
    public_route_table_id: str
    acl_id: str
    group_id: str
    igw_id: str
    nat_id: str | None
    function: str
    prefix: str  # the VPC's first two octets


def _package() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", _HANDLER)
    return buffer.getvalue()


class Lab:
    """Builds a private subnet for a new function in a new VPC, as the operator: a public subnet with an
    internet gateway (and a NAT gateway when asked), the private subnet's own route table, network ACL
    and security group."""

    def __init__(self, sandbox: Sandbox, undo: Undo, clients: AwsClients) -> None:
        operator = sandbox.session(names.OPERATOR)
        self.ec2, self.lambda_ = operator.client("ec2"), operator.client("lambda")
        self.region, self.role_arn = sandbox.region, sandbox.world.role_arn
        self.undo, self.clients = undo, clients

    def network(
        self,
        *,
        default_route: Literal["nat", "igw"] | None = "nat",
        egress: Sequence[dict[str, Any]] = (HTTPS_ANYWHERE,),
        acl: Sequence[AclRule] = HEALTHY_ACL,
    ) -> Network:
        ec2, octet = self.ec2, next(_CIDRS)
        vpc_id = ec2.create_vpc(CidrBlock=f"10.{octet}.0.0/16")["Vpc"]["VpcId"]
        public, private = (
            ec2.create_subnet(
                VpcId=vpc_id, CidrBlock=f"10.{octet}.{i}.0/24", AvailabilityZone=f"{self.region}a"
            )["Subnet"]["SubnetId"]
            for i in (0, 1)
        )
        igw_id = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=igw_id, VpcId=vpc_id)
        public_routes = self._route_table(vpc_id, public)
        ec2.create_route(RouteTableId=public_routes, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw_id)
        private_routes = self._route_table(vpc_id, private)
        nat_id = None
        if default_route == "nat":
            allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
            nat_id = ec2.create_nat_gateway(SubnetId=public, AllocationId=allocation)["NatGateway"][
                "NatGatewayId"
            ]
            ec2.create_route(
                RouteTableId=private_routes, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat_id
            )
        elif default_route == "igw":
            ec2.create_route(RouteTableId=private_routes, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw_id)
        group_id = self.security_group(vpc_id, egress)
        acl_id = self.network_acl(vpc_id, private, acl)
        function = self.function([private], group_id)
        return Network(
            vpc_id,
            private,
            public,
            private_routes,
            public_routes,
            acl_id,
            group_id,
            igw_id,
            nat_id,
            function,
            f"10.{octet}",
        )

    def _route_table(self, vpc_id: str, subnet_id: str) -> str:
        table: str = self.ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
        self.ec2.associate_route_table(RouteTableId=table, SubnetId=subnet_id)
        return table

    def security_group(self, vpc_id: str, egress: Sequence[dict[str, Any]]) -> str:
        group_id: str = self.ec2.create_security_group(
            GroupName=f"net-case-{uuid.uuid4().hex[:8]}", Description="network case", VpcId=vpc_id
        )["GroupId"]
        self.ec2.revoke_security_group_egress(
            GroupId=group_id, IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
        )
        self.ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=list(egress))
        return group_id

    def network_acl(self, vpc_id: str, subnet_id: str, rules: Sequence[AclRule]) -> str:
        """A new network ACL with ``rules`` (tcp, 0.0.0.0/0), replacing the subnet's default one."""
        acl_id: str = self.ec2.create_network_acl(VpcId=vpc_id)["NetworkAcl"]["NetworkAclId"]
        for number, egress, action, low, high in rules:
            self.ec2.create_network_acl_entry(
                NetworkAclId=acl_id,
                RuleNumber=number,
                Protocol="6",
                RuleAction=action,
                Egress=egress,
                CidrBlock="0.0.0.0/0",
                PortRange={"From": low, "To": high},
            )
        current = self.ec2.describe_network_acls(
            Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}]
        )["NetworkAcls"][0]
        association = next(a for a in current["Associations"] if a["SubnetId"] == subnet_id)
        self.ec2.replace_network_acl_association(
            AssociationId=association["NetworkAclAssociationId"], NetworkAclId=acl_id
        )
        return acl_id

    def function(self, subnet_ids: list[str], group_id: str) -> str:
        name = f"net-case-{uuid.uuid4().hex[:8]}"
        self.lambda_.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=self.role_arn,
            Handler="handler.handler",
            Code={"ZipFile": _package()},
            VpcConfig={"SubnetIds": subnet_ids, "SecurityGroupIds": [group_id]},
        )
        self.undo(lambda: self.lambda_.delete_function(FunctionName=name))
        return name

    def prefix_list(self, service: str) -> str:
        name = f"com.amazonaws.{self.region}.{service}"
        lists = self.ec2.describe_managed_prefix_lists(
            Filters=[{"Name": "prefix-list-name", "Values": [name]}]
        )
        pl: str = lists["PrefixLists"][0]["PrefixListId"]
        return pl

    def state(
        self, function: str, clients: AwsClients | None = None, *, detail: bool = True
    ) -> NetworkStateResponse:
        """The answer with every reason (``detail``), as these tests read the verdicts' logic."""
        state: NetworkStateResponse = call_tool(
            clients or self.clients, network_state, GetNetworkStateArgs(lambda_name=function, detail=detail)
        )
        return state


@pytest.fixture(scope="module")
def clients(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))


@pytest.fixture
def lab(sandbox: Sandbox, undo: Undo, clients: AwsClients) -> Lab:
    return Lab(sandbox, undo, clients)


def _verdict(state: NetworkStateResponse, destination: str) -> EgressVerdict:
    return next(v for v in state.egress if v.destination == destination)


def _says(verdict: EgressVerdict, *fragments: str) -> bool:
    """Some single reason names every fragment."""
    return any(all(f in reason for f in fragments) for reason in verdict.reasons)


def test_https_anywhere_through_a_nat_gateway_reaches_aws(lab: Lab) -> None:
    net = lab.network()
    state = lab.state(net.function)

    assert (state.in_vpc, state.vpc_id, state.gaps) == (True, net.vpc_id, [])
    assert state.https_egress_allowed is True
    for destination in ("aws-apis", "s3", "dynamodb"):
        verdict = _verdict(state, destination)
        assert (verdict.allowed, verdict.path) == (True, f"nat-gateway {net.nat_id}")
    aws = _verdict(state, "aws-apis")
    assert _says(aws, net.group_id, "0.0.0.0/0")
    assert _says(aws, net.route_table_id, f"0.0.0.0/0 to {net.nat_id} (available)", net.igw_id)
    assert _says(aws, net.acl_id, "outbound rule 100")
    assert _says(aws, net.acl_id, "inbound rule 100", "1024-65535")
    subnet = state.subnets[0]
    assert subnet.route_table is not None
    assert (subnet.route_table.route_table_id, subnet.route_table.main) == (net.route_table_id, False)
    assert (subnet.route_table.default_route, subnet.route_table.default_route_target) == (
        "nat-gateway",
        net.nat_id,
    )
    assert [(n.nat_gateway_id, n.state) for n in state.nat_gateways] == [(net.nat_id, "available")]
    assert {pl.name for pl in state.prefix_lists} >= {
        f"com.amazonaws.{lab.region}.s3",
        f"com.amazonaws.{lab.region}.dynamodb",
    }


def test_s3_prefix_list_egress_and_gateway_endpoint_reach_only_s3(lab: Lab) -> None:
    s3_list = lab.prefix_list("s3")
    only_s3 = {
        "IpProtocol": "tcp",
        "FromPort": 443,
        "ToPort": 443,
        "PrefixListIds": [{"PrefixListId": s3_list}],
    }
    net = lab.network(default_route=None, egress=[only_s3])
    endpoint = lab.ec2.create_vpc_endpoint(
        VpcId=net.vpc_id,
        ServiceName=f"com.amazonaws.{lab.region}.s3",
        VpcEndpointType="Gateway",
        RouteTableIds=[net.route_table_id],
    )["VpcEndpoint"]["VpcEndpointId"]

    state = lab.state(net.function)

    s3 = _verdict(state, "s3")
    assert (s3.allowed, s3.path) == (True, f"gateway-endpoint {endpoint}")
    assert _says(s3, net.group_id, s3_list)
    assert _says(s3, s3_list, endpoint)
    aws = _verdict(state, "aws-apis")
    assert (aws.allowed, aws.path, state.https_egress_allowed) == (False, None, False)
    assert _says(aws, net.group_id, "no egress rule")
    assert _says(aws, net.route_table_id, "no route")
    dynamodb = _verdict(state, "dynamodb")
    assert (dynamodb.allowed, dynamodb.path) == (False, None)
    assert _says(dynamodb, net.route_table_id, "no route")
    assert [e.vpc_endpoint_id for e in state.vpc_endpoints] == [endpoint]
    assert state.subnets[0].route_table is not None
    assert state.subnets[0].route_table.default_route == "none"


def test_network_acl_deny_before_allow_blocks(lab: Lab) -> None:
    rules = (*HEALTHY_ACL, (90, True, "deny", 443, 443))  # created after the allow
    net = lab.network(acl=rules)
    state = lab.state(net.function)

    aws = _verdict(state, "aws-apis")
    assert aws.allowed is False
    assert _says(aws, net.acl_id, "outbound rule 90", "denies tcp 443")
    assert not _says(aws, "rule 100")
    assert state.subnets[0].network_acl is not None
    entries = state.subnets[0].network_acl.entries
    assert [(e.egress, e.rule_number) for e in entries] == [(True, 90), (True, 100), (False, 100)]


def test_by_default_only_what_blocks_is_explained(lab: Lab) -> None:
    """Without ``detail``: an allowed destination's reasons and the prefix lists are left out; what blocks
    a destination is always named."""
    only_s3 = {
        "IpProtocol": "tcp",
        "FromPort": 443,
        "ToPort": 443,
        "PrefixListIds": [{"PrefixListId": lab.prefix_list("s3")}],
    }
    net = lab.network(egress=[only_s3])
    full, short = lab.state(net.function), lab.state(net.function, detail=False)

    assert [(v.destination, v.allowed) for v in short.egress] == [
        (v.destination, v.allowed) for v in full.egress
    ]
    assert _verdict(full, "s3").allowed is True
    assert _verdict(full, "s3").reasons
    assert _verdict(short, "s3").reasons == []
    assert _verdict(full, "aws-apis").allowed is False
    assert _verdict(short, "aws-apis").reasons == _verdict(full, "aws-apis").reasons != []
    assert full.prefix_lists
    assert short.prefix_lists == []
    assert short.model_dump(exclude={"egress", "prefix_lists"}) == full.model_dump(
        exclude={"egress", "prefix_lists"}
    )


def test_network_acl_without_return_traffic_blocks(lab: Lab) -> None:
    net = lab.network(acl=((100, True, "allow", 443, 443),))
    aws = _verdict(lab.state(net.function), "aws-apis")

    assert aws.allowed is False
    assert _says(aws, net.acl_id, "inbound", "no rule allows tcp 1024-65535")


def test_default_route_deleted_is_no_route(lab: Lab) -> None:
    net = lab.network()
    lab.ec2.delete_route(RouteTableId=net.route_table_id, DestinationCidrBlock="0.0.0.0/0")
    state = lab.state(net.function)

    aws = _verdict(state, "aws-apis")
    assert (aws.allowed, aws.path) == (False, None)
    assert _says(aws, net.route_table_id, "no route")
    assert state.subnets[0].route_table is not None
    assert state.subnets[0].route_table.default_route == "none"


def test_default_route_to_an_internet_gateway_does_not_serve_lambda(lab: Lab) -> None:
    net = lab.network(default_route="igw")
    state = lab.state(net.function)

    aws = _verdict(state, "aws-apis")
    assert aws.allowed is False
    assert _says(aws, net.igw_id, "no public IP")
    assert state.subnets[0].route_table is not None
    assert state.subnets[0].route_table.default_route == "internet-gateway"


def test_deleted_nat_gateway_behind_a_remaining_route_blocks(lab: Lab) -> None:
    net = lab.network()
    assert net.nat_id is not None
    lab.ec2.delete_nat_gateway(NatGatewayId=net.nat_id)
    state = lab.state(net.function)

    aws = _verdict(state, "aws-apis")
    assert (aws.allowed, aws.path) == (False, None)
    assert _says(aws, net.nat_id, "deleted")


def test_nat_gateway_without_a_route_to_the_internet_gateway_blocks(lab: Lab) -> None:
    net = lab.network()
    lab.ec2.delete_route(RouteTableId=net.public_route_table_id, DestinationCidrBlock="0.0.0.0/0")
    aws = _verdict(lab.state(net.function), "aws-apis")

    assert aws.allowed is False
    assert _says(aws, str(net.nat_id), net.public_subnet_id, "internet gateway")


def test_nat_gateway_reaching_s3_through_its_subnet_gateway_endpoint(lab: Lab) -> None:
    net = lab.network()
    lab.ec2.delete_route(RouteTableId=net.public_route_table_id, DestinationCidrBlock="0.0.0.0/0")
    endpoint = lab.ec2.create_vpc_endpoint(
        VpcId=net.vpc_id,
        ServiceName=f"com.amazonaws.{lab.region}.s3",
        VpcEndpointType="Gateway",
        RouteTableIds=[net.public_route_table_id],
    )["VpcEndpoint"]["VpcEndpointId"]
    state = lab.state(net.function)

    s3 = _verdict(state, "s3")
    assert (s3.allowed, s3.path) == (True, f"nat-gateway {net.nat_id}")
    assert _says(s3, str(net.nat_id), endpoint)
    assert _verdict(state, "aws-apis").allowed is False
    assert _verdict(state, "dynamodb").allowed is False
    assert state.vpc_endpoints == []  # not in a route table of the function's subnet


def test_security_group_egress_only_on_port_80_blocks(lab: Lab) -> None:
    http = {"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
    net = lab.network(egress=[http])
    state = lab.state(net.function)

    for destination in ("aws-apis", "s3", "dynamodb"):
        verdict = _verdict(state, destination)
        assert verdict.allowed is False
        assert _says(verdict, net.group_id, "no egress rule")


def test_every_subnet_must_allow_and_the_blocking_one_is_named(lab: Lab) -> None:
    net = lab.network()
    blocked = lab.ec2.create_subnet(VpcId=net.vpc_id, CidrBlock=f"{net.prefix}.2.0/24")["Subnet"]["SubnetId"]
    lab.ec2.associate_route_table(RouteTableId=net.route_table_id, SubnetId=blocked)
    blocked_acl = lab.network_acl(net.vpc_id, blocked, ((90, True, "deny", 443, 443), *HEALTHY_ACL))
    function = lab.function([net.subnet_id, blocked], net.group_id)

    aws = _verdict(lab.state(function), "aws-apis")
    assert aws.allowed is False
    assert _says(aws, f"subnet {blocked}", blocked_acl, "rule 90")
    assert not _says(aws, f"subnet {net.subnet_id}")


def test_world_data_processor_reaches_aws_through_its_nat_gateway(sandbox: Sandbox, lab: Lab) -> None:
    state = lab.state(names.FUNCTION_NAME)

    world = sandbox.world
    aws = _verdict(state, "aws-apis")
    assert (aws.allowed, aws.path, state.https_egress_allowed) == (
        True,
        f"nat-gateway {world.nat_gateway_id}",
        True,
    )
    assert _says(aws, world.security_group_id)
    assert _says(aws, world.network_acl_id, "outbound rule 100")
    assert state.gaps == []


def test_function_outside_a_vpc(lab: Lab) -> None:
    state = lab.state(names.ORDERS_FUNCTION)
    assert (state.in_vpc, state.egress, state.https_egress_allowed) == (False, [], None)


# --------------------------------------------------------------------------- a read that is refused


def _identity_without(sandbox: Sandbox, tmp_path: Path, undo: Undo, action: str) -> boto3.Session:
    """A new IAM user holding the MCP server's actions but ``action``, as an AWS profile of its own."""
    iam = sandbox.session(names.OPERATOR).client("iam")
    user = f"mcp-without-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    statement = {
        "Effect": "Allow",
        "Action": [a for a in required_iam_actions() if a != action],
        "Resource": "*",
    }
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    iam.put_user_policy(UserName=user, PolicyName="reads", PolicyDocument=document)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    undo(lambda: iam.delete_user(UserName=user))
    undo(lambda: iam.delete_user_policy(UserName=user, PolicyName="reads"))
    undo(lambda: iam.delete_access_key(UserName=user, AccessKeyId=key["AccessKeyId"]))
    files = {"AWS_CONFIG_FILE": tmp_path / "config", "AWS_SHARED_CREDENTIALS_FILE": tmp_path / "credentials"}
    sections = {
        "AWS_CONFIG_FILE": {
            f"profile {user}": {"region": sandbox.region, "endpoint_url": sandbox.endpoint_url}
        },
        "AWS_SHARED_CREDENTIALS_FILE": {
            user: {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
        },
    }
    for variable, path in files.items():
        parser = configparser.ConfigParser()
        parser.read_dict(sections[variable])
        with path.open("w") as handle:
            parser.write(handle)
    return profile_session({k: str(v) for k, v in files.items()}, user)


def test_refused_route_tables_make_the_verdict_unknown_not_wrong(
    sandbox: Sandbox, lab: Lab, tmp_path: Path, undo: Undo
) -> None:
    session = _identity_without(sandbox, tmp_path, undo, "ec2:DescribeRouteTables")
    no_routes = AwsClients.create(ServerSettings(), session)
    healthy = lab.network()
    http = {"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
    port_80 = lab.network(egress=[http])

    state = lab.state(healthy.function, no_routes)
    assert [(g.source, g.error_code) for g in state.gaps] == [
        (f"ec2:DescribeRouteTables of route tables of VPC {healthy.vpc_id}", "AccessDenied")
    ]
    aws = _verdict(state, "aws-apis")
    assert (aws.allowed, state.https_egress_allowed) == (None, None)
    assert _says(aws, healthy.subnet_id, "route table could not be read")
    assert state.subnets[0].route_table is None
    # What can be read still decides: a security group that blocks HTTPS blocks it whatever the routes.
    assert lab.state(port_80.function, no_routes).https_egress_allowed is False
