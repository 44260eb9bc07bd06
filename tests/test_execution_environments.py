"""Execution environments run what is deployed, with the function's environment, and enforce its limits."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.sandbox.world import package
from chaos.workload.environment import ExecutionEnvironment, Spec
from chaos.workload.runtime import InvokeError, LocalLambdaRuntime
from tests.conftest import Undo
from tests.packages import zip_files

PROBE = "env-probe"
PROBE_SOURCE = """
import os, time
STARTED = time.time()

def handler(event, context):
    return {
        "pid": os.getpid(),
        "variables": sorted(os.environ),
        "greeting": os.environ.get("GREETING"),
        "key_id_prefix": os.environ["AWS_ACCESS_KEY_ID"][:4],
        "function_name": context.function_name,
        "invoked_arn": context.invoked_function_arn,
        "request_id": context.aws_request_id,
        "memory": context.memory_limit_in_mb,
        "remaining_ms": context.get_remaining_time_in_millis(),
    }
"""


def _log_messages(sandbox: Sandbox, function: str) -> list[str]:
    logs = sandbox.session(names.OPERATOR).client("logs")
    return [e["message"] for e in logs.filter_log_events(logGroupName=f"/aws/lambda/{function}")["events"]]


def _platform_record(sandbox: Sandbox, kind: str, request_id: str) -> dict[str, Any]:
    """The ``record`` of report-builder's JSON platform record ``kind`` for ``request_id``."""
    for message in _log_messages(sandbox, names.REPORT_FUNCTION):
        if message.startswith("{"):
            event = json.loads(message)
            if event.get("type") == kind and event["record"].get("requestId") == request_id:
                return dict(event["record"])
    raise AssertionError(f"no {kind} for {request_id}")


def _reconfigure(sandbox: Sandbox, undo: Undo, function: str, **changes: Any) -> None:
    """Change the function's configuration for this test; put the old values back afterwards."""
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    config = lambda_.get_function_configuration(FunctionName=function)
    saved = {key: config.get(key) or {} if key == "Environment" else config[key] for key in changes}
    lambda_.update_function_configuration(FunctionName=function, **changes)
    undo(lambda: lambda_.update_function_configuration(FunctionName=function, **saved))


def _redeploy(sandbox: Sandbox, undo: Undo, function: str, module: str, files: dict[str, str]) -> None:
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    lambda_.update_function_code(FunctionName=function, ZipFile=zip_files(files))
    undo(lambda: lambda_.update_function_code(FunctionName=function, ZipFile=package(module)))


@pytest.fixture(scope="module")
def probe(sandbox: Sandbox) -> str:
    operator = sandbox.session(names.OPERATOR)
    operator.client("logs").create_log_group(logGroupName=f"/aws/lambda/{PROBE}")
    operator.client("lambda").create_function(
        FunctionName=PROBE,
        Runtime="python3.12",
        Role=sandbox.world.role_arn,
        Handler="probe.handler",
        Code={"ZipFile": zip_files({"probe.py": PROBE_SOURCE})},
        Timeout=3,
        MemorySize=192,
        Environment={"Variables": {"GREETING": "hello"}},
    )
    return PROBE


def test_the_handler_sees_its_variables_context_and_role_credentials(
    runtime: LocalLambdaRuntime, probe: str
) -> None:
    invocation = runtime.invoke(probe, {})

    assert invocation.status == "succeeded", invocation.error
    seen = invocation.result
    assert seen["greeting"] == "hello"
    assert {"AWS_LAMBDA_FUNCTION_NAME", "AWS_REGION", "AWS_SESSION_TOKEN", "LAMBDA_TASK_ROOT"} <= set(
        seen["variables"]
    )
    assert not {"AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"} & set(seen["variables"])
    assert seen["key_id_prefix"] == "ASIA"  # temporary credentials of the assumed role
    assert seen["function_name"] == probe
    assert seen["invoked_arn"] == f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:{probe}"
    assert seen["request_id"] == invocation.request_id
    assert seen["memory"] == "192"
    assert 2000 < seen["remaining_ms"] <= 3000


