"""Faults on a function's VPC capacity: where Lambda makes its network interfaces, and whether it can.

- ``vpc-attach`` (``into=<function>``): attach a function that is in no VPC to the subnets of ``into``, with
  a security group of its own (EC2's default: all egress), so that Lambda gives it interfaces of its own
  there. Restore detaches it (Lambda deletes the interfaces no other function uses) and deletes the group.
  Not a fault by itself: the stage of one.
- ``subnet-full``: take every free address of the function's subnets with network interfaces of the
  operator's own (one primary and up to 49 secondary addresses each), as another workload growing into
  the subnet would. A function already connected keeps working; one whose interfaces Lambda must make
  again (created, moved, or back from ``Inactive``) cannot get them (``SubnetOutOfIPAddresses``). Restore
  deletes those interfaces, then sets the function's VPC settings again as they are, which makes Lambda
  connect it again at once rather than at its next invocation.
"""

from __future__ import annotations

from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import give_up

ADDRESSES_PER_INTERFACE = 50  # a primary and 49 secondary addresses: within EC2's per-interface limits


def _vpc(configuration: dict[str, Any]) -> dict[str, list[str]]:
    vpc = configuration.get("VpcConfig") or {}
    return {
        "SubnetIds": list(vpc.get("SubnetIds") or []),
        "SecurityGroupIds": list(vpc.get("SecurityGroupIds") or []),
    }


def _capture_attach(chaos: Chaos, target: Target) -> dict[str, Any]:
    if _vpc(target.configuration)["SubnetIds"]:
        raise ChaosRefused(f"{target.function_name} is in a VPC already: nothing to attach")
    return {"function": target.function_name}


def _apply_attach(chaos: Chaos, target: Target, prior: dict[str, Any], *, into: str) -> None:
    try:
        source = _vpc(chaos.read("lambda", "get_function_configuration", FunctionName=into))
    except ChaosError as error:
        give_up(chaos, VPC_ATTACH.name, target.function_name, error, unchanged=True)
    if not source["SubnetIds"]:
        refused = ChaosRefused(
            f"{into} is in no VPC: there are no subnets to attach {target.function_name} to"
        )
        give_up(chaos, VPC_ATTACH.name, target.function_name, refused, unchanged=True)
    subnet = chaos.read("ec2", "describe_subnets", SubnetIds=source["SubnetIds"][:1])["Subnets"][0]
    created = chaos.call(
        "ec2",
        "create_security_group",
        GroupName=_group_name(target.function_name),
        Description=f"{target.function_name}: attached beside {into}",
        VpcId=subnet["VpcId"],
    )
    group = created["GroupId"] if created else "<the group just made>"  # a dry run makes nothing
    vpc = {"SubnetIds": source["SubnetIds"], "SecurityGroupIds": [group]}
    chaos.call("lambda", "update_function_configuration", FunctionName=target.function_name, VpcConfig=vpc)


def _group_name(function: str) -> str:
    return f"{function}-attached-sg"


def _revert_attach(chaos: Chaos, prior: dict[str, Any]) -> None:
    detached: dict[str, list[str]] = {"SubnetIds": [], "SecurityGroupIds": []}
    chaos.call("lambda", "update_function_configuration", FunctionName=prior["function"], VpcConfig=detached)
    where = [{"Name": "group-name", "Values": [_group_name(prior["function"])]}]
    for group in chaos.read("ec2", "describe_security_groups", Filters=where)["SecurityGroups"]:
        chaos.call(
            "ec2", "delete_security_group", GroupId=group["GroupId"], tolerate=("InvalidGroup.NotFound",)
        )


VPC_ATTACH = Fault(
    "vpc-attach",
    "attached to another function's subnets with a group of its own",
    _capture_attach,
    _apply_attach,
    _revert_attach,
)


def _capture_fill(chaos: Chaos, target: Target) -> dict[str, Any]:
    vpc = _vpc(target.configuration)
    if not vpc["SubnetIds"]:
        raise ChaosRefused(f"nothing to fill: {target.function_name} is not attached to a VPC")
    return {"function": target.function_name, "vpc": vpc}


def _apply_fill(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    subnets = chaos.read("ec2", "describe_subnets", SubnetIds=prior["vpc"]["SubnetIds"])["Subnets"]
    for subnet in subnets:
        free = int(subnet["AvailableIpAddressCount"])
        while free > 0:
            take = min(free, ADDRESSES_PER_INTERFACE)
            chaos.call(
                "ec2",
                "create_network_interface",
                SubnetId=subnet["SubnetId"],
                SecondaryPrivateIpAddressCount=take - 1,
                Description=f"addresses taken beside {prior['function']}",
                TagSpecifications=[{"ResourceType": "network-interface", "Tags": [_tag(prior["function"])]}],
            )
            free -= take


def _tag(function: str) -> dict[str, str]:
    """What marks the interfaces the fault made (found again by restore: the ledger holds the prior state)."""
    return {"Key": "incident-chaos-subnet-full", "Value": function}


def _revert_fill(chaos: Chaos, prior: dict[str, Any]) -> None:
    tag = _tag(prior["function"])
    where = [{"Name": f"tag:{tag['Key']}", "Values": [tag["Value"]]}]
    for interface in chaos.read("ec2", "describe_network_interfaces", Filters=where)["NetworkInterfaces"]:
        chaos.call(
            "ec2",
            "delete_network_interface",
            NetworkInterfaceId=interface["NetworkInterfaceId"],
            tolerate=("InvalidNetworkInterfaceID.NotFound",),
        )
    chaos.call(
        "lambda", "update_function_configuration", FunctionName=prior["function"], VpcConfig=prior["vpc"]
    )


SUBNET_FULL = Fault(
    "subnet-full",
    "every free address of the function's subnets taken",
    _capture_fill,
    _apply_fill,
    _revert_fill,
)
