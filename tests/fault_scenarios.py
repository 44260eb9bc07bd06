"""Reproducible fault scenarios on the sandbox world: one per fault class, plus healthy look-alikes.

Each scenario changes the world AS THE OPERATOR (so CloudTrail records the change, the "trigger", with the
operator's identity), registers an exact restore of what it changed, and names the invocations that make
the function fail the way that fault class fails on Lambda. :func:`run_scenario` does it all: a fresh
CloudWatch, the change, the change visible to ``LookupEvents``, the invocations.

    steps = RestoreSteps()
    undo(steps.restore)                     # the conftest fixture: restored even if the test fails
    run = run_scenario(sandbox, runtime, steps, SCENARIOS["network_block"])
    assert {i.status for i in run.invocations} == {"timed_out"}
    steps.restore()                         # the world as it was (a second call does nothing)

``fault`` is the class a diagnostician should name: ``permission_loss``, ``throttling``, ``network_block``,
``timeout``, ``out_of_memory``, ``bad_deploy``, ``configuration_error``, ``dependency_failure``, or
``none`` when nothing is wrong (whatever the logs or configuration may suggest).
"""

from __future__ import annotations

import copy
import io
import json
import time
import urllib.request
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

from chaos.sandbox import names
from chaos.sandbox.invoke import default_event
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from tests.packages import zip_files

Undo = Callable[[Callable[[], object]], None]

OPERATOR_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.OPERATOR}"
IAM_EVENTS_REGION = "us-east-1"  # CloudTrail records IAM, a global service, there
CLOUDTRAIL_WAIT_SECONDS = 10.0
WRONG_BUCKET = f"{names.INPUT_BUCKET}-archive"
MISSING_HANDLER = "data_processor.process"  # data_processor.py defines only `handler`
PLANTED_LINE = (
    f"User: arn:aws:sts::{names.ACCOUNT_ID}:assumed-role/x/y is not authorized to perform: iam:PassRole "
    f"on resource: arn:aws:iam::{names.ACCOUNT_ID}:role/admin"
)


class RestoreSteps:
    """An ``undo`` that can also be run on demand: :meth:`restore` runs the steps registered so far, last
    first, each once. Register ``steps.restore`` with the conftest ``undo`` fixture as a safety net."""

    def __init__(self) -> None:
        self._steps: list[Callable[[], object]] = []

    def __call__(self, step: Callable[[], object]) -> None:
        self._steps.append(step)

    def restore(self) -> None:
        while self._steps:
            self._steps.pop()()


@dataclass(frozen=True)
class Broken:
    """What a scenario did, and how to invoke the function so that it shows."""

    changes: tuple[str, ...]  # CloudTrail event names of the operator's calls, in order ("" = none)
    trigger_region: str  # where CloudTrail records them (IAM: us-east-1)
    events: tuple[Any, ...]  # invocation events, cycled over the invocations
    qualifier: str | None = None
    burst: bool = False  # all invocations at once (concurrently), else one after the other
    detail: dict[str, Any] = field(default_factory=dict)  # what changed, for people

    @property
    def trigger(self) -> str | None:
        """The call that broke it (the last change), as CloudTrail names it; None when nothing changed."""
        return self.changes[-1] if self.changes else None


@dataclass(frozen=True)
class Scenario:
    name: str
    function: str
    fault: str  # the fault class a diagnostician should name ("none": healthy)
    break_: Callable[[Sandbox, LocalLambdaRuntime, Undo], Broken]
    invoke_count: int

    def lambda_name(self, sandbox: Sandbox, broken: Broken) -> str:
        """What to pass to the tools as ``lambda_name``: the name, or the qualified ARN (the tools take a
        qualifier only in ARN form: ``arn:...:function:orders-api:live``)."""
        if broken.qualifier is None:
            return self.function
        return f"{sandbox.world.function_arns[self.function]}:{broken.qualifier}"


