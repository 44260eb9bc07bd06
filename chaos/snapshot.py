"""Everything an injector can change, read back as canonical JSON: equal snapshots mean an exact restore.

Covered: every function (configuration, environment, code hash, tags, reserved concurrency, versions,
aliases); their execution roles (inline policies, attached policies, permissions boundary) and the
account's own managed policies with their default documents; the security groups, network ACLs and route
tables of the functions' VPCs; the DynamoDB tables and S3 buckets the functions' environments name,
with every item and every object; the event paths (``chaos.event_paths_snapshot``: mappings, resource
policies, asynchronous invocation configuration, queue attributes, SNS subscriptions); and the names
of every role, alarm and log group (what an injector creates must be gone again). Lists whose order AWS
does not promise are sorted; ids AWS assigns anew on every write (security group rule ids, revision
ids, modification times) are left out.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3

from chaos.event_paths_snapshot import account_event_paths, function_event_paths

_CONFIG_KEYS = (
    "Role",
    "Timeout",
    "MemorySize",
    "Handler",
    "Runtime",
    "Environment",
    "VpcConfig",
    "CodeSha256",
    "Layers",
    "EphemeralStorage",
    "LoggingConfig",
    "DeadLetterConfig",
)


def _sorted(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))


def _pages(client: Any, operation: str, key: str, **params: Any) -> list[Any]:
    return [item for page in client.get_paginator(operation).paginate(**params) for item in page.get(key, [])]


def _function(lambda_: Any, name: str) -> dict[str, Any]:
    function = lambda_.get_function(FunctionName=name)
    config = function["Configuration"]
    versions = _pages(lambda_, "list_versions_by_function", "Versions", FunctionName=name)
    aliases = _pages(lambda_, "list_aliases", "Aliases", FunctionName=name)
    return {
        "configuration": {key: config.get(key) for key in _CONFIG_KEYS},
        "tags": function.get("Tags", {}),
        "reserved_concurrency": lambda_.get_function_concurrency(FunctionName=name).get(
            "ReservedConcurrentExecutions"
        ),
        "versions": _sorted([{"Version": v["Version"], "CodeSha256": v.get("CodeSha256")} for v in versions]),
        "aliases": _sorted(
            [
                {k: a.get(k) for k in ("Name", "FunctionVersion", "RoutingConfig", "Description")}
                for a in aliases
            ]
        ),
        "event_paths": function_event_paths(lambda_, name),
    }


def _role(iam: Any, name: str) -> dict[str, Any]:
    role = iam.get_role(RoleName=name)["Role"]
    inline = {
        policy: iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"]
        for policy in _pages(iam, "list_role_policies", "PolicyNames", RoleName=name)
    }
    attached = _pages(iam, "list_attached_role_policies", "AttachedPolicies", RoleName=name)
    return {
        "inline_policies": inline,
        "attached_policies": sorted(p["PolicyArn"] for p in attached),
        "permissions_boundary": (role.get("PermissionsBoundary") or {}).get("PermissionsBoundaryArn"),
    }


def _managed_policies(iam: Any) -> dict[str, Any]:
    policies = {}
    for policy in _pages(iam, "list_policies", "Policies", Scope="Local"):
        version = iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=policy["DefaultVersionId"])
        policies[policy["Arn"]] = version["PolicyVersion"]["Document"]
    return policies


def _rule(rule: dict[str, Any]) -> dict[str, Any]:
    return {key: _sorted(value) if isinstance(value, list) else value for key, value in rule.items()}


def _network(ec2: Any, vpc_ids: list[str]) -> dict[str, Any]:
    if not vpc_ids:
        return {}
    where = [{"Name": "vpc-id", "Values": vpc_ids}]
    groups = _pages(ec2, "describe_security_groups", "SecurityGroups", Filters=where)
    acls = _pages(ec2, "describe_network_acls", "NetworkAcls", Filters=where)
    tables = _pages(ec2, "describe_route_tables", "RouteTables", Filters=where)
    return {
        "security_groups": {
            g["GroupId"]: {
                "ingress": _sorted([_rule(r) for r in g.get("IpPermissions", [])]),
                "egress": _sorted([_rule(r) for r in g.get("IpPermissionsEgress", [])]),
            }
            for g in groups
        },
        "network_acls": {
            acl["NetworkAclId"]: {
                "entries": _sorted(acl.get("Entries", [])),
                "subnets": sorted(a["SubnetId"] for a in acl.get("Associations", [])),
            }
            for acl in acls
        },
        "route_tables": {
            table["RouteTableId"]: {
                "routes": _sorted([{k: v for k, v in r.items() if k != "Origin"} for r in table["Routes"]]),
                "subnets": sorted(a["SubnetId"] for a in table.get("Associations", []) if "SubnetId" in a),
            }
            for table in tables
        },
    }


def _table(dynamodb: Any, name: str) -> dict[str, Any]:
    table = dynamodb.describe_table(TableName=name)["Table"]
    items = _pages(dynamodb, "scan", "Items", TableName=name)
    return {
        "key_schema": table["KeySchema"],
        "attributes": _sorted(table["AttributeDefinitions"]),
        "billing": (table.get("BillingModeSummary") or {}).get("BillingMode"),
        "items": _sorted(items),
    }


def _bucket(s3: Any, name: str) -> dict[str, Any]:
    objects = {}
    for entry in _pages(s3, "list_objects_v2", "Contents", Bucket=name):
        body = s3.get_object(Bucket=name, Key=entry["Key"])["Body"].read()
        objects[entry["Key"]] = hashlib.sha256(body).hexdigest()
    return {"objects": objects}


def _names(client: Any, operation: str, key: str, field: str) -> list[str]:
    return sorted(str(item[field]) for item in _pages(client, operation, key))


def world_snapshot(session: boto3.Session) -> str:
    """The state every injector can change (see the module docstring), as sorted, indented JSON. The
    reads go out in parallel (clients are thread-safe): a drill takes one after every scenario."""
    lambda_, iam, ec2 = session.client("lambda"), session.client("iam"), session.client("ec2")
    dynamodb, s3 = session.client("dynamodb"), session.client("s3")
    cloudwatch, logs = session.client("cloudwatch"), session.client("logs")
    with ThreadPoolExecutor(max_workers=8) as pool:
        names = sorted(f["FunctionName"] for f in _pages(lambda_, "list_functions", "Functions"))
        managed = pool.submit(_managed_policies, iam)
        functions = dict(zip(names, pool.map(lambda name: _function(lambda_, name), names), strict=True))
        configs = [f["configuration"] for f in functions.values()]
        roles = sorted({str(c["Role"]).rsplit("/", 1)[-1] for c in configs})
        subnets = sorted({s for c in configs for s in (c.get("VpcConfig") or {}).get("SubnetIds") or []})
        vpcs = (
            sorted({s["VpcId"] for s in ec2.describe_subnets(SubnetIds=subnets)["Subnets"]})
            if subnets
            else []
        )
        named = {
            str(v) for c in configs for v in ((c.get("Environment") or {}).get("Variables") or {}).values()
        }
        tables = sorted(named & set(_pages(dynamodb, "list_tables", "TableNames")))
        buckets = sorted(named & {b["Name"] for b in s3.list_buckets().get("Buckets", [])})
        network = pool.submit(_network, ec2, vpcs)
        event_paths = pool.submit(account_event_paths, session.client("sqs"), session.client("sns"))
        named_resources = {
            "roles": pool.submit(_names, iam, "list_roles", "Roles", "RoleName"),
            "alarms": pool.submit(_names, cloudwatch, "describe_alarms", "MetricAlarms", "AlarmName"),
            "log_groups": pool.submit(_names, logs, "describe_log_groups", "logGroups", "logGroupName"),
        }
        snapshot = {
            "functions": functions,
            "roles": dict(zip(roles, pool.map(lambda role: _role(iam, role), roles), strict=True)),
            "tables": dict(zip(tables, pool.map(lambda t: _table(dynamodb, t), tables), strict=True)),
            "buckets": dict(zip(buckets, pool.map(lambda b: _bucket(s3, b), buckets), strict=True)),
            "managed_policies": managed.result(),
            "network": network.result(),
            "event_paths": event_paths.result(),
            "names": {kind: future.result() for kind, future in named_resources.items()},
        }
    return json.dumps(snapshot, sort_keys=True, indent=1, default=str)
