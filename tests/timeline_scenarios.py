"""Situations on one causal timeline (issue 26), staged in the sandbox through boto3 as an operator would:
healthy traffic first (so the logs hold the last success before the change), then the operator's calls,
then the traffic that fails. Not the project's chaos injectors: plain API calls, each wrapped in
:meth:`Stage.call` with the CloudTrail event it must leave, so that :meth:`Stage.finish` can check that the
operator's history since the start is exactly those events, in that order, each made between the
invocations it was made between. Every situation checks its invocations' outcomes exactly and registers
an exact restore of what it changed.

    steps = RestoreSteps()
    undo(steps.restore)
    staged = SITUATIONS["deploy_oom"](sandbox, runtime, steps)
    staged.change("UpdateAlias20150331").time    # the trigger, as CloudTrail recorded it
    steps.restore()
"""

from __future__ import annotations

import io
import itertools
import json
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.sandbox.world import package
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from tests.fault_scenarios import (
    CLOUDTRAIL_WAIT_SECONDS,
    IAM_EVENTS_REGION,
    Undo,
    _authorize_egress,
    _deployed_package,
    _https_egress,
    _inline_policy,
    _put_inline_policy,
    cloudtrail_reader,
    fresh_logs,
    world_state,
)

T = TypeVar("T")

IAM_QUIET_SECONDS = 13.0  # > the 10 s the diagnosis allows a change before the last success (IAM lag)
NEW_FUNCTION = "batch-totals"  # never_granted: created by the operator with data-processor's code
NEW_ROLE = f"{NEW_FUNCTION}-role"
HEAVY_REPORT_MB = "300"  # report-builder has 256 MB: a 300 MB report cannot be held
NIGHTLY_REPORT = {"work_seconds": 0.5}  # no size_mb: the size comes from REPORT_MB
OOM_LINE = '    warm_cache = b"o" * (320 << 20)  # release 2: every order kept in memory\n'
SLOW_LINE = "    time.sleep(8)  # release 2: waits for a downstream that answers in 8 s\n"
# release 2 warms a cache as it loads: 12 s, past Lambda's 10-second init phase
SLOW_INIT_LINE = "time.sleep(12)  # release 2: warms its cache at load\n"
# release 2 spools each order to the temporary directory and never deletes it: 320 MB, of /tmp's 512
LEAK_LINES = (
    "    with open(os.path.join(tempfile.gettempdir(), context.aws_request_id), 'wb') as spool:\n"
    "        for _ in range(20):  # release 2: each order spooled, never deleted\n"
    "            spool.write(b't' * (16 << 20))\n"
)
SPOOL_FUNCTION = "spool-sorter"  # storage_cut: sorts 600 MB in /tmp (and deletes it) on 1024 MB of /tmp
SPOOLER = """
import os, tempfile
def handler(event, context):
    path = os.path.join(tempfile.gettempdir(), context.aws_request_id)
    chunk = b"s" * (1 << 20)
    with open(path, "wb") as spool:
        for _ in range(600):
            spool.write(chunk)
    os.remove(path)
    return {"sorted_mb": 600}
"""
SEALER_FUNCTION = "ledger-sealer"  # key_in_code_disabled: its code names the KMS key it encrypts with
SEALER_ROLE = f"{SEALER_FUNCTION}-role"
SEALER = """
import boto3
kms = boto3.client("kms")
def handler(event, context):
    sealed = kms.encrypt(KeyId="{key}", Plaintext=b"ledger entry")
    return {{"sealed_bytes": len(sealed["CiphertextBlob"])}}
"""
HANDLER_DEF = "def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:\n"


@dataclass(frozen=True)
class Change:
    """One operator call as CloudTrail recorded it."""

    event_name: str
    time: datetime
    region: str
    event_id: str


@dataclass(frozen=True)
class Phase:
    name: str
    started: datetime
    ended: datetime
    invocations: list[Invocation]


