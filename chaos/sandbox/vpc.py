"""The sandbox's VPC, where ``data-processor`` runs: a private subnet whose default route goes to a NAT
gateway in the public subnet, behind a network ACL and an HTTPS-only security group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaos.sandbox import names


@dataclass(frozen=True)
class Network:
    vpc_id: str
    private_subnet_id: str
    public_subnet_id: str
    route_table_id: str
    network_acl_id: str
    nat_gateway_id: str
    security_group_id: str


def create_network(ec2: Any, region: str) -> Network:
    """A VPC whose private subnet reaches AWS through a NAT gateway in the public subnet."""
    vpc_id = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    zone = f"{region}a"
    public = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.0.0/24", AvailabilityZone=zone)["Subnet"]
    private = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.1.0/24", AvailabilityZone=zone)["Subnet"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    public_routes = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_routes, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    ec2.associate_route_table(RouteTableId=public_routes, SubnetId=public["SubnetId"])
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public["SubnetId"], AllocationId=allocation)["NatGateway"]
    private_routes = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(
        RouteTableId=private_routes, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat["NatGatewayId"]
    )
    ec2.associate_route_table(RouteTableId=private_routes, SubnetId=private["SubnetId"])
    acl_id = _private_acl(ec2, vpc_id, private["SubnetId"])

    group_id = ec2.create_security_group(
        GroupName=names.SECURITY_GROUP_NAME, Description="data-processor: HTTPS egress only", VpcId=vpc_id
    )["GroupId"]
    # Replace the default allow-all egress with HTTPS only, as a hardened function would have.
    ec2.revoke_security_group_egress(
        GroupId=group_id, IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    )
    ec2.authorize_security_group_egress(
        GroupId=group_id,
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": 443,
                "ToPort": 443,
                "IpRanges": [{"CidrIp": "0.0.0.0/0", "Description": "HTTPS to AWS APIs"}],
            }
        ],
    )
    return Network(
        vpc_id, private["SubnetId"], public["SubnetId"], private_routes, acl_id, nat["NatGatewayId"], group_id
    )


def _private_acl(ec2: Any, vpc_id: str, subnet_id: str) -> str:
    """The private subnet's network ACL: HTTPS out, the return traffic (ephemeral ports) in."""
    acl_id: str = ec2.create_network_acl(
        VpcId=vpc_id,
        TagSpecifications=[
            {"ResourceType": "network-acl", "Tags": [{"Key": "Name", "Value": names.NACL_NAME}]}
        ],
    )["NetworkAcl"]["NetworkAclId"]
    for egress, ports in ((True, (443, 443)), (False, (1024, 65535))):
        ec2.create_network_acl_entry(
            NetworkAclId=acl_id,
            RuleNumber=100,
            Protocol="6",
            RuleAction="allow",
            Egress=egress,
            CidrBlock="0.0.0.0/0",
            PortRange={"From": ports[0], "To": ports[1]},
        )
    default = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}])[
        "NetworkAcls"
    ][0]
    association = next(a for a in default["Associations"] if a["SubnetId"] == subnet_id)
    ec2.replace_network_acl_association(
        AssociationId=association["NetworkAclAssociationId"], NetworkAclId=acl_id
    )
    return acl_id