def test_an_environment_is_reused_while_warm_and_replaced_when_configuration_changes(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, probe: str, undo: Undo
) -> None:
    cold, warm = runtime.invoke(probe, {}), runtime.invoke(probe, {})
    assert cold.init_duration_ms is not None
    assert cold.init_duration_ms > 0
    assert warm.init_duration_ms is None
    assert warm.result["pid"] == cold.result["pid"]
    report = next(
        m for m in _log_messages(sandbox, probe) if m.startswith(f"REPORT RequestId: {cold.request_id}")
    )
    assert f"Init Duration: {cold.init_duration_ms:.2f} ms" in report

    _reconfigure(sandbox, undo, probe, Environment={"Variables": {"GREETING": "bonjour"}})
    changed = runtime.invoke(probe, {})

    assert changed.init_duration_ms is not None
    assert changed.result["pid"] != cold.result["pid"]
    assert changed.result["greeting"] == "bonjour"


def test_a_code_update_that_breaks_the_import_is_seen_on_the_next_invocation(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "succeeded"
    _redeploy(
        sandbox, undo, names.FUNCTION_NAME, "data_processor", {"data_processor.py": "import orders_schema\n"}
    )

    broken = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert broken.status == "failed"
    assert broken.error_type == "Runtime.ImportModuleError"
    expected = "Unable to import module 'data_processor': No module named 'orders_schema'"
    assert broken.error == f"Runtime.ImportModuleError: {expected}"
    assert any(
        m.startswith(f"[ERROR] Runtime.ImportModuleError: {expected}")
        for m in _log_messages(sandbox, names.FUNCTION_NAME)
    )


def test_a_missing_handler_is_reported_as_lambda_reports_it(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    _reconfigure(sandbox, undo, names.FUNCTION_NAME, Handler="data_processor.main")

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.error == "Runtime.HandlerNotFound: Handler 'main' missing on module 'data_processor'"


def test_a_removed_environment_variable_fails_the_handler_on_it(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    _reconfigure(sandbox, undo, names.FUNCTION_NAME, Environment={"Variables": {}})

    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    assert invocation.status == "failed"
    assert invocation.error == "KeyError: 'INPUT_BUCKET'"


def test_published_versions_and_aliases_run_their_own_code(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    _redeploy(
        sandbox,
        undo,
        names.ORDERS_FUNCTION,
        "orders_api",
        {"orders_api.py": "def handler(event, context):\n    raise RuntimeError('release 2 is broken')\n"},
    )

    latest = runtime.invoke(names.ORDERS_FUNCTION, names.order_request())
    live = runtime.invoke(names.ORDERS_FUNCTION, names.order_request(), qualifier=names.ORDERS_ALIAS)

    assert (latest.status, latest.error) == ("failed", "RuntimeError: release 2 is broken")
    assert live.status == "succeeded", live.error
    assert live.version == "1"
    assert live.result["statusCode"] == 200
    with pytest.raises(InvokeError, match="ResourceNotFoundException"):
        runtime.invoke(names.ORDERS_FUNCTION, names.order_request(), qualifier="canary")


def test_memory_is_measured_and_a_lowered_memory_size_kills_the_worker(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    fits = runtime.invoke(names.REPORT_FUNCTION, names.report_request(size_mb=100, work_seconds=0.2))
    assert fits.status == "succeeded", fits.error
    assert 100 < fits.max_memory_mb < 256  # the report itself is 100 MB, resident

    _reconfigure(sandbox, undo, names.REPORT_FUNCTION, MemorySize=128)
    killed = runtime.invoke(names.REPORT_FUNCTION, names.report_request(size_mb=100, work_seconds=0.2))

    assert killed.status == "out_of_memory"
    assert killed.error == "Runtime exited with error: signal: killed"
    assert killed.max_memory_mb == 128
    report = _platform_record(sandbox, "platform.report", killed.request_id)  # report-builder logs JSON
    assert (report["metrics"]["memorySizeMB"], report["metrics"]["maxMemoryUsedMB"]) == (128, 128)
    assert (report["status"], report["errorType"]) == ("error", "Runtime.OutOfMemory")


def test_a_lowered_timeout_kills_the_invocation(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    _reconfigure(sandbox, undo, names.REPORT_FUNCTION, Timeout=1)

    invocation = runtime.invoke(names.REPORT_FUNCTION, names.report_request(size_mb=10, work_seconds=1.5))

    assert invocation.status == "timed_out"
    assert 1000 <= invocation.duration_ms < 1500
    done = _platform_record(sandbox, "platform.runtimeDone", invocation.request_id)
    assert done["status"] == "timeout"
    report = _platform_record(sandbox, "platform.report", invocation.request_id)
    assert report["status"] == "timeout"
    assert 0 < report["metrics"]["maxMemoryUsedMB"] < 256  # measured before the worker was killed


def test_lambda_metrics_are_published_and_readable_by_the_read_only_identity(
    sandbox: Sandbox, runtime: LocalLambdaRuntime
) -> None:
    sandbox.reset_cloudwatch()  # only this test's datapoints
    started = datetime.now(UTC) - timedelta(minutes=1)
    live = [
        runtime.invoke(names.ORDERS_FUNCTION, names.order_request(), qualifier=names.ORDERS_ALIAS)
        for _ in range(3)
    ]
    assert [i.status for i in live] == ["succeeded"] * 3

    cloudwatch = sandbox.session(names.MCP_SERVER).client("cloudwatch")

    def total(metric: str, stat: str, *dimensions: tuple[str, str]) -> float:
        result = cloudwatch.get_metric_data(
            MetricDataQueries=[
                {
                    "Id": "m",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": "AWS/Lambda",
                            "MetricName": metric,
                            "Dimensions": [{"Name": n, "Value": v} for n, v in dimensions],
                        },
                        "Period": 60,
                        "Stat": stat,
                    },
                }
            ],
            StartTime=started,
            EndTime=datetime.now(UTC) + timedelta(minutes=1),
        )["MetricDataResults"][0]
        return float(sum(result["Values"]))

    by_alias = ("Resource", f"{names.ORDERS_FUNCTION}:{names.ORDERS_ALIAS}")
    function = ("FunctionName", names.ORDERS_FUNCTION)
    assert total("Invocations", "Sum", function, by_alias) == 3
    assert total("Errors", "Sum", function, by_alias) == 0
    assert total("Invocations", "Sum", function) >= 3
    assert total("Duration", "Maximum", function, by_alias) == pytest.approx(max(i.duration_ms for i in live))


SLEEPER_SOURCE = """
import time

def handler(event, context):
    time.sleep(event["seconds"])
    return "done"
"""


class _LateCollector(ExecutionEnvironment):
    """An environment whose invoking thread runs ``late`` seconds after it hands the request over, as a
    thread of a busy process may."""

    late = 0.0

    def _send(self, request: dict[str, Any]) -> None:
        super()._send(request)
        time.sleep(self.late)


def _sleeper(timeout_seconds: float, late: float) -> _LateCollector:
    spec = Spec(
        function_name="sleeper",
        version="$LATEST",
        handler="sleeper.handler",
        memory_mb=128,
        timeout_seconds=timeout_seconds,
        variables={},
        log_group="/aws/lambda/sleeper",
        log_stream="stream",
        region=names.DEFAULT_REGION,
    )
    keys = {"AccessKeyId": "AKIDSLEEPER", "SecretAccessKey": "secret", "SessionToken": "token"}
    environment = _LateCollector(spec, zip_files({"sleeper.py": SLEEPER_SOURCE}), keys, "http://127.0.0.1:9")
    environment.late = late
    return environment


@pytest.mark.parametrize(
    ("work", "late", "outcome"),
    [
        # the handler outlives its 1 s while the invoking thread is away: the deadline counted from the
        # hand-off, not from when the thread came back (which would give it until 1.6 s)
        (1.2, 0.6, "timed_out"),
        # the handler answered at once, long before the deadline the thread returns after
        (0.0, 1.5, "succeeded"),
    ],
)
def test_the_deadline_counts_from_the_invoke_whenever_the_invoking_thread_runs(
    work: float, late: float, outcome: str
) -> None:
    environment = _sleeper(timeout_seconds=1.0, late=late)
    try:
        assert environment.init_error is None
        ran = environment.run("r-1", {"seconds": work}, "arn:aws:lambda:::function:sleeper")
        assert ran.outcome == outcome
    finally:
        environment.kill()


def test_an_environment_killed_twice_closes_its_request_pipe_once() -> None:
    """A timed-out environment is killed, then closed again by the runtime: the second kill must not close
    the descriptor number its pipe had, which another part of the process may hold by then."""
    environment = _sleeper(1.0, 0.0)
    number = environment._requests
    environment.kill()
    held: list[int] = []
    try:
        while (fd := os.open(os.devnull, os.O_RDONLY)) != number and len(held) < 256:
            held.append(fd)  # open descriptors until the pipe's old number is handed out again
        held.append(fd)
        assert fd == number, "the old number was not reused: nothing to check"
        environment.kill()
        os.fstat(number)  # still open: the second kill left it alone
    finally:
        for fd in held:
            os.close(fd)