@dataclass(frozen=True)
class Staged:
    """A staged situation: its traffic by phase, oldest first, and the operator's changes."""

    function: str
    qualifier: str | None
    probe: Any  # an event that succeeds whenever the function works
    phases: list[Phase]
    changes: list[Change]
    detail: dict[str, Any] = field(default_factory=dict)
    # How a test sees the function work (None) or not (what failed); None: the probe invoked directly.
    works: Callable[[], str | None] | None = None

    def change(self, event_name: str) -> Change:
        found = [c for c in self.changes if c.event_name == event_name]
        assert len(found) == 1, f"{event_name}: {self.changes}"
        return found[0]

    def phase(self, name: str) -> Phase:
        return next(p for p in self.phases if p.name == name)


@dataclass(frozen=True)
class _Expected:
    event_name: str
    region: str
    before: datetime
    after: datetime


class Stage:
    """A fresh start for ``function`` (no metrics, no log lines), then its traffic and the operator's calls
    in the order they are made."""

    def __init__(self, sandbox: Sandbox, runtime: LocalLambdaRuntime, function: str, qualifier: str | None):
        self.sandbox, self.runtime, self.function, self.qualifier = sandbox, runtime, function, qualifier
        self.operator = sandbox.session(names.OPERATOR)
        sandbox.reset_cloudwatch()
        if function in names.FUNCTIONS:
            fresh_logs(sandbox, function)
        self.started = datetime.now(UTC)
        self._phases: list[Phase] = []
        self._expected: list[_Expected] = []

    def call(self, event_name: str, action: Callable[[], T], region: str | None = None) -> T:
        """Make one operator call that CloudTrail records as ``event_name``."""
        before = datetime.now(UTC)
        result = action()
        self._expected.append(_Expected(event_name, region or self.sandbox.region, before, datetime.now(UTC)))
        return result

    def invoke(self, phase: str, events: Sequence[Any]) -> list[Invocation]:
        """The events one after the other, as one phase of the function's traffic."""
        invocations = self.traffic(
            phase, lambda: [self.runtime.invoke(self.function, e, self.qualifier) for e in events]
        )
        for invocation in invocations:
            if invocation.status != "throttled":
                assert invocation.logs_written, f"{invocation.request_id}: its log lines were not written"
        return invocations

    def traffic(self, phase: str, run: Callable[[], list[Invocation]]) -> list[Invocation]:
        """One phase of traffic, whatever sends it (direct invocations, a queue's poller): its
        invocations."""
        started = datetime.now(UTC)
        invocations = run()
        self._phases.append(Phase(phase, started, datetime.now(UTC), invocations))
        return invocations

    def finish(self, probe: Any, works: Callable[[], str | None] | None = None, **detail: Any) -> Staged:
        """The staged situation, once CloudTrail lists exactly the operator's calls made, each between the
        phases of traffic it was made between."""
        changes = self._recorded()
        assert [c.event_name for c in changes] == [e.event_name for e in self._expected], changes
        for change, expected in zip(changes, self._expected, strict=True):
            assert change.region == expected.region, change
            assert expected.before <= change.time <= expected.after, (change, expected)
        moments = sorted(
            [(p.started, p.ended) for p in self._phases] + [(c.time, c.time) for c in changes]
        )  # no change during a phase of traffic
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(moments)), moments
        return Staged(self.function, self.qualifier, probe, self._phases, changes, detail, works)

    def _recorded(self) -> list[Change]:
        deadline = time.monotonic() + CLOUDTRAIL_WAIT_SECONDS
        while True:
            changes = sorted(
                (
                    c
                    for region in {self.sandbox.region, IAM_EVENTS_REGION}
                    for c in self._operator_events(region)
                ),
                key=lambda change: change.time,
            )
            if len(changes) >= len(self._expected) or time.monotonic() > deadline:
                return changes
            time.sleep(0.2)

    def _operator_events(self, region: str) -> list[Change]:
        cloudtrail = cloudtrail_reader(self.sandbox, names.OPERATOR, region)
        pages = cloudtrail.get_paginator("lookup_events").paginate(
            LookupAttributes=[{"AttributeKey": "Username", "AttributeValue": names.OPERATOR}],
            StartTime=self.started,
            EndTime=datetime.now(UTC) + timedelta(seconds=2),
        )
        return [
            Change(e["EventName"], e["EventTime"].astimezone(UTC), region, e["EventId"])
            for page in pages
            for e in page["Events"]
            if e["ReadOnly"] == "false"  # the operator's reads are recorded too
        ]


