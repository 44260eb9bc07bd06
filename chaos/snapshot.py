"""What the faults can change, read back as canonical JSON: equal snapshots mean an exact restore."""

from __future__ import annotations

import json
from typing import Any

import boto3

_CONFIG_KEYS = ("Role", "Timeout", "MemorySize", "Handler", "Runtime", "Environment", "VpcConfig")


def _sorted(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))


def world_snapshot(session: boto3.Session, function_name: str) -> str:
    """The function's configuration, tags and reserved concurrency; its role's inline and attached
    policies; its security groups' egress rules. Lists whose order AWS does not promise are sorted."""
    lambda_, iam, ec2 = session.client("lambda"), session.client("iam"), session.client("ec2")
    function = lambda_.get_function(FunctionName=function_name)
    config = function["Configuration"]
    role = config["Role"].rsplit("/", 1)[-1]
    inline = {
        name: iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        for name in iam.list_role_policies(RoleName=role)["PolicyNames"]
    }
    attached = sorted(
        p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
    )
    group_ids = (config.get("VpcConfig") or {}).get("SecurityGroupIds") or []
    groups = ec2.describe_security_groups(GroupIds=group_ids)["SecurityGroups"] if group_ids else []
    snapshot = {
        "function": {key: config.get(key) for key in _CONFIG_KEYS},
        "tags": function.get("Tags", {}),
        "reserved_concurrency": lambda_.get_function_concurrency(FunctionName=function_name).get(
            "ReservedConcurrentExecutions"
        ),
        "role": {"name": role, "inline_policies": inline, "attached_policies": attached},
        "egress": {
            group["GroupId"]: _sorted(
                [
                    rule | {"IpRanges": _sorted(rule.get("IpRanges", []))}
                    for rule in group["IpPermissionsEgress"]
                ]
            )
            for group in groups
        },
    }
    return json.dumps(snapshot, sort_keys=True, indent=1)