@dataclass(frozen=True)
class Run:
    scenario: Scenario
    broken: Broken
    invocations: list[Invocation]
    started: datetime  # just before the change

    @property
    def statuses(self) -> list[str]:
        return [i.status for i in self.invocations]

    @property
    def error_types(self) -> set[str | None]:
        return {i.error_type for i in self.invocations}


# --- the changes -------------------------------------------------------------------------------------


def _region(sandbox: Sandbox) -> str:
    return sandbox.region


def _lambda(sandbox: Sandbox) -> Any:
    return sandbox.session(names.OPERATOR).client("lambda")


def _inline_policy(sandbox: Sandbox) -> dict[str, Any]:
    iam = sandbox.session(names.OPERATOR).client("iam")
    document: dict[str, Any] = iam.get_role_policy(
        RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME
    )["PolicyDocument"]
    return document


def _put_inline_policy(sandbox: Sandbox, document: dict[str, Any]) -> None:
    sandbox.session(names.OPERATOR).client("iam").put_role_policy(
        RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME, PolicyDocument=json.dumps(document)
    )


def _permission_wrong_resource(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    original = _inline_policy(sandbox)
    changed = copy.deepcopy(original)
    statements = [s for s in changed["Statement"] if s.get("Action") == "s3:GetObject"]
    assert len(statements) == 1, f"expected one s3:GetObject statement in {original}"
    statements[0]["Resource"] = f"arn:aws:s3:::{WRONG_BUCKET}/*"
    _put_inline_policy(sandbox, changed)
    undo(lambda: _put_inline_policy(sandbox, original))
    return Broken(
        ("PutRolePolicy",),
        IAM_EVENTS_REGION,
        (names.input_event(0), names.input_event(1)),
        detail={"role": names.ROLE_NAME, "policy": names.INLINE_POLICY_NAME, "get_object_on": WRONG_BUCKET},
    )


def _permission_removed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    original = _inline_policy(sandbox)
    iam = sandbox.session(names.OPERATOR).client("iam")
    iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
    undo(lambda: _put_inline_policy(sandbox, original))
    return Broken(
        ("DeleteRolePolicy",),
        IAM_EVENTS_REGION,
        (names.input_event(0), names.input_event(1)),
        detail={"role": names.ROLE_NAME, "deleted_policy": names.INLINE_POLICY_NAME},
    )


DENY_POLICY = "deny-input-reads"


def _permission_attached_deny(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    """A managed policy whose one statement is an explicit Deny of the function's reads, attached to its
    role (as a guard-rail policy sometimes is, too widely)."""
    iam = sandbox.session(names.OPERATOR).client("iam")
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Deny", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{names.INPUT_BUCKET}/*"}
        ],
    }
    arn = iam.create_policy(PolicyName=DENY_POLICY, PolicyDocument=json.dumps(document))["Policy"]["Arn"]
    undo(lambda: iam.delete_policy(PolicyArn=arn))
    iam.attach_role_policy(RoleName=names.ROLE_NAME, PolicyArn=arn)
    undo(lambda: _detached(iam, arn))
    return Broken(
        ("CreatePolicy", "AttachRolePolicy"),
        IAM_EVENTS_REGION,
        (names.input_event(0), names.input_event(1)),
        detail={"role": names.ROLE_NAME, "attached": arn},
    )


def _detached(iam: Any, arn: str) -> None:
    """Detach the policy unless the diagnosis's own command already did."""
    attached = iam.list_attached_role_policies(RoleName=names.ROLE_NAME)["AttachedPolicies"]
    if any(policy["PolicyArn"] == arn for policy in attached):
        iam.detach_role_policy(RoleName=names.ROLE_NAME, PolicyArn=arn)


def _set_concurrency(sandbox: Sandbox, undo: Undo, function: str, reserved: int) -> None:
    lambda_ = _lambda(sandbox)
    before = lambda_.get_function_concurrency(FunctionName=function).get("ReservedConcurrentExecutions")
    lambda_.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=reserved)
    if before is None:
        undo(lambda: lambda_.delete_function_concurrency(FunctionName=function))
    else:
        undo(
            lambda: lambda_.put_function_concurrency(
                FunctionName=function, ReservedConcurrentExecutions=before
            )
        )


