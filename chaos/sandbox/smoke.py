"""The sandbox smoke: what `make drill` runs until the full drill exists.

Healthy invocation → revoke the function's S3 policy → failing invocation with a genuine AccessDenied →
alarm on SNS → SNS Lambda event → restore → healthy again. Prints each step; returns success.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.alarms import drain_sns_events
from chaos.workload.runtime import LocalLambdaRuntime

Say = Callable[[str], None]


def _check(say: Say, ok: bool, what: str) -> bool:
    say(f"  {'ok ' if ok else 'FAIL'} {what}")
    return ok


def run_smoke(sandbox: Sandbox, say: Say = print) -> bool:
    operator = sandbox.session(names.OPERATOR)
    iam, logs = operator.client("iam"), operator.client("logs")
    results: list[bool] = []
    with LocalLambdaRuntime(
        sandbox.session(names.LAMBDA_SERVICE), alarm_topic_arn=sandbox.world.topic_arn
    ) as runtime:
        say("1. healthy invocation of data-processor")
        healthy = runtime.invoke(names.FUNCTION_NAME, names.input_event())
        results.append(
            _check(say, healthy.status == "succeeded", f"status {healthy.status}, result {healthy.result}")
        )
        events = logs.filter_log_events(logGroupName=names.LOG_GROUP)["events"]
        results.append(_check(say, len(events) >= 4, f"{len(events)} log lines in {names.LOG_GROUP}"))

        say(f"2. operator deletes inline policy {names.INLINE_POLICY_NAME} from {names.ROLE_NAME}")
        saved = iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)[
            "PolicyDocument"
        ]
        iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)
        failed = runtime.invoke(names.FUNCTION_NAME, names.input_event())
        results.append(
            _check(
                say, failed.status == "failed" and "AccessDenied" in (failed.error or ""), f"{failed.error}"
            )
        )
        sns_events = drain_sns_events(
            operator.client("sqs"),
            sandbox.world.trigger_queue_url,
            sandbox.world.trigger_subscription_arn,
            wait_seconds=2,
        )
        alarm = json.loads(sns_events[0]["Records"][0]["Sns"]["Message"]) if sns_events else {}
        results.append(
            _check(
                say,
                alarm.get("NewStateValue") == "ALARM"
                and alarm.get("Trigger", {}).get("MetricName") == "Errors",
                f"{len(sns_events)} SNS event(s) from the trigger queue: {alarm.get('AlarmName')} → "
                f"{alarm.get('NewStateValue')}",
            )
        )

        say("3. operator restores the policy")
        iam.put_role_policy(
            RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME, PolicyDocument=json.dumps(saved)
        )
        restored = runtime.invoke(names.FUNCTION_NAME, names.input_event())
        results.append(_check(say, restored.status == "succeeded", f"status {restored.status}"))
    return all(results)


def main(say: Say = print) -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="incident-sandbox-") as state_dir:
        say("starting the embedded AWS sandbox (moto server mode, IAM enforced) ...")
        with running_sandbox(state_dir) as sandbox:
            say(f"  ready at {sandbox.endpoint_url} in {time.monotonic() - started:.1f}s (pid {os.getpid()})")
            ok = run_smoke(sandbox, say)
    say(f"sandbox smoke {'passed' if ok else 'FAILED'} in {time.monotonic() - started:.1f}s")
    return 0 if ok else 1