def expect(
    invocations: Sequence[Invocation], statuses: dict[str, int], error_type: str | None, error: str
) -> None:
    """Exactly these outcomes; every failure of ``error_type`` with ``error`` in its message."""
    described = [(i.status, i.error) for i in invocations]
    assert dict(Counter(i.status for i in invocations)) == statuses, described
    for invocation in invocations:
        if invocation.status != "succeeded":
            assert invocation.error_type == error_type, described
            assert error in (invocation.error or ""), described


def healthy(stage: Stage, events: Sequence[Any]) -> list[Invocation]:
    invocations = stage.invoke("healthy", events)
    expect(invocations, {"succeeded": len(events)}, None, "")
    return invocations


# --- the situations ------------------------------------------------------------------------------------


def _release_2(original: bytes, line: str) -> bytes:
    """orders-api with ``line`` as the handler's first statement, or (unindented) its module's last (and
    ``time`` imported)."""
    with zipfile.ZipFile(io.BytesIO(original)) as archive:
        source = archive.read("orders_api.py").decode()
    assert HANDLER_DEF in source, "orders_api.py changed shape"
    assert "import time\n" not in source, "orders_api.py changed shape"
    changed = (
        source + "\n" + line if not line.startswith(" ") else source.replace(HANDLER_DEF, HANDLER_DEF + line)
    )
    changed = changed.replace("import uuid\n", "import uuid\nimport tempfile\nimport time\n")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("orders_api.py", changed)
    return buffer.getvalue()


def deploy(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo, line: str) -> tuple[Stage, str, str]:
    """Healthy traffic on ``live``, then release 2 built with ``line``, published and ``live`` moved to it:
    the stage, the version ``live`` was on and the new one."""
    name, alias = names.ORDERS_FUNCTION, names.ORDERS_ALIAS
    stage = Stage(sandbox, runtime, name, alias)
    lambda_ = stage.operator.client("lambda")
    before = lambda_.get_alias(FunctionName=name, Name=alias)["FunctionVersion"]
    original = _deployed_package(sandbox, name)
    assert {i.version for i in healthy(stage, [names.order_request(), names.order_request()])} == {before}
    build = _release_2(original, line)
    stage.call(
        "UpdateFunctionCode20150331v2", lambda: lambda_.update_function_code(FunctionName=name, ZipFile=build)
    )
    undo(lambda: lambda_.update_function_code(FunctionName=name, ZipFile=original))
    version: str = stage.call(
        "PublishVersion20150331", lambda: lambda_.publish_version(FunctionName=name, Description="release 2")
    )["Version"]
    undo(lambda: lambda_.delete_function(FunctionName=name, Qualifier=version))
    stage.call(
        "UpdateAlias20150331",
        lambda: lambda_.update_alias(FunctionName=name, Name=alias, FunctionVersion=version),
    )
    undo(lambda: lambda_.update_alias(FunctionName=name, Name=alias, FunctionVersion=before))
    return stage, before, version