def _throttling(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    _set_concurrency(sandbox, undo, names.FUNCTION_NAME, 2)
    return Broken(
        ("PutFunctionConcurrency20171031",),
        _region(sandbox),
        (names.input_event(0, work_seconds=0.5),),  # long enough for the burst to overlap
        burst=True,
        detail={"reserved_concurrency": 2},
    )


def _throttling_zero(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    _set_concurrency(sandbox, undo, names.ORDERS_FUNCTION, 0)
    return Broken(
        ("PutFunctionConcurrency20171031",),
        _region(sandbox),
        (names.order_request(),),
        detail={"reserved_concurrency": 0},
    )


def _https_egress(sandbox: Sandbox) -> dict[str, Any]:
    ec2 = sandbox.session(names.OPERATOR).client("ec2")
    group = ec2.describe_security_groups(GroupIds=[sandbox.world.security_group_id])["SecurityGroups"][0]
    rules = [p for p in group["IpPermissionsEgress"] if p.get("FromPort") == 443]
    assert len(rules) == 1, f"expected one HTTPS egress rule: {group['IpPermissionsEgress']}"
    rule: dict[str, Any] = {
        k: v for k, v in rules[0].items() if k in ("IpProtocol", "FromPort", "ToPort") or v
    }  # moto lists empty UserIdGroupPairs/PrefixListIds/Ipv6Ranges
    return rule


def _authorize_egress(ec2: Any, group_id: str, rule: dict[str, Any]) -> None:
    """Put the rule back, unless a remediation already did."""
    try:
        ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=[rule])
    except ClientError as error:
        if error.response["Error"]["Code"] != "InvalidPermission.Duplicate":
            raise


def _network_block(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    ec2 = sandbox.session(names.OPERATOR).client("ec2")
    group_id = sandbox.world.security_group_id
    rule = _https_egress(sandbox)
    ec2.revoke_security_group_egress(GroupId=group_id, IpPermissions=[rule])
    undo(lambda: _authorize_egress(ec2, group_id, rule))
    return Broken(
        ("RevokeSecurityGroupEgress",),
        _region(sandbox),
        (names.input_event(0),),
        detail={"security_group": group_id, "revoked_egress": rule},
    )


def _reconfigure(sandbox: Sandbox, undo: Undo, function: str, **changes: Any) -> dict[str, Any]:
    """Change the function's configuration; the restore puts the previous values back."""
    lambda_ = _lambda(sandbox)
    config = lambda_.get_function_configuration(FunctionName=function)
    saved = {key: config[key] for key in changes}
    lambda_.update_function_configuration(FunctionName=function, **changes)
    undo(lambda: lambda_.update_function_configuration(FunctionName=function, **saved))
    return saved


def _timeout(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    saved = _reconfigure(sandbox, undo, names.REPORT_FUNCTION, Timeout=1)
    return Broken(
        ("UpdateFunctionConfiguration20150331v2",),
        _region(sandbox),
        (names.report_request(),),  # ~1 s of work, as every day
        detail={"Timeout": {"from": saved["Timeout"], "to": 1}},
    )


def _out_of_memory(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    saved = _reconfigure(sandbox, undo, names.REPORT_FUNCTION, MemorySize=128)
    return Broken(
        ("UpdateFunctionConfiguration20150331v2",),
        _region(sandbox),
        (names.report_request(),),  # a 100 MB report, as every day
        detail={"MemorySize": {"from": saved["MemorySize"], "to": 128}},
    )


def _deployed_package(sandbox: Sandbox, function: str) -> bytes:
    """The exact bytes deployed to ``$LATEST`` (so a restore gives back the same CodeSha256)."""
    location = _lambda(sandbox).get_function(FunctionName=function)["Code"]["Location"]
    with urllib.request.urlopen(location, timeout=30) as response:  # noqa: S310 - the sandbox's URL
        package: bytes = response.read()
    return package


def _buggy_orders_api(package: bytes) -> bytes:
    """Release 2 of orders-api: the JSON encoding lost ``default=str``, so a found order (its amount a
    DynamoDB Decimal) fails with ``TypeError: Object of type Decimal is not JSON serializable``."""
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        source = archive.read("orders_api.py").decode()
    buggy = source.replace("json.dumps(body, default=str)", "json.dumps(body)")
    assert buggy != source, "orders_api.py no longer encodes with default=str"
    return zip_files({"orders_api.py": buggy})


def _bad_deploy(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    lambda_, name = _lambda(sandbox), names.ORDERS_FUNCTION
    original = _deployed_package(sandbox, name)
    before = lambda_.get_alias(FunctionName=name, Name=names.ORDERS_ALIAS)["FunctionVersion"]
    lambda_.update_function_code(FunctionName=name, ZipFile=_buggy_orders_api(original))
    undo(lambda: lambda_.update_function_code(FunctionName=name, ZipFile=original))
    version = lambda_.publish_version(FunctionName=name, Description="orders-api release 2")["Version"]
    undo(lambda: lambda_.delete_function(FunctionName=name, Qualifier=version))
    lambda_.update_alias(FunctionName=name, Name=names.ORDERS_ALIAS, FunctionVersion=version)
    undo(lambda: lambda_.update_alias(FunctionName=name, Name=names.ORDERS_ALIAS, FunctionVersion=before))
    return Broken(
        ("UpdateFunctionCode20150331v2", "PublishVersion20150331", "UpdateAlias20150331"),
        _region(sandbox),
        (names.order_request(),),
        qualifier=names.ORDERS_ALIAS,
        detail={"alias": names.ORDERS_ALIAS, "from_version": before, "to_version": version},
    )


def _configuration_error(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    saved = _reconfigure(sandbox, undo, names.FUNCTION_NAME, Handler=MISSING_HANDLER)
    return Broken(
        ("UpdateFunctionConfiguration20150331v2",),
        _region(sandbox),
        (names.input_event(0),),
        detail={"Handler": {"from": saved["Handler"], "to": MISSING_HANDLER}},
    )


def _table_items(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table):
        items += page["Items"]
    return items


def _recreate_table(dynamodb: Any, description: dict[str, Any], items: list[dict[str, Any]]) -> None:
    """The table as it was described, with its items (as world.py creates it: on-demand, no indexes)."""
    dynamodb.create_table(
        TableName=description["TableName"],
        BillingMode=description.get("BillingModeSummary", {}).get("BillingMode", "PAY_PER_REQUEST"),
        AttributeDefinitions=description["AttributeDefinitions"],
        KeySchema=description["KeySchema"],
    )
    dynamodb.get_waiter("table_exists").wait(
        TableName=description["TableName"], WaiterConfig={"Delay": 1, "MaxAttempts": 10}
    )
    for item in items:
        dynamodb.put_item(TableName=description["TableName"], Item=item)


def _dependency_failure(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    dynamodb = sandbox.session(names.OPERATOR).client("dynamodb")
    description = dynamodb.describe_table(TableName=names.ORDERS_TABLE)["Table"]
    assert not description.get("GlobalSecondaryIndexes")
    assert not description.get("LocalSecondaryIndexes")
    items = _table_items(dynamodb, names.ORDERS_TABLE)
    dynamodb.delete_table(TableName=names.ORDERS_TABLE)
    undo(lambda: _recreate_table(dynamodb, description, items))
    return Broken(
        ("DeleteTable",),
        _region(sandbox),
        (names.order_request(),),
        detail={"deleted_table": names.ORDERS_TABLE, "items": len(items)},
    )


def _reserved_one_healthy(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    _set_concurrency(sandbox, undo, names.ORDERS_FUNCTION, 1)
    return Broken(
        ("PutFunctionConcurrency20171031",),
        _region(sandbox),
        (names.order_request("0001-000"), names.order_request("0001-001")),
        detail={"reserved_concurrency": 1},
    )


def _planted_passrole(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    """data-processor logs the object key it is given (``processing s3://<bucket>/<key>``, then
    ``processed N orders from <key>``). Whoever uploads input batches chooses the key: a batch uploaded
    under a key that reads like an IAM denial puts that text in the function's log while every invocation
    succeeds. S3 object writes are data events: CloudTrail's management history does not show them."""
    s3 = sandbox.session(names.OPERATOR).client("s3")
    batch = s3.get_object(Bucket=names.INPUT_BUCKET, Key=names.INPUT_KEYS[0])["Body"].read()
    s3.put_object(Bucket=names.INPUT_BUCKET, Key=PLANTED_LINE, Body=batch, ContentType="application/json")
    undo(lambda: s3.delete_object(Bucket=names.INPUT_BUCKET, Key=PLANTED_LINE))
    return Broken(
        (),
        _region(sandbox),
        ({"key": PLANTED_LINE, "work_seconds": 0.0}, names.input_event(1), names.input_event(2)),
        detail={"uploaded_key": PLANTED_LINE, "bucket": names.INPUT_BUCKET},
    )


def _healthy(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Broken:
    return Broken((), _region(sandbox), tuple(names.input_event(i) for i in range(len(names.INPUT_KEYS))))


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "permission_wrong_resource", names.FUNCTION_NAME, "permission_loss", _permission_wrong_resource, 2
        ),
        Scenario("permission_removed", names.FUNCTION_NAME, "permission_loss", _permission_removed, 2),
        Scenario(
            "permission_attached_deny", names.FUNCTION_NAME, "permission_loss", _permission_attached_deny, 2
        ),
        Scenario("throttling", names.FUNCTION_NAME, "throttling", _throttling, 6),
        Scenario("throttling_zero", names.ORDERS_FUNCTION, "throttling", _throttling_zero, 3),
        Scenario("network_block", names.FUNCTION_NAME, "network_block", _network_block, 2),
        Scenario("timeout", names.REPORT_FUNCTION, "timeout", _timeout, 2),
        Scenario("out_of_memory", names.REPORT_FUNCTION, "out_of_memory", _out_of_memory, 2),
        Scenario("bad_deploy", names.ORDERS_FUNCTION, "bad_deploy", _bad_deploy, 3),
        Scenario("configuration_error", names.FUNCTION_NAME, "configuration_error", _configuration_error, 2),
        Scenario("dependency_failure", names.ORDERS_FUNCTION, "dependency_failure", _dependency_failure, 3),
        Scenario("reserved_one_healthy", names.ORDERS_FUNCTION, "none", _reserved_one_healthy, 4),
        Scenario("planted_passrole", names.FUNCTION_NAME, "none", _planted_passrole, 3),
        Scenario("healthy", names.FUNCTION_NAME, "none", _healthy, 3),
    )
}


# --- running a scenario ------------------------------------------------------------------------------


def cloudtrail_reader(sandbox: Sandbox, profile: str, region: str | None = None) -> Any:
    """A CloudTrail client for a test's own reads. LookupEvents allows 2 requests a second per account and
    Region, shared with the MCP server's lookups: adaptive retries wait for the allowance, as a careful
    client does, instead of failing a test on a throttle it did not cause."""
    retries = Config(retries={"mode": "adaptive", "max_attempts": 10})
    return sandbox.session(profile).client("cloudtrail", region_name=region or sandbox.region, config=retries)


def wait_for_changes(sandbox: Sandbox, broken: Broken, since: datetime) -> None:
    """Until ``LookupEvents`` returns each of the operator's calls made since ``since`` (the sandbox's
    CloudTrail delivers at once in the session's sandbox: ``set_cloudtrail_delay`` changes that)."""
    cloudtrail = cloudtrail_reader(sandbox, names.OPERATOR, broken.trigger_region)
    deadline = time.monotonic() + CLOUDTRAIL_WAIT_SECONDS
    for name in dict.fromkeys(broken.changes):
        while True:
            events = cloudtrail.lookup_events(
                LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": name}],
                StartTime=since - timedelta(seconds=2),
                EndTime=datetime.now(UTC) + timedelta(seconds=2),
            )["Events"]
            if any(e.get("Username") == names.OPERATOR for e in events):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"CloudTrail does not list the operator's {name} in {broken.trigger_region} after "
                    f"{CLOUDTRAIL_WAIT_SECONDS:.0f}s: is a delivery delay set (sandbox.set_cloudtrail_delay)?"
                )
            time.sleep(0.2)


def invoke(runtime: LocalLambdaRuntime, scenario: Scenario, broken: Broken) -> list[Invocation]:
    events = [broken.events[i % len(broken.events)] for i in range(scenario.invoke_count)]
    if broken.burst:
        assert len(set(map(json.dumps, events))) == 1, "a burst sends one event"
        return runtime.invoke_burst(scenario.function, events[0], len(events), broken.qualifier)
    return [runtime.invoke(scenario.function, event, broken.qualifier) for event in events]


def fresh_logs(sandbox: Sandbox, function: str) -> None:
    """Earlier tests' lines out of the function's log group, so that a test sees only its own incident."""
    logs = sandbox.session(names.OPERATOR).client("logs")
    group = f"/aws/lambda/{function}"
    pages = logs.get_paginator("describe_log_streams").paginate(logGroupName=group)
    streams = [stream["logStreamName"] for page in pages for stream in page["logStreams"]]
    for stream in streams:  # listed first: a deletion between pages would shift the next page past some
        logs.delete_log_stream(logGroupName=group, logStreamName=stream)


def run_scenario(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo, scenario: Scenario) -> Run:
    """Fresh CloudWatch metrics, alarms and logs, the operator's change (restore registered with
    ``undo``), the change visible in CloudTrail, then ``invoke_count`` invocations."""
    sandbox.reset_cloudwatch()
    fresh_logs(sandbox, scenario.function)
    started = datetime.now(UTC)
    broken = scenario.break_(sandbox, runtime, undo)
    wait_for_changes(sandbox, broken, started)
    return Run(scenario, broken, invoke(runtime, scenario, broken), started)


def healthy_event(function: str) -> Any:
    """The world's everyday traffic for ``function``."""
    return default_event(function)


# --- the state a scenario changes, for checking that a restore is exact ------------------------------


def world_state(sandbox: Sandbox) -> dict[str, Any]:
    """Everything a scenario changes, in comparable form (no timestamps, revision ids or rule ids)."""
    operator = sandbox.session(names.OPERATOR)
    lambda_, iam = operator.client("lambda"), operator.client("iam")
    kept = ("Handler", "MemorySize", "Timeout", "Environment", "Role", "VpcConfig", "CodeSha256", "Runtime")
    functions = {}
    for name in names.FUNCTIONS:
        config = lambda_.get_function_configuration(FunctionName=name)
        functions[name] = {
            "config": {k: config.get(k) for k in kept},
            "concurrency": lambda_.get_function_concurrency(FunctionName=name).get(
                "ReservedConcurrentExecutions"
            ),
            "versions": sorted(
                (v["Version"], v["CodeSha256"])
                for v in lambda_.list_versions_by_function(FunctionName=name)["Versions"]
            ),
            "aliases": sorted(
                (a["Name"], a["FunctionVersion"]) for a in lambda_.list_aliases(FunctionName=name)["Aliases"]
            ),
        }
    roles = {str(f["config"]["Role"]).rsplit("/", 1)[-1] for f in functions.values()}
    policies = {
        role: {
            "inline": {
                p: iam.get_role_policy(RoleName=role, PolicyName=p)["PolicyDocument"]
                for p in iam.list_role_policies(RoleName=role)["PolicyNames"]
            },
            "attached": sorted(
                p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
            ),
        }
        for role in sorted(roles)
    }
    customer_managed = sorted(p["Arn"] for p in iam.list_policies(Scope="Local")["Policies"])
    ec2 = operator.client("ec2")
    group = ec2.describe_security_groups(GroupIds=[sandbox.world.security_group_id])["SecurityGroups"][0]
    dynamodb = operator.client("dynamodb")
    table = dynamodb.describe_table(TableName=names.ORDERS_TABLE)["Table"]
    items = _table_items(dynamodb, names.ORDERS_TABLE)
    objects = operator.client("s3").list_objects_v2(Bucket=names.INPUT_BUCKET).get("Contents", [])
    return {
        "functions": functions,
        "role_policies": policies,
        "customer_managed_policies": customer_managed,
        "egress": group["IpPermissionsEgress"],
        "ingress": group["IpPermissions"],
        "orders_table": {
            "arn": table["TableArn"],
            "key_schema": table["KeySchema"],
            "attributes": table["AttributeDefinitions"],
            "billing": table.get("BillingModeSummary", {}).get("BillingMode"),
            "items": sorted(json.dumps(i, sort_keys=True) for i in items),
        },
        "input_objects": sorted((o["Key"], o["ETag"]) for o in objects),
    }


# --- what each scenario's invocations must show -------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    statuses: dict[str, int]
    error_types: frozenset[str | None]
    error_contains: str = ""  # in every failed invocation's error
    log_contains: str = ""  # in some invocation's log lines


def _expected(statuses: dict[str, int], *error_types: str | None, error: str = "", log: str = "") -> Expected:
    return Expected(statuses, frozenset(error_types), error, log)


EXPECTED = {
    "permission_wrong_resource": _expected(
        {"failed": 2}, "AccessDenied", error="when calling the GetObject operation: Access Denied"
    ),
    "permission_removed": _expected(
        {"failed": 2}, "AccessDenied", error="when calling the GetObject operation: Access Denied"
    ),
    "permission_attached_deny": _expected(
        {"failed": 2}, "AccessDenied", error="when calling the GetObject operation: Access Denied"
    ),
    "throttling": _expected(
        {"succeeded": 2, "throttled": 4}, None, "TooManyRequestsException", error="Rate Exceeded."
    ),
    "throttling_zero": _expected({"throttled": 3}, "TooManyRequestsException", error="Rate Exceeded."),
    "network_block": _expected(
        {"timed_out": 2}, "Sandbox.Timedout", error="Task timed out after 3.00 seconds", log="Status: timeout"
    ),
    "timeout": _expected(  # report-builder logs JSON: its platform.report says so
        {"timed_out": 2},
        "Sandbox.Timedout",
        error="Task timed out after 1.00 seconds",
        log='"status":"timeout"',
    ),
    "out_of_memory": _expected(
        {"out_of_memory": 2},
        "Runtime.ExitError",
        error="Runtime exited with error: signal: killed",
        log='"memorySizeMB":128,"maxMemoryUsedMB":128',
    ),
    "bad_deploy": _expected(
        {"failed": 3}, "TypeError", error="Object of type Decimal is not JSON serializable"
    ),
    "configuration_error": _expected(
        {"failed": 2}, "Runtime.HandlerNotFound", error="Handler 'process' missing on module 'data_processor'"
    ),
    "dependency_failure": _expected(
        {"failed": 3}, "ResourceNotFoundException", error="when calling the GetItem operation"
    ),
    "reserved_one_healthy": _expected({"succeeded": 4}, None),
    "planted_passrole": _expected({"succeeded": 3}, None, log=PLANTED_LINE),
    "healthy": _expected({"succeeded": 3}, None),
}


def check_run(run: Run, expected: Expected) -> None:
    described = [(i.status, i.error) for i in run.invocations]
    assert dict(Counter(run.statuses)) == expected.statuses, described
    assert run.error_types == expected.error_types, described
    for invocation in run.invocations:
        if invocation.status != "succeeded":
            assert expected.error_contains in (invocation.error or ""), described
        if invocation.status != "throttled":
            assert invocation.logs_written, f"{invocation.request_id}: its log lines were not written"
    if expected.log_contains:
        assert any(expected.log_contains in line for i in run.invocations for line in i.log_lines)
