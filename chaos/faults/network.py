"""``network``: remove the egress rules that carry HTTPS from the function's security groups (its AWS
calls then hang until the function times out); restore authorizes exactly those rules again.

A rule that also carries other traffic (all protocols, or a port range around 443) goes as a whole.
"""

from __future__ import annotations

from typing import Any

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.errors import ChaosRefused

HTTPS_PORT = 443


def carries_https(rule: dict[str, Any]) -> bool:
    """An egress rule (as EC2 describes it) covering tcp/443 towards some destination."""
    protocol = str(rule.get("IpProtocol"))
    covers_443 = protocol == "-1" or (
        protocol in ("tcp", "6") and rule.get("FromPort", 0) <= HTTPS_PORT <= rule.get("ToPort", 65535)
    )
    has_destination = (
        rule.get("IpRanges")
        or rule.get("Ipv6Ranges")
        or rule.get("PrefixListIds")
        or rule.get("UserIdGroupPairs")
    )
    return covers_443 and bool(has_destination)


def _capture(chaos: Chaos, target: Target) -> dict[str, Any]:
    group_ids = (target.configuration.get("VpcConfig") or {}).get("SecurityGroupIds") or []
    if not group_ids:
        raise ChaosRefused(f"nothing to block: {target.function_name} is not attached to a VPC")
    groups = chaos.read("ec2", "describe_security_groups", GroupIds=group_ids)["SecurityGroups"]
    removed = {
        group["GroupId"]: rules
        for group in groups
        if (rules := [rule for rule in group.get("IpPermissionsEgress", []) if carries_https(rule)])
    }
    if not removed:
        raise ChaosRefused(
            f"nothing to block: no security group of {target.function_name} allows HTTPS egress"
        )
    return {"groups": removed}


def _apply(chaos: Chaos, target: Target, prior: dict[str, Any]) -> None:
    for group_id, rules in prior["groups"].items():
        chaos.call(
            "ec2",
            "revoke_security_group_egress",
            GroupId=group_id,
            IpPermissions=rules,
            tolerate=("InvalidPermission.NotFound",),
        )


def _revert(chaos: Chaos, prior: dict[str, Any]) -> None:
    for group_id, rules in prior["groups"].items():
        chaos.call(
            "ec2",
            "authorize_security_group_egress",
            GroupId=group_id,
            IpPermissions=rules,
            tolerate=("InvalidPermission.Duplicate",),
        )


BLOCK_EGRESS = Fault("network", "HTTPS egress removed from the security groups", _capture, _apply, _revert)
