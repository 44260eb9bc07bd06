"""The sandbox's functions under its Lambda runtime: IAM, concurrency and the VPC decide what fails, and
CloudWatch alarms fire from the metrics the runtime publishes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime, RuntimeSettings
from tests.conftest import Inject

Drain = Callable[..., list[dict[str, Any]]]


def _log_messages(sandbox: Sandbox, group: str = names.LOG_GROUP) -> list[str]:
    logs = sandbox.session(names.OPERATOR).client("logs")
    return [e["message"] for e in logs.filter_log_events(logGroupName=group)["events"]]


def _alarm(event: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(event["Records"][0]["Sns"]["Message"])
    return message


def _alarm_names(events: list[dict[str, Any]]) -> list[str]:
    return sorted(_alarm(e)["AlarmName"] for e in events)


def test_healthy_invocation_succeeds_logs_and_raises_no_alarm(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain
) -> None:
    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "succeeded", invocation.error
    assert invocation.result == {"orders": 25, "total": 1000.0}
    assert invocation.logs_written
    mine = [m for m in _log_messages(sandbox) if invocation.request_id in m]
    assert mine[0].startswith(f"START RequestId: {invocation.request_id}")
    assert any("processed 25 orders" in m for m in mine)
    assert any(m.startswith(f"END RequestId: {invocation.request_id}") for m in mine)
    report = next(m for m in mine if m.startswith(f"REPORT RequestId: {invocation.request_id}\tDuration:"))
    assert f"Max Memory Used: {invocation.max_memory_mb} MB" in report
    assert alarm_events(wait_seconds=2) == []


def test_deleted_inline_policy_fails_with_genuine_access_denied_and_alarms(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain, inject: Inject
) -> None:
    inject(REVOKE_S3)

    first, second = (runtime.invoke(names.FUNCTION_NAME, names.input_event()) for _ in range(2))

    assert (first.status, second.status) == ("failed", "failed")
    assert first.error is not None
    denial = "An error occurred (AccessDenied) when calling the GetObject operation"
    assert denial in first.error
    assert any(
        m.startswith("[ERROR] AccessDenied: ") and denial in m and "Traceback" in m
        for m in _log_messages(sandbox)
    )

    events = alarm_events(wait_seconds=3)
    assert _alarm_names(events) == [f"{names.FUNCTION_NAME}-errors"]  # one transition, one notification
    record = events[0]["Records"][0]
    assert record["EventSource"] == "aws:sns"
    sns = record["Sns"]
    assert sns["TopicArn"] == sandbox.world.topic_arn
    assert sns["Subject"] == 'ALARM: "data-processor-errors" in Canada (Central)'
    alarm = _alarm(events[0])
    assert alarm["NewStateValue"] == "ALARM"
    assert alarm["Trigger"]["MetricName"] == "Errors"
    assert alarm["Trigger"]["Dimensions"] == [{"value": names.FUNCTION_NAME, "name": "FunctionName"}]


def test_detached_logs_policy_leaves_no_log_lines_and_raises_the_log_silence_alarm(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain, inject: Inject
) -> None:
    inject(REVOKE_CLOUDWATCH)
    before = _log_messages(sandbox)

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "succeeded"
    assert not invocation.logs_written
    assert _log_messages(sandbox) == before
    assert _alarm_names(alarm_events(wait_seconds=3)) == [f"{names.FUNCTION_NAME}-log-silence"]


def test_reserved_concurrency_zero_throttles(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain, inject: Inject
) -> None:
    inject(THROTTLE, concurrency=0)
    before = _log_messages(sandbox)

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "throttled"
    assert _log_messages(sandbox) == before  # a throttled request never reaches the function
    alarms = [_alarm(e) for e in alarm_events(wait_seconds=3)]
    assert [a["Trigger"]["MetricName"] for a in alarms] == ["Throttles"]


def test_reserved_concurrency_one_throttles_a_burst_beyond_one(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    inject(THROTTLE, concurrency=1)

    burst = runtime.invoke_burst(names.FUNCTION_NAME, names.input_event(work_seconds=0.5), count=4)

    assert sorted(i.status for i in burst) == ["succeeded", "throttled", "throttled", "throttled"]


def test_the_account_concurrency_limit_throttles_across_functions(sandbox: Sandbox) -> None:
    settings = RuntimeSettings(account_concurrency_limit=2)
    with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE), settings) as runtime:
        burst = runtime.invoke_burst(names.FUNCTION_NAME, names.input_event(work_seconds=0.5), count=4)
    assert sorted(i.status for i in burst) == ["succeeded", "succeeded", "throttled", "throttled"]


def test_security_group_without_https_egress_times_out(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain, inject: Inject
) -> None:
    inject(BLOCK_EGRESS)

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "timed_out", invocation.error
    timeout_line = (
        f"{invocation.request_id} Task timed out after {names.FUNCTION_TIMEOUT_SECONDS:.2f} seconds"
    )
    assert any(timeout_line in m for m in _log_messages(sandbox))
    assert any(
        m.startswith(f"REPORT RequestId: {invocation.request_id}") and m.rstrip().endswith("Status: timeout")
        for m in _log_messages(sandbox)
    )
    assert _alarm_names(alarm_events(wait_seconds=3)) == [f"{names.FUNCTION_NAME}-errors"]
