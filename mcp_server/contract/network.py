"""``get_network_state``: arguments and answer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_server.contract.common import ContractModel, Gaps, TargetArguments, omitted_when_null
from mcp_server.contract.declaration import ToolDeclaration

EgressDestination = Literal["aws-apis", "s3", "dynamodb"]


class GetNetworkStateArgs(TargetArguments):
    """Arguments of ``get_network_state``: the function's VPC, security groups, subnets, routes and network
    ACLs, and whether they let it reach AWS over HTTPS."""

    detail: bool = Field(
        default=False,
        description="Also what allows each allowed destination, and the prefix lists.",
    )


class SecurityGroupRule(ContractModel):
    """One ingress or egress rule of a security group."""

    ip_protocol: str = Field(description="'tcp', 'udp', 'icmp', ... or '-1' for all protocols.")
    from_port: int | None
    to_port: int | None
    ipv4_ranges: list[str] = Field(default_factory=list)
    ipv6_ranges: list[str] = Field(default_factory=list)
    prefix_list_ids: list[str] = Field(default_factory=list)
    referenced_group_ids: list[str] = Field(default_factory=list)


class SecurityGroup(ContractModel):
    """A security group attached to the function."""

    group_id: str
    group_name: str
    vpc_id: str | None
    ingress: list[SecurityGroupRule]
    egress: list[SecurityGroupRule]


class NetworkAclEntry(ContractModel):
    """One network ACL rule; rules are evaluated in ascending ``rule_number`` order."""

    rule_number: int = Field(ge=1, le=32767, description="32767 is the '*' rule, which denies what is left.")
    protocol: str = Field(description="IANA protocol number as a string, or '-1' for all protocols.")
    rule_action: Literal["allow", "deny"]
    egress: bool
    cidr_block: str | None
    ipv6_cidr_block: str | None = omitted_when_null()
    port_from: int | None = None
    port_to: int | None = None


class NetworkAcl(ContractModel):
    """The network ACL associated with a subnet."""

    network_acl_id: str
    is_default: bool = Field(default=False, description="Whether it is its VPC's default network ACL.")
    entries: list[NetworkAclEntry] = Field(
        description="In evaluation order: outbound entries by ascending rule number, then inbound ones."
    )


class Route(ContractModel):
    """One route of a route table."""

    destination: str = Field(description="A CIDR block, or a prefix list id ('pl-...').")
    target: str = Field(
        description="'local', or the target's id: 'nat-...' (NAT gateway), 'igw-...' (internet gateway), "
        "'vpce-...' (VPC endpoint), 'tgw-...', 'pcx-...', 'eni-...', ..."
    )
    state: str | None = Field(default=None, description="'active', or 'blackhole' when the target is gone.")


class RouteTable(ContractModel):
    """The route table a subnet uses."""

    route_table_id: str
    main: bool = Field(
        description="True when the subnet has no explicit association and uses its VPC's main route table."
    )
    default_route: Literal["nat-gateway", "internet-gateway", "other", "none"] = Field(
        description="What the 0.0.0.0/0 route targets; 'none' when there is no such route."
    )
    default_route_target: str | None = None
    routes: list[Route]


class Subnet(ContractModel):
    """A subnet the function is attached to."""

    subnet_id: str
    vpc_id: str
    cidr_block: str | None
    availability_zone: str | None
    network_acl: NetworkAcl | None
    route_table: RouteTable | None = None


class NatGateway(ContractModel):
    """A NAT gateway that a route of the function's subnets targets."""

    nat_gateway_id: str
    state: str = Field(description="'available' is the only state that forwards traffic.")
    connectivity_type: str | None = omitted_when_null(
        "'public' (reaches the internet) or 'private' (does not)."
    )
    subnet_id: str | None = None


class VpcEndpoint(ContractModel):
    """A VPC endpoint the function's subnets can reach: a gateway endpoint in one of their route tables, or an
    interface endpoint of their VPC."""

    vpc_endpoint_id: str
    endpoint_type: str = Field(description="'Gateway', 'Interface' or 'GatewayLoadBalancer'.")
    service_name: str
    state: str | None = None
    route_table_ids: list[str] = Field(default_factory=list)
    subnet_ids: list[str] = Field(default_factory=list)