def deploy_oom(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """orders-api release 2 keeps 320 MB of orders in memory; the function has 256 MB."""
    stage, before, version = deploy(sandbox, runtime, undo, OOM_LINE)
    failing = stage.invoke("after the deploy", [names.order_request(), names.order_request()])
    expect(failing, {"out_of_memory": 2}, "Runtime.ExitError", "Runtime exited with error: signal: killed")
    assert {i.version for i in failing} == {version}
    return stage.finish(names.order_request(), from_version=before, to_version=version)


def deploy_tmp_leak(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """orders-api release 2 leaves 320 MB in /tmp per order: an environment's first order succeeds, its next
    write finds the 512 MB full."""
    stage, before, version = deploy(sandbox, runtime, undo, LEAK_LINES)
    failing = stage.invoke("after the deploy", [names.order_request() for _ in range(3)])
    expect(failing, {"succeeded": 1, "failed": 2}, "OSError", "[Errno 28] No space left on device")
    assert {i.version for i in failing} == {version}
    return stage.finish(names.order_request(), from_version=before, to_version=version)


def storage_cut(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """A function that sorts 600 MB in /tmp, created with 1024 MB of it; then its /tmp cut to 512 MB."""
    stage = Stage(sandbox, runtime, SPOOL_FUNCTION, None)
    lambda_ = stage.operator.client("lambda")
    role = stage.operator.client("iam").get_role(RoleName=names.ROLE_NAME)["Role"]["Arn"]
    create_function(stage, undo, role, SPOOLER, Timeout=30, MemorySize=256, EphemeralStorage={"Size": 1024})
    healthy(stage, [{}, {}])
    stage.call(
        "UpdateFunctionConfiguration20150331v2",
        lambda: lambda_.update_function_configuration(
            FunctionName=SPOOL_FUNCTION, EphemeralStorage={"Size": 512}
        ),
    )
    lambda_.get_waiter("function_updated_v2").wait(FunctionName=SPOOL_FUNCTION)
    failing = stage.invoke("after the cut", [{}, {}])
    expect(failing, {"failed": 2}, "OSError", "[Errno 28] No space left on device")
    return stage.finish({})


def _zipped(name: str, source: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, source)
    return buffer.getvalue()


# A staged function's runtime, its handler and the file that holds it.
HANDLERS = {"python3.12": ("main.handler", "main.py"), "nodejs22.x": ("index.handler", "index.mjs")}


def create_function(
    stage: Stage,
    undo: Undo,
    role: str,
    source: str,
    *,
    quiet: bool = True,
    runtime: str = "python3.12",
    **config: Any,
) -> None:
    """The stage's function (its handler ``main.handler`` in ``source``, or ``index.handler`` on Node.js) and
    its log group, made by the operator well before the traffic that follows (so that no lag lets them be its
    cause; ``quiet`` False: the caller waits, after what it makes next)."""
    handler, file = HANDLERS[runtime]
    lambda_, logs = stage.operator.client("lambda"), stage.operator.client("logs")
    group = f"/aws/lambda/{stage.function}"
    stage.call("CreateLogGroup", lambda: logs.create_log_group(logGroupName=group))
    undo(lambda: logs.delete_log_group(logGroupName=group))
    stage.call(
        "CreateFunction20150331",
        lambda: lambda_.create_function(
            FunctionName=stage.function,
            Runtime=runtime,
            Role=role,
            Handler=handler,
            Code={"ZipFile": _zipped(file, source)},
            **config,
        ),
    )
    undo(lambda: lambda_.delete_function(FunctionName=stage.function))
    if quiet:
        time.sleep(IAM_QUIET_SECONDS)


def deploy_timeout(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """orders-api release 2 waits 8 s for a downstream; the function's timeout is 5 s."""
    stage, before, version = deploy(sandbox, runtime, undo, SLOW_LINE)
    failing = stage.invoke("after the deploy", [names.order_request(), names.order_request()])
    expect(failing, {"timed_out": 2}, "Sandbox.Timedout", "Task timed out after 5.00 seconds")
    assert {i.version for i in failing} == {version}
    return stage.finish(names.order_request(), from_version=before, to_version=version)


def deploy_slow_init(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """orders-api release 2 takes 12 s to load: its init phase times out at 10 s, and the init Lambda retries
    in the invocation runs into the function's 5 s timeout."""
    stage, before, version = deploy(sandbox, runtime, undo, SLOW_INIT_LINE)
    failing = stage.invoke("after the deploy", [names.order_request()])
    expect(
        failing,
        {"failed": 1},
        "Runtime.ExitError",
        "Runtime exited with error: init did not finish within 5 s",
    )
    assert {i.version for i in failing} == {version}
    return stage.finish(names.order_request(), from_version=before, to_version=version)


def _set_variables(stage: Stage, undo: Undo, **variables: str) -> dict[str, str]:
    """The function's environment with ``variables`` changed (one UpdateFunctionConfiguration); the restore
    puts the whole environment back. Returns the earlier variables."""
    lambda_, name = stage.operator.client("lambda"), stage.function
    earlier: dict[str, str] = lambda_.get_function_configuration(FunctionName=name)["Environment"][
        "Variables"
    ]
    assert variables.keys() <= earlier.keys()
    changed = {"Variables": earlier | variables}
    stage.call(
        "UpdateFunctionConfiguration20150331v2",
        lambda: lambda_.update_function_configuration(FunctionName=name, Environment=changed),
    )
    undo(lambda: lambda_.update_function_configuration(FunctionName=name, Environment={"Variables": earlier}))
    return earlier


def env_heavier(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """report-builder's REPORT_MB raised from 100 to 300: the nightly report no longer fits in 256 MB.
    report-builder runs as $LATEST and has never published a version."""
    stage = Stage(sandbox, runtime, names.REPORT_FUNCTION, None)
    versions = stage.operator.client("lambda").list_versions_by_function(FunctionName=names.REPORT_FUNCTION)
    assert [v["Version"] for v in versions["Versions"]] == ["$LATEST"]
    healthy(stage, [NIGHTLY_REPORT, NIGHTLY_REPORT])
    earlier = _set_variables(stage, undo, REPORT_MB=HEAVY_REPORT_MB)
    failing = stage.invoke("after the change", [NIGHTLY_REPORT, NIGHTLY_REPORT])
    expect(failing, {"out_of_memory": 2}, "Runtime.ExitError", "Runtime exited with error: signal: killed")
    return stage.finish(NIGHTLY_REPORT, REPORT_MB={"from": earlier["REPORT_MB"], "to": HEAVY_REPORT_MB})


def wrong_config_value(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """A harmless IAM change (data-processor's inline policy put again, unchanged), quiet for longer than
    IAM's allowance, successes, then INPUT_BUCKET pointed at a bucket that exists but the role may not
    read (report-builder's)."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    policy = _inline_policy(sandbox)
    stage.call("PutRolePolicy", lambda: _put_inline_policy(sandbox, policy), IAM_EVENTS_REGION)
    time.sleep(IAM_QUIET_SECONDS)
    healthy(stage, [names.input_event(0), names.input_event(1)])
    earlier = _set_variables(stage, undo, INPUT_BUCKET=names.REPORT_BUCKET)
    failing = stage.invoke("after the change", [names.input_event(0), names.input_event(1)])
    expect(failing, {"failed": 2}, "AccessDenied", "when calling the GetObject operation: Access Denied")
    staged = stage.finish(
        names.input_event(0), INPUT_BUCKET={"from": earlier["INPUT_BUCKET"], "to": names.REPORT_BUCKET}
    )
    quiet = staged.phase("healthy").started - staged.change("PutRolePolicy").time
    assert quiet > timedelta(seconds=12), quiet
    return staged


def resolved_then_new(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """data-processor throttled by reserved concurrency 0, the limit removed, then its security group's
    HTTPS egress revoked: its calls to S3 hang until the timeout."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    lambda_, ec2 = stage.operator.client("lambda"), stage.operator.client("ec2")
    name, group = names.FUNCTION_NAME, sandbox.world.security_group_id
    assert lambda_.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions") is None
    healthy(stage, [names.input_event(0), names.input_event(1)])
    stage.call(
        "PutFunctionConcurrency20171031",
        lambda: lambda_.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=0),
    )
    undo(lambda: lambda_.delete_function_concurrency(FunctionName=name))
    throttled = stage.invoke("throttled", [names.input_event(0), names.input_event(1)])
    expect(throttled, {"throttled": 2}, "TooManyRequestsException", "Rate Exceeded.")
    stage.call(
        "DeleteFunctionConcurrency20171031", lambda: lambda_.delete_function_concurrency(FunctionName=name)
    )
    rule = _https_egress(sandbox)
    stage.call(
        "RevokeSecurityGroupEgress",
        lambda: ec2.revoke_security_group_egress(GroupId=group, IpPermissions=[rule]),
    )
    undo(lambda: _authorize_egress(ec2, group, rule))
    failing = stage.invoke("after the egress change", [names.input_event(0), names.input_event(1)])
    expect(failing, {"timed_out": 2}, "Sandbox.Timedout", "Task timed out after 3.00 seconds")
    return stage.finish(names.input_event(0), security_group=group, revoked_egress=rule)


def bad_input(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """data-processor asked, between ordinary batches, for a batch that was never uploaded; nothing
    changed."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    healthy(stage, [names.input_event(0), names.input_event(1)])
    missing = {"key": names.MISSING_INPUT_KEY, "work_seconds": 0.0}
    mixed = stage.invoke("mixed", [missing, names.input_event(2), missing, names.input_event(0), missing])
    assert [i.status for i in mixed] == ["failed", "succeeded", "failed", "succeeded", "failed"]
    expect(
        mixed, {"failed": 3, "succeeded": 2}, "NoSuchKey", "(NoSuchKey) when calling the GetObject operation"
    )
    return stage.finish(names.input_event(0), missing_key=names.MISSING_INPUT_KEY)


def _delete_role(iam: Any, role: str) -> None:
    """The role and whatever policies it has by then (a remediation may have added one)."""
    for policy in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        iam.delete_role_policy(RoleName=role, PolicyName=policy)
    for attached in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]:
        iam.detach_role_policy(RoleName=role, PolicyArn=attached["PolicyArn"])
    iam.delete_role(RoleName=role)


def _trust() -> str:
    """Lambda may assume the role (and the sandbox's stand-in for the Lambda service: see world.py)."""
    principal = {
        "Service": "lambda.amazonaws.com",
        "AWS": f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.LAMBDA_SERVICE}",
    }
    statement = {"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def allowed(actions: str | list[str]) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": actions, "Resource": "*"}


def new_role(stage: Stage, undo: Undo, role: str, policy: str, statements: list[dict[str, Any]]) -> str:
    """A role Lambda may assume with one inline policy of ``statements``, made by the operator: its ARN."""
    iam = stage.operator.client("iam")
    arn: str = stage.call(
        "CreateRole",
        lambda: iam.create_role(RoleName=role, AssumeRolePolicyDocument=_trust()),
        IAM_EVENTS_REGION,
    )["Role"]["Arn"]
    undo(lambda: _delete_role(iam, role))
    document = json.dumps({"Version": "2012-10-17", "Statement": statements})
    stage.call(
        "PutRolePolicy",
        lambda: iam.put_role_policy(RoleName=role, PolicyName=policy, PolicyDocument=document),
        IAM_EVENTS_REGION,
    )
    return arn


def never_granted(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """A new function with data-processor's code and environment, on a new role that may only write
    logs: it has never been able to read its input."""
    stage = Stage(sandbox, runtime, NEW_FUNCTION, None)
    logs, lambda_ = stage.operator.client("logs"), stage.operator.client("lambda")
    logging_only = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"]
    role_arn = new_role(stage, undo, NEW_ROLE, f"{NEW_FUNCTION}-logs", [allowed(logging_only)])
    group = f"/aws/lambda/{NEW_FUNCTION}"
    stage.call("CreateLogGroup", lambda: logs.create_log_group(logGroupName=group))
    undo(lambda: logs.delete_log_group(logGroupName=group))
    source = lambda_.get_function_configuration(FunctionName=names.FUNCTION_NAME)
    stage.call(
        "CreateFunction20150331",
        lambda: lambda_.create_function(
            FunctionName=NEW_FUNCTION,
            Runtime=source["Runtime"],
            Role=role_arn,
            Handler=source["Handler"],
            Code={"ZipFile": package("data_processor")},
            Timeout=source["Timeout"],
            MemorySize=source["MemorySize"],
            Environment=source["Environment"],
        ),
    )
    undo(lambda: lambda_.delete_function(FunctionName=NEW_FUNCTION))
    failing = stage.invoke("first invocations", [names.input_event(0), names.input_event(1)])
    expect(failing, {"failed": 2}, "AccessDenied", "when calling the GetObject operation: Access Denied")
    return stage.finish(names.input_event(0), role=NEW_ROLE, role_arn=role_arn)


def key_in_code_disabled(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """A new function that encrypts with a key only its code names (its role grants kms:Encrypt on any key,
    its environment names none); then the key disabled."""
    stage = Stage(sandbox, runtime, SEALER_FUNCTION, None)
    kms = stage.operator.client("kms")
    key = stage.call("CreateKey", lambda: kms.create_key(Description="ledger seals"))["KeyMetadata"]["Arn"]
    undo(lambda: kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7))
    statements = [allowed(["logs:CreateLogStream", "logs:PutLogEvents"]), allowed("kms:Encrypt")]
    role_arn = new_role(stage, undo, SEALER_ROLE, "seal", statements)
    create_function(stage, undo, role_arn, SEALER.format(key=key), Timeout=10, MemorySize=128)
    healthy(stage, [{}, {}])
    stage.call("DisableKey", lambda: kms.disable_key(KeyId=key))
    failing = stage.invoke("after the key is disabled", [{}, {}])
    expect(failing, {"failed": 2}, "DisabledException", f"Encrypt operation: {key} is disabled.")
    return stage.finish({}, key=key)


Situation = Callable[[Sandbox, LocalLambdaRuntime, Undo], Staged]
SITUATIONS: dict[str, Situation] = {
    s.__name__: s
    for s in (
        deploy_oom,
        deploy_timeout,
        deploy_slow_init,
        deploy_tmp_leak,
        storage_cut,
        env_heavier,
        wrong_config_value,
        resolved_then_new,
        bad_input,
        never_granted,
        key_in_code_disabled,
    )
}


def world(sandbox: Sandbox) -> dict[str, Any]:
    """What :func:`tests.fault_scenarios.world_state` compares, and which functions, roles and function log
    groups exist (never_granted creates and deletes one of each)."""
    operator = sandbox.session(names.OPERATOR)
    functions = [
        f["FunctionName"]
        for page in operator.client("lambda").get_paginator("list_functions").paginate()
        for f in page["Functions"]
    ]
    roles = [
        r["RoleName"]
        for page in operator.client("iam").get_paginator("list_roles").paginate()
        for r in page["Roles"]
    ]
    groups = [
        g["logGroupName"]
        for page in operator.client("logs")
        .get_paginator("describe_log_groups")
        .paginate(logGroupNamePrefix="/aws/lambda/")
        for g in page["logGroups"]
    ]
    return world_state(sandbox) | {
        "function_names": sorted(functions),
        "roles": sorted(roles),
        "log_groups": sorted(groups),
    }
