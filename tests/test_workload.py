"""The real data-processor handler under the local runtime: IAM, concurrency and egress decide what fails."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chaos.faults.iam import REVOKE_CLOUDWATCH, REVOKE_S3
from chaos.faults.network import BLOCK_EGRESS
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from tests.conftest import Inject, Undo

Drain = Callable[..., list[dict[str, Any]]]


def _log_messages(sandbox: Sandbox) -> list[str]:
    logs = sandbox.session(names.OPERATOR).client("logs")
    return [e["message"] for e in logs.filter_log_events(logGroupName=names.LOG_GROUP)["events"]]


def _alarm(event: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(event["Records"][0]["Sns"]["Message"])
    return message


def test_healthy_invocation_succeeds_and_logs(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain
) -> None:
    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())
    assert invocation.status == "succeeded"
    assert invocation.result == {"orders": 25, "total": 1000.0}
    assert invocation.logs_written
    mine = [m for m in _log_messages(sandbox) if invocation.request_id in m]
    assert mine[0].startswith(f"START RequestId: {invocation.request_id}")
    assert any("processed 25 orders" in m for m in mine)
    assert mine[-2].startswith(f"END RequestId: {invocation.request_id}")
    assert mine[-1].startswith(f"REPORT RequestId: {invocation.request_id}\tDuration:")
    assert alarm_events() == []


def test_deleted_inline_policy_fails_with_genuine_access_denied_and_alarms(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain, inject: Inject
) -> None:
    inject(REVOKE_S3)

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "failed"
    assert invocation.error is not None
    denial = "An error occurred (AccessDenied) when calling the GetObject operation"
    assert denial in invocation.error
    assert any(m.startswith("[ERROR]") and denial in m and "Traceback" in m for m in _log_messages(sandbox))

    events = alarm_events(wait_seconds=2)
    assert len(events) == 1
    record = events[0]["Records"][0]
    assert record["EventSource"] == "aws:sns"
    sns = record["Sns"]
    assert sns["MessageId"] == invocation.alarm_message_id
    assert sns["TopicArn"] == sandbox.world.topic_arn
    assert sns["Subject"] == 'ALARM: "data-processor-errors" in Canada (Central)'
    assert sns["Timestamp"]
    alarm = _alarm(events[0])
    assert alarm["NewStateValue"] == "ALARM"
    assert alarm["Trigger"]["MetricName"] == "Errors"
    assert alarm["Trigger"]["Dimensions"] == [{"value": names.FUNCTION_NAME, "name": "FunctionName"}]
    assert alarm["StateChangeTime"].endswith("+0000")


def test_alarm_fires_once_per_transition(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain, undo: Undo
) -> None:
    iam = sandbox.session(names.OPERATOR).client("iam")
    saved = iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)[
        "PolicyDocument"
    ]

    def restore() -> None:
        iam.put_role_policy(
            RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME, PolicyDocument=json.dumps(saved)
        )

    iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
    undo(restore)
    first, second = (runtime.invoke(names.FUNCTION_NAME, names.input_event()) for _ in range(2))
    assert first.alarm_message_id
    assert second.alarm_message_id is None
    restore()
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "succeeded"
    iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).alarm_message_id
    assert len(alarm_events(wait_seconds=1)) == 2


def test_detached_logs_policy_leaves_no_log_lines(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    inject(REVOKE_CLOUDWATCH)
    before = _log_messages(sandbox)

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "succeeded"
    assert not invocation.logs_written
    assert _log_messages(sandbox) == before


def test_reserved_concurrency_zero_throttles(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, alarm_events: Drain, inject: Inject
) -> None:
    inject(THROTTLE, concurrency=0)
    before = _log_messages(sandbox)

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "throttled"
    assert _log_messages(sandbox) == before  # a throttled request never reaches the function
    alarms = [_alarm(e) for e in alarm_events(wait_seconds=2)]
    assert [a["Trigger"]["MetricName"] for a in alarms] == ["Throttles"]


def test_reserved_concurrency_one_throttles_a_burst_beyond_one(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    inject(THROTTLE, concurrency=1)

    burst = runtime.invoke_burst(names.FUNCTION_NAME, names.input_event(work_seconds=0.5), count=4)

    assert sorted(i.status for i in burst) == ["succeeded", "throttled", "throttled", "throttled"]


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
    assert [_alarm(e)["Trigger"]["MetricName"] for e in alarm_events(wait_seconds=2)] == ["Errors"]
