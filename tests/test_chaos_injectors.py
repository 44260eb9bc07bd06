"""The Drill v2 injectors (config, deploy, dependency) on the sandbox: each fault fails the function the
way it fails on Lambda, restore is exact, dry runs change nothing, the tag guard holds, and environment
values are never printed."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from chaos.faults.chaos import Chaos, Fault, Target
from chaos.faults.config import CONFIG_ENV, CONFIG_LOGGING, CONFIG_MEMORY, CONFIG_TIMEOUT
from chaos.faults.dependency import DEPENDENCY_REMOVE
from chaos.faults.deploy import DEPLOY_BAD_CODE, EXCEPTION_MESSAGE, MISSING_MODULE
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.support import wait_until_updated
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from tests.chaos_support import Recorder
from tests.conftest import Undo
from tests.packages import zip_files

FN, ORDERS, REPORT, LIVE, INTAKE = (
    names.FUNCTION_NAME,
    names.ORDERS_FUNCTION,
    names.REPORT_FUNCTION,
    names.ORDERS_ALIAS,
    names.ORDER_INTAKE_FUNCTION,
)
INTAKE_ORDER = "chaos-injector-test"  # the one order order-intake's test traffic writes (deleted after)
SUBMIT = names.order_submission(order_id=INTAKE_ORDER)
SECRET = "s3cr3t-bucket-name-7f2c"
FAULTS = (CONFIG_TIMEOUT, CONFIG_MEMORY, CONFIG_ENV, DEPLOY_BAD_CODE, DEPENDENCY_REMOVE)
EXTRA_KEY = "chaos/extra.bin"
BINARY_ORDER = "chaos-binary"

Prepare = Callable[[boto3.Session, Undo], None]


# --- what a fault can change, for checking that restore is exact -----------------------------------------


def _jsonable(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=lambda b: base64.b64encode(b).decode())


def _table_state(session: boto3.Session, table: str) -> dict[str, Any] | None:
    dynamodb = session.client("dynamodb")
    try:
        d = dynamodb.describe_table(TableName=table)["Table"]
    except dynamodb.exceptions.ResourceNotFoundException:
        return None
    items = [i for page in dynamodb.get_paginator("scan").paginate(TableName=table) for i in page["Items"]]
    return {
        "arn": d["TableArn"],
        "key_schema": d["KeySchema"],
        "attributes": sorted(map(_jsonable, d["AttributeDefinitions"])),
        "billing": d.get("BillingModeSummary", {}).get("BillingMode"),
        "indexes": [
            sorted((i["IndexName"], _jsonable(i["KeySchema"])) for i in d.get(kind) or [])
            for kind in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes")
        ],
        "tags": sorted(map(_jsonable, dynamodb.list_tags_of_resource(ResourceArn=d["TableArn"])["Tags"])),
        "ttl": dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"],
        "items": sorted(map(_jsonable, items)),
    }


def _bucket_state(session: boto3.Session, bucket: str) -> dict[str, Any] | None:
    s3 = session.client("s3")
    try:
        s3.head_bucket(Bucket=bucket)
    except s3.exceptions.ClientError:
        return None
    objects = {}
    for listed in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        got = s3.get_object(Bucket=bucket, Key=listed["Key"])
        objects[listed["Key"]] = {
            "sha256": hashlib.sha256(got["Body"].read()).hexdigest(),
            "etag": listed["ETag"],
            "type": got.get("ContentType"),
            "metadata": got.get("Metadata"),
            "cache_control": got.get("CacheControl"),
            "tags": s3.get_object_tagging(Bucket=bucket, Key=listed["Key"])["TagSet"],
        }
    try:
        tags = s3.get_bucket_tagging(Bucket=bucket)["TagSet"]
    except s3.exceptions.ClientError:
        tags = None
    return {
        "objects": objects,
        "tags": tags,
        "versioning": s3.get_bucket_versioning(Bucket=bucket).get("Status"),
    }


CONFIG_KEYS = (
    "Role",
    "Handler",
    "Runtime",
    "Timeout",
    "MemorySize",
    "Environment",
    "VpcConfig",
    "CodeSha256",
    "CodeSize",
    "Layers",
    "PackageType",
    "EphemeralStorage",
    "LoggingConfig",
)


def _state(session: boto3.Session, function: str) -> dict[str, Any]:
    """The function (configuration, code, tags, concurrency, versions, aliases) and the table or input
    bucket its environment names."""
    lambda_ = session.client("lambda")
    got = lambda_.get_function(FunctionName=function)
    config = got["Configuration"]
    variables = config.get("Environment", {}).get("Variables", {})
    state: dict[str, Any] = {
        "config": {key: config.get(key) for key in CONFIG_KEYS},
        "tags": got.get("Tags", {}),
        "concurrency": lambda_.get_function_concurrency(FunctionName=function).get(
            "ReservedConcurrentExecutions"
        ),
        "versions": sorted(
            (v["Version"], v["CodeSha256"], v.get("Description", ""))
            for v in lambda_.list_versions_by_function(FunctionName=function)["Versions"]
        ),
        "aliases": sorted(
            (a["Name"], a["FunctionVersion"], _jsonable(a.get("RoutingConfig")))
            for a in lambda_.list_aliases(FunctionName=function)["Aliases"]
        ),
    }
    if "TABLE_NAME" in variables:
        state["table"] = _table_state(session, variables["TABLE_NAME"])
    if "INPUT_BUCKET" in variables:  # not REPORT_BUCKET: report-builder's invocations write to it
        state["bucket"] = _bucket_state(session, variables["INPUT_BUCKET"])
    return state


# --- each fault, each kind ------------------------------------------------------------------------------


def _extra_object_and_tags(session: boto3.Session, undo: Undo) -> None:
    """Bucket tags and an object with metadata, headers and tags: all of it must come back."""
    s3 = session.client("s3")
    s3.put_bucket_tagging(Bucket=names.INPUT_BUCKET, Tagging={"TagSet": [{"Key": "team", "Value": "drill"}]})
    undo(lambda: s3.delete_bucket_tagging(Bucket=names.INPUT_BUCKET))
    s3.put_object(
        Bucket=names.INPUT_BUCKET,
        Key=EXTRA_KEY,
        Body=bytes(range(256)) * 4,
        ContentType="application/octet-stream",
        CacheControl="max-age=60",
        Metadata={"origin": "drill"},
        Tagging="kind=binary&owner=chaos",
    )
    undo(lambda: s3.delete_object(Bucket=names.INPUT_BUCKET, Key=EXTRA_KEY))


def _binary_item_and_tags(session: boto3.Session, undo: Undo) -> None:
    """A table tag and an item with binary attributes: both must come back."""
    dynamodb = session.client("dynamodb")
    arn = dynamodb.describe_table(TableName=names.ORDERS_TABLE)["Table"]["TableArn"]
    dynamodb.tag_resource(ResourceArn=arn, Tags=[{"Key": "team", "Value": "drill"}])
    undo(lambda: dynamodb.untag_resource(ResourceArn=arn, TagKeys=["team"]))
    item = {
        "order_id": {"S": BINARY_ORDER},
        "blob": {"B": b"\x00\xff\x10"},
        "nested": {"M": {"parts": {"L": [{"BS": [b"\x01", b"\x02"]}, {"N": "1.5"}]}}},
    }
    dynamodb.put_item(TableName=names.ORDERS_TABLE, Item=item)
    undo(lambda: dynamodb.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": BINARY_ORDER}}))


@dataclass(frozen=True)
class Case:
    fault: Fault
    function: str
    params: dict[str, Any]
    event: dict[str, Any]
    qualifier: str | None
    status: str
    error_type: str
    error_contains: str
    prepare: Prepare | None = field(default=None, compare=False)
    healthy: dict[str, Any] | None = None  # the event that succeeds after restore (default: ``event``)


def _bad_code(kind: str, status: str, error_type: str, error: str) -> Case:
    return Case(
        DEPLOY_BAD_CODE, ORDERS, {"kind": kind}, names.order_request(), LIVE, status, error_type, error
    )


LIGHT_REPORT = names.report_request(size_mb=10, work_seconds=0.1)


def _node_bad_code(kind: str, status: str, error_type: str, error: str) -> Case:
    return Case(DEPLOY_BAD_CODE, INTAKE, {"kind": kind}, SUBMIT, None, status, error_type, error)


CASES = {
    "timeout": Case(
        CONFIG_TIMEOUT,
        REPORT,
        {"seconds": 1},
        names.report_request(work_seconds=2.0),
        None,
        "timed_out",
        "Sandbox.Timedout",
        "Task timed out after 1.00 seconds",
        healthy=LIGHT_REPORT,
    ),
    "memory": Case(
        CONFIG_MEMORY,
        REPORT,
        {"mb": 128},
        names.report_request(),
        None,
        "out_of_memory",
        "Runtime.ExitError",
        "signal: killed",
        healthy=LIGHT_REPORT,
    ),
    "env-unset-input-bucket": Case(
        CONFIG_ENV,
        FN,
        {"unset": "INPUT_BUCKET"},
        names.input_event(),
        None,
        "failed",
        "KeyError",
        "INPUT_BUCKET",
    ),
    "env-unset-table-name": Case(
        CONFIG_ENV,
        ORDERS,
        {"unset": "TABLE_NAME"},
        names.order_request(),
        None,
        "failed",
        "KeyError",
        "TABLE_NAME",
    ),
    "env-set": Case(
        CONFIG_ENV,
        FN,
        {"set_": ("INPUT_BUCKET", SECRET)},
        names.input_event(),
        None,
        "failed",
        "AccessDenied",  # the role may read its own bucket only
        "when calling the GetObject operation",
    ),
    "bad-code-import-error": _bad_code(
        "import-error", "failed", "Runtime.ImportModuleError", f"No module named '{MISSING_MODULE}'"
    ),
    "bad-code-exception": _bad_code("exception", "failed", "RuntimeError", EXCEPTION_MESSAGE),
    "bad-code-memory-hog": _bad_code("memory-hog", "out_of_memory", "Runtime.ExitError", "signal: killed"),
    "bad-code-slow": Case(  # without an alias, and data-processor's timeout is 3 s (orders-api's 5 s)
        DEPLOY_BAD_CODE,
        FN,
        {"kind": "slow"},
        names.input_event(),
        None,
        "timed_out",
        "Sandbox.Timedout",
        "Task timed out after 3.00 seconds",
    ),
    # order-intake: Node.js 22, an ES module (index.mjs) writing with the AWS SDK for JavaScript v3.
    # An ES module's missing package is not a Runtime.ImportModuleError (the runtime client wraps only
    # require's MODULE_NOT_FOUND): Lambda reports the Error itself, as in
    # https://github.com/aws/aws-lambda-base-images/issues/80 ("errorType": "Error", "Cannot find package
    # '@aws-sdk/client-lambda' imported from /var/task/XXX.mjs", "code": "ERR_MODULE_NOT_FOUND").
    "node-bad-code-import-error": _node_bad_code(
        "import-error", "failed", "Error", f"Cannot find package '{MISSING_MODULE}' imported from"
    ),
    "node-bad-code-exception": _node_bad_code("exception", "failed", "Error", EXCEPTION_MESSAGE),
    "node-bad-code-slow": _node_bad_code(
        "slow", "timed_out", "Sandbox.Timedout", "Task timed out after 5.00 seconds"
    ),
    "node-bad-code-memory-hog": _node_bad_code(
        "memory-hog", "out_of_memory", "Runtime.ExitError", "signal: killed"
    ),
    "node-env-unset-table-name": Case(  # the SDK sends no TableName; DynamoDB refuses it as invalid
        CONFIG_ENV,
        INTAKE,
        {"unset": "TABLE_NAME"},
        SUBMIT,
        None,
        "failed",
        "ValidationException",
        "Value null at 'tableName' failed to satisfy constraint",
    ),
    "node-dependency-table": Case(
        DEPENDENCY_REMOVE,
        INTAKE,
        {"table": True},
        SUBMIT,
        None,
        "failed",
        "ResourceNotFoundException",
        "Requested resource not found",
    ),
    "dependency-table": Case(
        DEPENDENCY_REMOVE,
        ORDERS,
        {"table": True},
        names.order_request(),
        LIVE,
        "failed",
        "ResourceNotFoundException",
        "when calling the GetItem operation",
        _binary_item_and_tags,
    ),
    "dependency-bucket": Case(
        DEPENDENCY_REMOVE,
        FN,
        {"bucket": True},
        names.input_event(),
        None,
        "failed",
        "NoSuchBucket",
        "when calling the GetObject operation",
        _extra_object_and_tags,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_inject_fails_the_function_and_restore_is_exact(
    sandbox: Sandbox, operator: boto3.Session, runtime: LocalLambdaRuntime, undo: Undo, case: str
) -> None:
    c = CASES[case]
    if c.prepare:
        c.prepare(operator, undo)
    if c.function == INTAKE:  # its healthy invocation at the end writes an order
        key = {"order_id": {"S": INTAKE_ORDER}}
        undo(lambda: operator.client("dynamodb").delete_item(TableName=names.ORDERS_TABLE, Key=key))
    before = _state(operator, c.function)
    chaos = Chaos(sandbox.session(names.OPERATOR), say=lambda _: None)
    undo(lambda: chaos.restore(c.fault, c.function))  # a safety net: finds nothing when the test passes
    saved = chaos.inject(c.fault, c.function, **c.params)
    assert chaos.calls[0].operation == "PutParameter"
    assert chaos.ledger.load(c.function, c.fault.name) == saved

    failed = runtime.invoke(c.function, c.event, c.qualifier)
    assert (failed.status, failed.error_type) == (c.status, c.error_type), failed.error
    assert c.error_contains in (failed.error or "")

    assert chaos.restore(c.fault, c.function) is True
    assert _state(operator, c.function) == before
    assert chaos.ledger.load(c.function, c.fault.name) is None
    healthy = runtime.invoke(c.function, c.healthy or c.event, c.qualifier)
    assert healthy.status == "succeeded", healthy.error


def test_a_second_env_inject_keeps_the_first_saved_environment(operator: boto3.Session, undo: Undo) -> None:
    before = _state(operator, FN)
    chaos = Chaos(operator, say=lambda _: None)
    undo(lambda: chaos.restore(CONFIG_ENV, FN))
    chaos.inject(CONFIG_ENV, FN, unset="INPUT_BUCKET")
    again = chaos.inject(CONFIG_ENV, FN, set_=("EXTRA", "1"))
    assert again.prior["variables"] == {"INPUT_BUCKET": names.INPUT_BUCKET}
    config = operator.client("lambda").get_function_configuration(FunctionName=FN)
    assert config["Environment"]["Variables"] == {"EXTRA": "1"}  # both changes in place
    assert chaos.restore(CONFIG_ENV, FN) is True
    assert _state(operator, FN) == before


# --- dry runs, restore without inject, the tag guard -----------------------------------------------------

DRY_RUNS = (
    "timeout",
    "env-unset-input-bucket",
    "bad-code-exception",
    "dependency-table",
    "dependency-bucket",
)


@pytest.mark.parametrize("case", DRY_RUNS)
def test_a_dry_run_changes_nothing_and_plans_the_calls_a_real_run_makes(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo, case: str
) -> None:
    c = CASES[case]
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    printed: list[str] = []
    planned = Chaos(session, dry_run=True, say=printed.append)
    planned.inject(c.fault, c.function, **c.params)
    assert recorder.changes == []
    assert planned.ledger.load(c.function, c.fault.name) is None
    assert [line.split(" {")[0] for line in printed if "would call" in line] == [
        f"  would call {call.service}:{call.operation}" for call in planned.calls
    ]

    real = Chaos(operator, say=lambda _: None)
    undo(lambda: real.restore(c.fault, c.function))
    real.inject(c.fault, c.function, **c.params)
    assert [c.operation for c in planned.calls] == [c.operation for c in real.calls]
    assert real.restore(c.fault, c.function) is True


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_restore_without_inject_reports_it_and_changes_nothing(sandbox: Sandbox, fault: Fault) -> None:
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    lines: list[str] = []
    assert Chaos(session, say=lines.append).restore(fault, ORDERS) is False
    assert recorder.changes == []
    assert lines == [f"  nothing to restore: no saved state for {fault.name} on {ORDERS}"]


TAG_GUARD = ("timeout", "memory", "env-unset-table-name", "bad-code-exception", "dependency-bucket")


@pytest.mark.parametrize("case", TAG_GUARD)
def test_a_function_without_the_chaos_tag_is_refused(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo, case: str
) -> None:
    c = CASES[case]
    client = operator.client("lambda")
    arn = sandbox.world.function_arns[c.function]
    key, value = names.CHAOS_TAG
    client.untag_resource(Resource=arn, TagKeys=[key])
    undo(lambda: client.tag_resource(Resource=arn, Tags={key: value}))
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    with pytest.raises(ChaosRefused, match="chaos-allowed=true") as refused:
        Chaos(session, say=lambda _: None).inject(c.fault, c.function, **c.params)
    assert f"aws lambda tag-resource --resource {arn}" in str(refused.value)
    assert recorder.changes == []


# --- refusals and bad parameters ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "function", "params", "error", "message"),
    [
        (
            CONFIG_ENV,
            FN,
            {"unset": "NOT_SET"},
            ChaosRefused,
            "nothing to unset: NOT_SET is not set on data-processor",
        ),
        (CONFIG_ENV, FN, {}, ChaosError, "give a variable to unset, or one to set"),
        (
            CONFIG_ENV,
            FN,
            {"set_": ("1BAD", "x")},
            ChaosError,
            "'1BAD' is not a valid environment variable name",
        ),
        (CONFIG_TIMEOUT, FN, {"seconds": 0}, ChaosError, "from 1 to 900, not 0"),
        (CONFIG_MEMORY, FN, {"mb": 64}, ChaosError, "from 128 to 10240, not 64"),
        (
            DEPLOY_BAD_CODE,
            ORDERS,
            {"kind": "typo"},
            ChaosError,
            "kind must be one of import-error, exception",
        ),
        (
            DEPENDENCY_REMOVE,
            ORDERS,
            {"table": True, "bucket": True},
            ChaosError,
            "exactly one of table, bucket",
        ),
        (DEPENDENCY_REMOVE, FN, {"table": True}, ChaosRefused, "data-processor names no table (TABLE_NAME)"),
        (
            DEPENDENCY_REMOVE,
            ORDERS,
            {"bucket": True},
            ChaosRefused,
            "orders-api names no bucket (INPUT_BUCKET",
        ),
    ],
)
def test_a_refused_or_bad_request_changes_nothing_and_leaves_no_saved_state(
    sandbox: Sandbox, fault: Fault, function: str, params: dict[str, Any], error: type, message: str
) -> None:
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    chaos = Chaos(session, say=lambda _: None)
    with pytest.raises(error) as raised:
        chaos.inject(fault, function, **params)
    assert message in str(raised.value)
    assert recorder.changes == ["ssm:PutParameter", "ssm:DeleteParameter"]  # the saved state, dropped
    assert chaos.ledger.load(function, fault.name) is None


def test_state_larger_than_the_ledger_is_refused_before_anything_is_saved(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo
) -> None:
    client, s3 = operator.client("lambda"), operator.client("s3")
    bucket = "chaos-too-big-input"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": sandbox.region})
    undo(lambda: s3.delete_bucket(Bucket=bucket))
    s3.put_object(Bucket=bucket, Key="big.bin", Body=os.urandom(7000))
    undo(lambda: s3.delete_object(Bucket=bucket, Key="big.bin"))
    client.create_function(
        FunctionName="chaos-too-big",
        Runtime="python3.12",
        Role=sandbox.world.role_arn,
        Handler="app.handler",
        Code={
            "ZipFile": zip_files(
                {"app.py": b"def handler(event, context):\n    return 1\n", "data.bin": os.urandom(9000)}
            )
        },
        Environment={"Variables": {"INPUT_BUCKET": bucket}},
        Tags=dict([names.CHAOS_TAG]),
    )
    undo(lambda: client.delete_function(FunctionName="chaos-too-big"))
    chaos = Chaos(operator, say=lambda _: None)
    for fault, params in ((DEPLOY_BAD_CODE, {"kind": "exception"}), (DEPENDENCY_REMOVE, {"bucket": True})):
        with pytest.raises(ChaosRefused, match="at most 8192 bytes per fault") as refused:
            chaos.inject(fault, "chaos-too-big", **params)
        assert "Nothing was changed" in str(refused.value)
        assert chaos.ledger.load("chaos-too-big", fault.name) is None
    assert chaos.calls == []


# --- environment values are never printed ---------------------------------------------------------------


def _env_session(sandbox: Sandbox, capsys: pytest.CaptureFixture[str], undo: Undo) -> list[str]:
    """Every line printed by a dry run, an inject, a refusal and a restore of config-env."""
    session = sandbox.session(names.OPERATOR)
    Chaos(session, dry_run=True, say=print).inject(CONFIG_ENV, FN, set_=("INPUT_BUCKET", SECRET))
    chaos = Chaos(session, say=print)
    undo(lambda: chaos.restore(CONFIG_ENV, FN))
    chaos.inject(CONFIG_ENV, FN, set_=("INPUT_BUCKET", SECRET))
    with pytest.raises(ChaosRefused) as refused:
        chaos.inject(CONFIG_ENV, FN, unset="NOT_SET")
    print(refused.value)
    chaos.restore(CONFIG_ENV, FN)
    return capsys.readouterr().out.splitlines()


def test_environment_values_are_never_printed(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str], undo: Undo
) -> None:
    lines = _env_session(sandbox, capsys, undo)
    assert any(
        "lambda:UpdateFunctionConfiguration" in line and '"INPUT_BUCKET": "***"' in line for line in lines
    )
    shown = [line for line in lines if "ssm:PutParameter" not in line]  # the ledger's line: see below
    assert not [line for line in shown if SECRET in line or names.INPUT_BUCKET in line]


def test_the_ledger_line_does_not_print_the_saved_environment(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str], undo: Undo
) -> None:
    lines = _env_session(sandbox, capsys, undo)
    assert not [line for line in lines if names.INPUT_BUCKET in line]


def test_lambda_errors_are_scrubbed_of_environment_values(operator: boto3.Session) -> None:
    chaos = Chaos(operator, say=lambda _: None)
    target = Target(FN, {"Environment": {"Variables": {"INPUT_BUCKET": names.INPUT_BUCKET}}})
    prior = {"function": FN, "variables": {"INPUT_BUCKET": names.INPUT_BUCKET}}
    with Stubber(chaos.client("lambda")) as stub:
        stub.add_response("get_function_configuration", {"LastUpdateStatus": "Successful", "State": "Active"})
        stub.add_client_error(
            "update_function_configuration",
            service_error_code="InvalidParameterValueException",
            service_message=f'variables exceeded the 4KB limit. String measured: {{"AB":"{SECRET}"}}',
        )
        with pytest.raises(ChaosError) as raised:
            CONFIG_ENV.apply(chaos, target, prior, set_=("AB", SECRET))
    assert "InvalidParameterValueException" in str(raised.value)
    assert SECRET not in str(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None


# --- waiting for Lambda to finish an update --------------------------------------------------------------


def test_waits_while_the_update_is_in_progress_and_reports_a_failed_one(operator: boto3.Session) -> None:
    chaos = Chaos(operator, say=lambda _: None)
    with Stubber(chaos.client("lambda")) as stub:
        for status in ("InProgress", "InProgress", "Successful"):
            stub.add_response("get_function_configuration", {"LastUpdateStatus": status, "State": "Active"})
        wait_until_updated(chaos, FN, poll_seconds=0)
        stub.assert_no_pending_responses()
        stub.add_response(
            "get_function_configuration",
            {"LastUpdateStatus": "Failed", "LastUpdateStatusReason": "no space", "State": "Active"},
        )
        with pytest.raises(ChaosError, match="the update of data-processor failed: no space"):
            wait_until_updated(chaos, FN, poll_seconds=0)


# --- config-logging ------------------------------------------------------------------------------------


def test_config_logging_switches_the_format_and_restore_puts_the_logging_config_back(
    operator: boto3.Session, undo: Undo
) -> None:
    before = _state(operator, FN)
    chaos = Chaos(operator, say=lambda _: None)
    undo(lambda: chaos.restore(CONFIG_LOGGING, FN))
    saved = chaos.inject(CONFIG_LOGGING, FN, log_format="JSON")
    assert saved.prior["logging"] == before["config"]["LoggingConfig"]
    shown = operator.client("lambda").get_function_configuration(FunctionName=FN)["LoggingConfig"]
    levels = {"ApplicationLogLevel": "INFO", "SystemLogLevel": "INFO"}  # Lambda's defaults with JSON
    assert shown == before["config"]["LoggingConfig"] | {"LogFormat": "JSON"} | levels
    assert [c.operation for c in chaos.calls] == ["PutParameter", "UpdateFunctionConfiguration"]
    assert chaos.calls[1].params["LoggingConfig"] == {"LogFormat": "JSON"}
    assert chaos.restore(CONFIG_LOGGING, FN) is True
    assert _state(operator, FN) == before


@pytest.mark.parametrize(
    ("function", "params", "shown"),
    [
        (  # report-builder logs in JSON at INFO: the system level raised
            REPORT,
            {"system_level": "WARN"},
            {"LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN"},
        ),
        (  # data-processor logs in Text: switched to JSON with levels; putting Text back drops them
            FN,
            {"log_format": "JSON", "application_level": "ERROR", "system_level": "WARN"},
            {"LogFormat": "JSON", "ApplicationLogLevel": "ERROR", "SystemLogLevel": "WARN"},
        ),
    ],
)
def test_config_logging_sets_the_levels_and_restore_puts_the_logging_config_back(
    operator: boto3.Session, undo: Undo, function: str, params: dict[str, Any], shown: dict[str, str]
) -> None:
    before = _state(operator, function)
    chaos = Chaos(operator, say=lambda _: None)
    undo(lambda: chaos.restore(CONFIG_LOGGING, function))
    chaos.inject(CONFIG_LOGGING, function, **params)
    config = operator.client("lambda").get_function_configuration(FunctionName=function)["LoggingConfig"]
    assert config == shown | {"LogGroup": f"/aws/lambda/{function}"}
    assert chaos.restore(CONFIG_LOGGING, function) is True
    assert _state(operator, function) == before


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "give a log format, an application log level or a system log level"),
        ({"system_level": "ERROR"}, "SystemLogLevel must be one of DEBUG, INFO, WARN, not 'ERROR'"),
        ({"log_format": "XML"}, "LogFormat must be one of Text, JSON, not 'XML'"),
        ({"system_level": "WARN", "log_format": "Text"}, "log levels apply only to the JSON log format"),
        ({"system_level": "WARN"}, "log levels apply only to the JSON log format"),
    ],
)
def test_config_logging_refuses_what_lambda_would_not_take(
    sandbox: Sandbox, params: dict[str, Any], message: str
) -> None:
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    chaos = Chaos(session, say=lambda _: None)
    with pytest.raises(ChaosError, match=message):
        chaos.inject(CONFIG_LOGGING, FN, **params)
    assert recorder.changes == ["ssm:PutParameter", "ssm:DeleteParameter"]
    assert chaos.ledger.load(FN, CONFIG_LOGGING.name) is None
