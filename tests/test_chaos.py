"""The fault injectors on the sandbox: inject, observe, restore byte for byte; the tag guard; dry runs;
restore without inject; and `incident-chaos` as shipped."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from chaos import cli as chaos_cli
from chaos.faults.chaos import Chaos, Fault
from chaos.faults.errors import ChaosRefused
from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3
from chaos.faults.logs import inject_lines
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.runtime import LocalLambdaRuntime
from tests.chaos_support import Recorder
from tests.conftest import Undo

FN = names.FUNCTION_NAME


def _s3_denied(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> None:
    failed = runtime.invoke(FN, names.input_event())
    assert failed.status == "failed"
    assert "AccessDenied" in str(failed.error)


def _logs_lost(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> None:
    silent = runtime.invoke(FN, names.input_event())
    assert (silent.status, silent.logs_written) == ("succeeded", False)


def _throttled(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> None:
    assert runtime.invoke(FN, names.input_event()).status == "throttled"


def _burst_throttled(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> None:
    statuses = sorted(i.status for i in runtime.invoke_burst(FN, names.input_event(work_seconds=0.3), 2))
    assert statuses == ["succeeded", "throttled"]


def _no_https_egress(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> None:
    ec2 = sandbox.session(names.OPERATOR).client("ec2")
    (group,) = ec2.describe_security_groups(GroupIds=[sandbox.world.security_group_id])["SecurityGroups"]
    assert group["IpPermissionsEgress"] == []  # the HTTPS rule was its only one; the timeout: test_workload


CASES: dict[str, tuple[Fault, dict[str, Any], Callable[[Sandbox, LocalLambdaRuntime], None]]] = {
    "iam-s3": (REVOKE_S3, {}, _s3_denied),
    "iam-cloudwatch": (REVOKE_CLOUDWATCH, {}, _logs_lost),
    "throttle-0": (THROTTLE, {"concurrency": 0}, _throttled),
    "throttle-1": (THROTTLE, {"concurrency": 1}, _burst_throttled),
    "network": (BLOCK_EGRESS, {}, _no_https_egress),
}


@pytest.fixture
def untagged(operator: boto3.Session, sandbox: Sandbox, undo: Undo) -> None:
    client = operator.client("lambda")
    key, value = names.CHAOS_TAG
    client.untag_resource(Resource=sandbox.world.function_arn, TagKeys=[key])
    undo(lambda: client.tag_resource(Resource=sandbox.world.function_arn, Tags={key: value}))


@pytest.mark.parametrize("case", list(CASES))
def test_inject_observe_and_restore_byte_for_byte(
    sandbox: Sandbox, operator: boto3.Session, runtime: LocalLambdaRuntime, case: str
) -> None:
    fault, params, observe = CASES[case]
    before = world_snapshot(operator)
    chaos = Chaos(operator, say=lambda _: None)
    try:
        saved = chaos.inject(fault, FN, **params)
        assert world_snapshot(operator) != before
        assert chaos.ledger.load(FN, fault.name) == saved  # the prior state is in SSM before anything breaks
        assert chaos.calls[0].operation == "PutParameter"
        observe(sandbox, runtime)
    finally:
        assert chaos.restore(fault, FN) is True
    assert world_snapshot(operator) == before
    assert chaos.ledger.load(FN, fault.name) is None
    assert runtime.invoke(FN, names.input_event()).status == "succeeded"

    made = len(chaos.calls)
    assert chaos.restore(fault, FN) is False  # a second restore finds nothing and changes nothing
    assert len(chaos.calls) == made


# --- the same faults on the Node.js function and on the JSON-logging one -----------------------------------

INTAKE, REPORT = names.ORDER_INTAKE_FUNCTION, names.REPORT_FUNCTION
INTAKE_ORDER = "chaos-test-order"
EVENTS: dict[str, dict[str, Any]] = {
    INTAKE: names.order_submission(order_id=INTAKE_ORDER),
    REPORT: names.report_request(size_mb=1, work_seconds=0.1),
}
OTHER_CASES: dict[str, tuple[Fault, str, dict[str, Any], tuple[str, bool]]] = {
    # fault, function, params, (the status of one invocation, whether its log lines were written)
    "node-iam-cloudwatch": (REVOKE_CLOUDWATCH, INTAKE, {}, ("succeeded", False)),
    "node-throttle-0": (THROTTLE, INTAKE, {"concurrency": 0}, ("throttled", False)),
    "json-iam-s3": (REVOKE_S3, REPORT, {}, ("failed", True)),
    "json-iam-cloudwatch": (REVOKE_CLOUDWATCH, REPORT, {}, ("succeeded", False)),
    "json-throttle-0": (THROTTLE, REPORT, {"concurrency": 0}, ("throttled", False)),
}


def _invoke_and_discard(operator: boto3.Session, runtime: LocalLambdaRuntime, function: str) -> Any:
    """One invocation, and what it wrote (order-intake's order, report-builder's report) deleted again."""
    invocation = runtime.invoke(function, EVENTS[function])
    if function == INTAKE:
        key = {"order_id": {"S": INTAKE_ORDER}}
        operator.client("dynamodb").delete_item(TableName=names.ORDERS_TABLE, Key=key)
    else:
        key_name = f"reports/{invocation.request_id}.json"
        operator.client("s3").delete_object(Bucket=names.REPORT_BUCKET, Key=key_name)
    return invocation


@pytest.mark.parametrize("case", list(OTHER_CASES))
def test_node_and_json_functions_inject_observe_and_restore_byte_for_byte(
    operator: boto3.Session, runtime: LocalLambdaRuntime, case: str
) -> None:
    fault, function, params, seen = OTHER_CASES[case]
    before = world_snapshot(operator)
    chaos = Chaos(operator, say=lambda _: None)
    try:
        chaos.inject(fault, function, **params)
        assert world_snapshot(operator) != before
        invocation = _invoke_and_discard(operator, runtime, function)
        assert (invocation.status, invocation.logs_written) == seen, invocation.error
        if fault is REVOKE_S3:
            assert "AccessDenied" in str(invocation.error)
            assert "when calling the PutObject operation" in str(invocation.error)
    finally:
        assert chaos.restore(fault, function) is True
    assert world_snapshot(operator) == before
    healthy = _invoke_and_discard(operator, runtime, function)
    assert (healthy.status, healthy.logs_written) == ("succeeded", True), healthy.error


def test_a_second_inject_keeps_the_first_prior_state(operator: boto3.Session) -> None:
    before = world_snapshot(operator)
    chaos = Chaos(operator, say=lambda _: None)
    try:
        chaos.inject(THROTTLE, FN, concurrency=0)
        again = chaos.inject(THROTTLE, FN, concurrency=1)
        assert again.prior == {"function": FN, "reserved": None}  # not the 0 the first inject set
        concurrency = operator.client("lambda").get_function_concurrency(FunctionName=FN)
        assert concurrency["ReservedConcurrentExecutions"] == 1
    finally:
        chaos.restore(THROTTLE, FN)
    assert world_snapshot(operator) == before


@pytest.mark.parametrize(
    "fault", [REVOKE_S3, REVOKE_CLOUDWATCH, THROTTLE, BLOCK_EGRESS], ids=lambda f: f.name
)
def test_restore_without_inject_changes_nothing(sandbox: Sandbox, fault: Fault) -> None:
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    lines: list[str] = []
    assert Chaos(session, say=lines.append).restore(fault, FN) is False
    assert recorder.changes == []
    assert lines == [f"  nothing to restore: no saved state for {fault.name} on {FN}"]


@pytest.mark.parametrize("case", ["iam-s3", "iam-cloudwatch", "throttle-0", "network"])
def test_a_dry_run_makes_no_change_and_prints_the_calls_a_real_run_makes(
    sandbox: Sandbox, operator: boto3.Session, case: str
) -> None:
    fault, params, _ = CASES[case]
    before = world_snapshot(operator)
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    printed: list[str] = []
    planned = Chaos(session, dry_run=True, say=printed.append)
    planned.inject(fault, FN, **params)
    assert recorder.changes == []
    assert world_snapshot(operator) == before
    assert planned.ledger.load(FN, fault.name) is None
    assert [line.split(" {")[0] for line in printed if "would call" in line] == [
        f"  would call {call.service}:{call.operation}" for call in planned.calls
    ]

    real = Chaos(operator, say=lambda _: None)
    try:
        real.inject(fault, FN, **params)
    finally:
        real.restore(fault, FN)

    def shown(call: Any) -> tuple[str, str, dict[str, Any]]:
        drop = {"Value"} if call.operation == "PutParameter" else set()  # holds the save time
        return call.service, call.operation, {k: v for k, v in call.params.items() if k not in drop}

    assert [shown(c) for c in planned.calls] == [shown(c) for c in real.calls[: len(planned.calls)]]


@pytest.mark.usefixtures("untagged")
@pytest.mark.parametrize("case", list(CASES))
def test_a_function_without_the_chaos_tag_is_refused(
    sandbox: Sandbox, operator: boto3.Session, case: str
) -> None:
    fault, params, _ = CASES[case]
    before = world_snapshot(operator)
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    with pytest.raises(ChaosRefused) as refused:
        Chaos(session, say=lambda _: None).inject(fault, FN, **params)
    assert "chaos-allowed=true" in str(refused.value)
    assert f"aws lambda tag-resource --resource {sandbox.world.function_arn}" in str(refused.value)
    with pytest.raises(ChaosRefused):
        inject_lines(Chaos(session, say=lambda _: None), FN, "prompt-injection")
    assert recorder.changes == []
    assert world_snapshot(operator) == before


def test_network_block_refuses_a_function_outside_a_vpc(sandbox: Sandbox, operator: boto3.Session) -> None:
    client = operator.client("lambda")
    client.create_function(
        FunctionName="chaos-no-vpc",
        Runtime="python3.12",
        Role=sandbox.world.role_arn,
        Handler="index.handler",
        Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18},
        Tags=dict([names.CHAOS_TAG]),
    )
    try:
        with pytest.raises(ChaosRefused, match="chaos-no-vpc is not attached to a VPC"):
            Chaos(operator, say=lambda _: None).inject(BLOCK_EGRESS, "chaos-no-vpc")
        assert Chaos(operator, say=lambda _: None).ledger.load("chaos-no-vpc", BLOCK_EGRESS.name) is None
    finally:
        client.delete_function(FunctionName="chaos-no-vpc")


@pytest.mark.parametrize(("kind", "count"), [("prompt-injection", 4), ("flood", 1500)])
def test_log_injection_writes_its_lines_and_saves_nothing(
    operator: boto3.Session, kind: str, count: int
) -> None:
    chaos = Chaos(operator, say=lambda _: None)
    assert inject_lines(chaos, FN, kind, count=count) == count  # type: ignore[arg-type]
    stream = chaos.calls[0].params["logStreamName"]
    logs = operator.client("logs")
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName=names.LOG_GROUP, logStreamNames=[stream]
    )
    messages = [e["message"] for page in pages for e in page["events"]]
    assert len(messages) == count
    if kind == "prompt-injection":
        assert any("ignore all previous instructions" in m for m in messages)
    assert [c.operation for c in chaos.calls] == ["CreateLogStream"] + ["PutLogEvents"] * -(-count // 1000)
    assert chaos.ledger.all(FN) == []


def _cli(sandbox: Sandbox, *args: str, module: str = "chaos.cli") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | sandbox.env
    env |= {"AWS_PROFILE": names.OPERATOR}
    return subprocess.run(
        [sys.executable, "-m", module, *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def cli(
    sandbox: Sandbox, operator: boto3.Session
) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    before = world_snapshot(operator)
    yield lambda *args, **kw: _cli(sandbox, *args, **kw)
    _cli(sandbox, "restore")
    assert world_snapshot(operator) == before


def test_cli_throttle_status_and_unthrottle(cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    throttled = cli("throttle", "--concurrency", "0")
    assert throttled.returncode == 0, throttled.stderr
    assert "lambda:PutFunctionConcurrency" in throttled.stdout
    status = cli("status")
    assert "throttle: injected; prior state saved" in status.stdout
    assert "/incident-response/chaos/data-processor/throttle" in status.stdout
    restored = cli("unthrottle")
    assert restored.returncode == 0
    assert "lambda:DeleteFunctionConcurrency" in restored.stdout  # the prior state was "none"
    assert "no saved fault on data-processor" in cli("status").stdout


def test_cli_the_design_spelling_and_dry_run(cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    planned = cli("revoke", "--target", "s3", "--dry-run", module="chaos.iam_chaos")
    assert planned.returncode == 0, planned.stderr
    assert "would call iam:DeleteRolePolicy" in planned.stdout
    assert "dry run: 2 call(s) would be made; nothing was changed" in planned.stdout
    assert "nothing to restore" in cli("iam", "restore").stdout


_UPDATE_CONFIG = "lambda:UpdateFunctionConfiguration"


@pytest.mark.parametrize(
    ("args", "function", "call"),
    [
        (
            ["config", "timeout", "--seconds", "1"],
            names.REPORT_FUNCTION,
            "lambda:UpdateFunctionConfiguration",
        ),
        (["config", "memory", "--mb", "128"], names.REPORT_FUNCTION, "lambda:UpdateFunctionConfiguration"),
        (
            ["config", "env", "--unset", "INPUT_BUCKET"],
            names.FUNCTION_NAME,
            "lambda:UpdateFunctionConfiguration",
        ),
        (["deploy", "bad-code", "--kind", "exception"], names.ORDERS_FUNCTION, "lambda:UpdateAlias"),
        (["deploy", "copy"], names.FUNCTION_NAME, "lambda:CreateFunction"),
        (["dependency", "remove", "--table"], names.ORDERS_FUNCTION, "dynamodb:DeleteTable"),
        (["iam", "deny", "--action", "s3:GetObject"], names.FUNCTION_NAME, "iam:PutRolePolicy"),
        (["iam", "revoke", "--action", "dynamodb:GetItem"], names.ORDERS_FUNCTION, "iam:PutRolePolicy"),
        (
            ["iam", "narrow", "--to-resource", "arn:aws:dynamodb:::table/x", "--action", "dynamodb:PutItem"],
            names.ORDERS_FUNCTION,
            "iam:PutRolePolicy",
        ),
        (["config", "logging", "--format", "JSON"], names.FUNCTION_NAME, _UPDATE_CONFIG),
        (["network", "block", "--via", "nacl"], names.FUNCTION_NAME, "ec2:CreateNetworkAclEntry"),
        (["network", "block", "--via", "route"], names.FUNCTION_NAME, "ec2:DeleteRoute"),
        (["key", "disable"], names.ORDER_WORKER_FUNCTION, "kms:DisableKey"),
        (
            ["key", "disable", "--state", "pending-deletion"],
            names.ORDER_WORKER_FUNCTION,
            "kms:ScheduleKeyDeletion",
        ),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, list) else None,
)
def test_cli_new_faults_inject_show_and_restore_exactly(
    operator: boto3.Session, args: list[str], function: str, call: str
) -> None:
    """Each new command maps onto its injector (in-process: the shipped entry point is tested above)."""
    before = world_snapshot(operator)
    lines: list[str] = []
    chaos = Chaos(operator, say=lines.append)

    parser = chaos_cli.build_parser(chaos_cli.ChaosSettings())

    def run(*argv: str) -> int:
        return chaos_cli.run(parser.parse_args([*argv, "--function", function]), chaos)

    try:
        assert run(*args) == 0
        shown = "\n".join(lines)
        assert call in shown
        assert "saved state>" in shown  # the ledger line shows the saved state by its size only
        assert names.INPUT_BUCKET not in shown  # nor any environment value
        assert world_snapshot(operator) != before
        lines.clear()
        assert run("status") == 0
        assert "1 fault(s) to restore" in "\n".join(lines)
    finally:
        assert run(args[0], "restore") == 0
    assert world_snapshot(operator) == before


def test_cli_iam_touch_puts_the_policy_again_and_restores(operator: boto3.Session) -> None:
    before = world_snapshot(operator)
    lines: list[str] = []
    chaos = Chaos(operator, say=lines.append)
    parser = chaos_cli.build_parser(chaos_cli.ChaosSettings())
    try:
        assert chaos_cli.run(parser.parse_args(["iam", "touch"]), chaos) == 0
        assert [line.split(" ", 3)[2] for line in lines if line.startswith("  iam:")] == ["iam:PutRolePolicy"]
        assert world_snapshot(operator) == before  # a recorded change that changes nothing
    finally:
        assert chaos_cli.run(parser.parse_args(["iam", "restore"]), chaos) == 0
    assert "restore iam-touch (data-processor)" in lines
    assert chaos.ledger.all(names.FUNCTION_NAME) == []


@pytest.mark.usefixtures("untagged")
def test_cli_refusal_exits_3(cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    refused = cli("network", "block")
    assert refused.returncode == 3
    assert "does not carry the tag chaos-allowed=true" in refused.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["throttle", "--function", "bad name!"], "must be a Lambda function name"),
        (["throttle", "--concurrency", "-1"], "expected a whole number"),
        (["iam", "revoke", "--target", "dynamodb"], "invalid choice: 'dynamodb'"),
        (["iam", "revoke"], "one of the arguments --target --action is required"),
        (["iam", "revoke", "--target", "s3", "--action", "s3:GetObject"], "not allowed with argument"),
        (["iam", "revoke", "--action", "PutItem"], "expected an IAM action"),
        (["config", "logging", "--system-level", "ERROR"], "invalid choice: 'ERROR'"),
        (["logs", "inject", "--kind", "flood", "--lines", "0"], "expected a positive whole number"),
        (["config", "env", "--set", "NOVALUE"], "expected NAME=VALUE"),
        (["config", "env", "--unset", "A", "--set", "B=1"], "not allowed with argument"),
        (["iam", "narrow", "--to-resource", "other-bucket"], "expected an ARN"),
        (["deploy", "bad-code", "--kind", "typo"], "invalid choice: 'typo'"),
        (["dependency", "remove"], "one of the arguments --table --bucket is required"),
        (["network", "block", "--via", "vpn"], "invalid choice: 'vpn'"),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(
    cli: Callable[..., subprocess.CompletedProcess[str]], args: list[str], message: str
) -> None:
    rejected = cli(*args)
    assert rejected.returncode == 2
    assert message in rejected.stderr


def test_cli_unknown_function_says_where_it_looked(
    cli: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    missing = cli("throttle", "--function", "no-such-function")
    assert missing.returncode == 1
    assert "no function no-such-function in ca-central-1: check --function and --region" in missing.stderr