class PrefixList(ContractModel):
    """A prefix list that a security-group rule or route names, or an AWS service's managed list."""

    prefix_list_id: str
    name: str | None = Field(default=None, description="e.g. 'com.amazonaws.ca-central-1.s3'.")
    cidrs: list[str] = Field(description="Its CIDR blocks (the first 50).")
    cidr_count: int = Field(ge=0, description="How many CIDR blocks it has in all.")


class EgressVerdict(ContractModel):
    """Whether the function can reach one destination over HTTPS (tcp/443, IPv4), and why."""

    destination: EgressDestination = Field(
        description="'aws-apis': AWS public endpoints in general (their address is not known: only "
        "0.0.0.0/0-wide rules and routes are sure to cover them); 's3' and 'dynamodb': the service's address "
        "ranges (its AWS-managed prefix list), reachable through a NAT gateway or a gateway VPC endpoint."
    )
    allowed: bool | None = Field(
        description="True only if every subnet of the function carries the traffic both ways (an invocation "
        "can land in any); False if a security group, route or network ACL blocks it; None when a part "
        "of the path could not be read (see gaps) or leads where the server cannot see."
    )
    path: str | None = Field(
        default=None,
        description="How the traffic leaves the subnets, e.g. 'nat-gateway nat-...' or "
        "'gateway-endpoint vpce-...'; None when no route carries it.",
    )
    reasons: list[str] = Field(
        description="The deciding elements, each naming its resource: when blocked, what blocks it; when "
        "unknown, what could not be determined; when allowed, with `detail`, the rules and routes that allow "
        "it (else none)."
    )


class NetworkStateResponse(ContractModel):
    """Answer of ``get_network_state``."""

    function_name: str
    in_vpc: bool
    vpc_id: str | None = None
    security_groups: list[SecurityGroup] = Field(default_factory=list)
    subnets: list[Subnet] = Field(default_factory=list)
    nat_gateways: list[NatGateway] = Field(default_factory=list)
    vpc_endpoints: list[VpcEndpoint] = Field(default_factory=list)
    prefix_lists: list[PrefixList] = Field(
        default_factory=list, description="The service prefix lists the verdicts use; only with `detail`."
    )
    egress: list[EgressVerdict] = Field(
        default_factory=list,
        description="One verdict per destination (computed by the server from security groups, routes, NAT "
        "gateways, gateway endpoints and network ACLs in both directions); empty outside a VPC.",
    )
    https_egress_allowed: bool | None = Field(
        default=None,
        description="The 'aws-apis' verdict of `egress`: whether outbound HTTPS to AWS public endpoints "
        "works from every subnet of the function. None outside a VPC, or when it could not be determined.",
    )
    note: str | None = omitted_when_null()
    error: str | None = omitted_when_null()
    gaps: Gaps = Field(default_factory=list)


GET_NETWORK_STATE = ToolDeclaration(
    name="get_network_state",
    title="VPC networking",
    description=(
        "For a function in a VPC: security groups, network ACLs, route tables, NAT gateways and endpoints, "
        "and for each destination (AWS APIs, S3, DynamoDB) whether HTTPS can leave and which rule decides."
    ),
    arguments=GetNetworkStateArgs,
    response=NetworkStateResponse,
    implementation="mcp_server.tools.network:network_state",
    reads=(
        ("lambda", "GetFunctionConfiguration"),
        ("ec2", "DescribeSecurityGroups"),
        ("ec2", "DescribeSubnets"),
        ("ec2", "DescribeNetworkAcls"),
        ("ec2", "DescribeRouteTables"),
        ("ec2", "DescribeNatGateways"),
        ("ec2", "DescribeVpcEndpoints"),
        ("ec2", "DescribeManagedPrefixLists"),
        ("ec2", "GetManagedPrefixListEntries"),
    ),
    order=40,
)
