"""Everything an injector can change, read back as canonical JSON: equal snapshots mean an exact restore.

Covered: every function (configuration, environment, code hash, dead-letter queue, tags, reserved concurrency,
versions, aliases, the resource policy statements of the function and of each alias, asynchronous invocation
configuration); their execution roles (inline policies, attached policies, permissions boundary) and the
account's own managed policies with their default documents; the security groups, network ACLs, route tables
and free subnet addresses of the functions' VPCs; the KMS keys of their environment variables (state, and who
their grants let do what); the DynamoDB tables and S3 buckets the functions' environments name, with every
item and every object; the event paths: every event source mapping (by function and source: state, batch size,
batching window, response types, a stream's retries, record age, bisection and on-failure destination), every
queue's configuration attributes (visibility timeout, redrive policy, ...; not its message counts) and every
SNS subscription (topic, protocol, endpoint); and the names of every role, alarm, log group and topic (what an
injector creates must be gone again). Lists whose order AWS does not promise are sorted; ids AWS assigns anew
on every write (security group rule ids, revision ids, modification times) are left out, and so are a
mapping's UUID and a subscription's ARN: a mapping or subscription deleted and created again by a restore
comes back under a new one, and is the same configuration.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import boto3
from botocore.exceptions import ClientError

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
    "KMSKeyArn",
)
_MAPPING_KEYS = (
    "State",
    "BatchSize",
    "MaximumBatchingWindowInSeconds",
    "FunctionResponseTypes",
    "MaximumRetryAttempts",
    "MaximumRecordAgeInSeconds",
    "BisectBatchOnFunctionError",
    "DestinationConfig",
)
_INVOKE_CONFIG_KEYS = ("MaximumRetryAttempts", "MaximumEventAgeInSeconds", "DestinationConfig")
# What a queue is configured with; its counts and timestamps change with traffic and are left out.
_QUEUE_KEYS = (
    "VisibilityTimeout",
    "RedrivePolicy",
    "RedriveAllowPolicy",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
    "MaximumMessageSize",
    "Policy",
)
_JSON_QUEUE_KEYS = ("RedrivePolicy", "RedriveAllowPolicy", "Policy")
_SERVICES = ("lambda", "iam", "ec2", "dynamodb", "s3", "cloudwatch", "logs", "sqs", "sns", "kms")
# A session's clients, made once: creating ten clients costs more than the reads of a small world.
_CLIENTS: weakref.WeakKeyDictionary[boto3.Session, dict[str, Any]] = weakref.WeakKeyDictionary()


def _sorted(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))


def _pages(client: Any, operation: str, key: str, **params: Any) -> list[Any]:
    return [item for page in client.get_paginator(operation).paginate(**params) for item in page.get(key, [])]


def _absent_is_none(read: Any) -> Any:
    """``read()``, or None where the resource does not exist (no resource policy, no invoke config)."""
    try:
        return read()
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise


def _resource_policy(lambda_: Any, name: str, qualifier: str | None = None) -> list[Any] | None:
    params = {"FunctionName": name} | ({"Qualifier": qualifier} if qualifier else {})
    policy = _absent_is_none(lambda: lambda_.get_policy(**params))
    return None if policy is None else _sorted(json.loads(policy["Policy"]).get("Statement", []))


def _invoke_config(lambda_: Any, name: str) -> dict[str, Any] | None:
    config = _absent_is_none(lambda: lambda_.get_function_event_invoke_config(FunctionName=name))
    return None if config is None else {key: config.get(key) for key in _INVOKE_CONFIG_KEYS}


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
                | {"resource_policy": _resource_policy(lambda_, name, a["Name"])}
                for a in aliases
            ]
        ),
        "resource_policy": _resource_policy(lambda_, name),
        "event_invoke_config": _invoke_config(lambda_, name),
    }


def _iam(iam: Any) -> dict[str, Any]:
    """Every role (its inline policies, attached policies and permissions boundary) and the account's own
    managed policies with their default documents, from IAM's one account-wide read
    (``GetAccountAuthorizationDetails``) instead of four reads a role and one a policy."""
    roles: dict[str, Any] = {}
    managed: dict[str, Any] = {}
    pages = iam.get_paginator("get_account_authorization_details").paginate(
        Filter=["Role", "LocalManagedPolicy"]
    )
    for page in pages:
        for role in page.get("RoleDetailList", []):
            roles[role["RoleName"]] = {
                "inline_policies": {
                    p["PolicyName"]: p["PolicyDocument"] for p in role.get("RolePolicyList", [])
                },
                "attached_policies": sorted(p["PolicyArn"] for p in role.get("AttachedManagedPolicies", [])),
                "permissions_boundary": (role.get("PermissionsBoundary") or {}).get("PermissionsBoundaryArn"),
            }
        for policy in page.get("Policies", []):
            versions = policy.get("PolicyVersionList", [])
            managed[policy["Arn"]] = next(
                (v["Document"] for v in versions if v.get("IsDefaultVersion")), None
            )
    return {"roles": roles, "managed_policies": managed}


def _rule(rule: dict[str, Any]) -> dict[str, Any]:
    return {key: _sorted(value) if isinstance(value, list) else value for key, value in rule.items()}


def _network(ec2: Any, vpc_ids: list[str]) -> dict[str, Any]:
    if not vpc_ids:
        return {}
    where = [{"Name": "vpc-id", "Values": vpc_ids}]
    groups = _pages(ec2, "describe_security_groups", "SecurityGroups", Filters=where)
    acls = _pages(ec2, "describe_network_acls", "NetworkAcls", Filters=where)
    tables = _pages(ec2, "describe_route_tables", "RouteTables", Filters=where)
    subnets = _pages(ec2, "describe_subnets", "Subnets", Filters=where)
    return {
        # what holds their addresses may come back under new ids (Lambda's own interfaces): the count is equal
        "free_addresses": {subnet["SubnetId"]: subnet["AvailableIpAddressCount"] for subnet in subnets},
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


def _mappings(lambda_: Any) -> dict[str, Any]:
    """Every event source mapping, under ``<function ARN> <- <source ARN>``."""
    return {
        f"{m['FunctionArn']} <- {m['EventSourceArn']}": {key: m.get(key) for key in _MAPPING_KEYS}
        for m in _pages(lambda_, "list_event_source_mappings", "EventSourceMappings")
    }


def _queues(sqs: Any) -> dict[str, Any]:
    """Every queue's configuration attributes, under its name; the JSON ones parsed."""
    queues = {}
    for url in _pages(sqs, "list_queues", "QueueUrls"):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        queues[url.rsplit("/", 1)[-1]] = {
            key: json.loads(attributes[key]) if key in _JSON_QUEUE_KEYS else attributes[key]
            for key in _QUEUE_KEYS
            if key in attributes
        }
    return queues


def _subscriptions(sns: Any) -> list[Any]:
    return _sorted(
        [
            {key: s[key] for key in ("TopicArn", "Protocol", "Endpoint")}
            for s in _pages(sns, "list_subscriptions", "Subscriptions")
        ]
    )


def _key(kms: Any, arn: str) -> dict[str, Any]:
    """A customer managed key's state and who its grants let do what (grant ids are new on every grant)."""
    grants = _pages(kms, "list_grants", "Grants", KeyId=arn)
    return {
        "state": kms.describe_key(KeyId=arn)["KeyMetadata"]["KeyState"],
        "grants": sorted({(g["GranteePrincipal"], tuple(sorted(g["Operations"]))) for g in grants}),
    }


def _names(client: Any, operation: str, key: str, field: str) -> list[str]:
    return sorted(str(item[field]) for item in _pages(client, operation, key))


def world_state(
    session: boto3.Session, functions: Collection[str] | None = None, earlier: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The state every injector can change (see the module docstring). The reads go out in parallel
    (clients are thread-safe). With ``functions``, only those functions are read: every other one's section
    is ``earlier``'s (a state read before, when a drill scenario touched none of them), or None where
    ``earlier`` had none (a function that appeared since)."""
    if session not in _CLIENTS:
        _CLIENTS[session] = {service: session.client(service) for service in _SERVICES}
    lambda_, iam, ec2, dynamodb, s3, cloudwatch, logs, sqs, sns, kms = _CLIENTS[session].values()
    with ThreadPoolExecutor(max_workers=8) as pool:
        # ListFunctions returns every function's configuration: what the other resources are found from
        configs = {f["FunctionName"]: f for f in _pages(lambda_, "list_functions", "Functions")}
        names = sorted(configs)
        read = [name for name in names if functions is None or name in functions]
        identities = pool.submit(_iam, iam)
        fresh = dict(zip(read, pool.map(lambda name: _function(lambda_, name), read), strict=True))
        kept = (earlier or {}).get("functions", {})
        roles = sorted({str(c["Role"]).rsplit("/", 1)[-1] for c in configs.values()})
        subnets = sorted(
            {s for c in configs.values() for s in (c.get("VpcConfig") or {}).get("SubnetIds") or []}
        )
        vpcs = (
            sorted({s["VpcId"] for s in ec2.describe_subnets(SubnetIds=subnets)["Subnets"]})
            if subnets
            else []
        )
        named = {
            str(v)
            for c in configs.values()
            for v in ((c.get("Environment") or {}).get("Variables") or {}).values()
        }
        keys = sorted({str(c["KMSKeyArn"]) for c in configs.values() if c.get("KMSKeyArn")})
        tables = sorted(named & set(_pages(dynamodb, "list_tables", "TableNames")))
        buckets = sorted(named & {b["Name"] for b in s3.list_buckets().get("Buckets", [])})
        network = pool.submit(_network, ec2, vpcs)
        named_resources = {
            "alarms": pool.submit(_names, cloudwatch, "describe_alarms", "MetricAlarms", "AlarmName"),
            "log_groups": pool.submit(_names, logs, "describe_log_groups", "logGroups", "logGroupName"),
            "topics": pool.submit(_names, sns, "list_topics", "Topics", "TopicArn"),
        }
        event_paths: dict[str, Future[Any]] = {
            "event_source_mappings": pool.submit(_mappings, lambda_),
            "queues": pool.submit(_queues, sqs),
            "subscriptions": pool.submit(_subscriptions, sns),
        }
        return {
            "functions": {name: fresh[name] if name in fresh else kept.get(name) for name in names},
            "roles": {role: identities.result()["roles"].get(role) for role in roles},  # None: it is gone
            "tables": dict(zip(tables, pool.map(lambda t: _table(dynamodb, t), tables), strict=True)),
            "buckets": dict(zip(buckets, pool.map(lambda b: _bucket(s3, b), buckets), strict=True)),
            "keys": dict(zip(keys, pool.map(lambda k: _key(kms, k), keys), strict=True)),
            "managed_policies": identities.result()["managed_policies"],
            "network": network.result(),
            "names": {kind: future.result() for kind, future in named_resources.items()}
            | {"roles": sorted(identities.result()["roles"])},
            **{kind: future.result() for kind, future in event_paths.items()},
        }


def render(state: dict[str, Any]) -> str:
    """A state as sorted, indented JSON: equal texts, equal worlds."""
    return json.dumps(state, sort_keys=True, indent=1, default=str)


def world_snapshot(session: boto3.Session) -> str:
    """The whole state, rendered."""
    return render(world_state(session))
