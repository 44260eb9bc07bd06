"""``get_function_metrics`` against the sandbox, as the read-only `mcp-server` identity: the sandbox's Lambda
runtime publishes the AWS/Lambda metrics and writes the REPORT lines; the tool reads them back."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.config import Config
from mcp import Client

from chaos.faults.iam import REVOKE_S3
from chaos.faults.throttle import THROTTLE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.contract import FunctionMetricsResponse, GetFunctionMetricsArgs
from mcp_server.errors import DiagnosticToolError
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from mcp_server.tools.metrics import function_metrics
from tests.conftest import Inject, Undo
from tests.reduced_reader import reader_without
from tests.tool_support import call_tool

SETTINGS = ServerSettings()
ALIAS_ARN = (
    f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:{names.ORDERS_FUNCTION}:"
    f"{names.ORDERS_ALIAS}"
)
MAX_MEMORY_USED = re.compile(r"^REPORT RequestId: .*\tMax Memory Used: ([0-9]+) MB")


@pytest.fixture(scope="module")
def clients(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(SETTINGS, sandbox.session(names.MCP_SERVER))


def _metrics(clients: AwsClients, lambda_name: str = names.FUNCTION_NAME, **arguments: Any) -> Any:
    args = GetFunctionMetricsArgs(lambda_name=lambda_name, **arguments)
    answer = call_tool(clients, function_metrics, args)
    assert isinstance(answer, FunctionMetricsResponse)
    return answer


def _minute(moment: datetime) -> str:
    return moment.replace(second=0, microsecond=0).isoformat()


def test_a_burst_of_errors_shows_minute_by_minute(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject, clients: AwsClients
) -> None:
    sandbox.reset_cloudwatch()
    inject(REVOKE_S3)
    before = datetime.now(UTC)
    statuses = [runtime.invoke(names.FUNCTION_NAME, names.input_event(i)).status for i in range(3)]
    after = datetime.now(UTC)
    assert statuses == ["failed"] * 3

    answer = _metrics(clients)

    assert (answer.invocations, answer.errors, answer.throttles) == (3, 3, 0)
    assert answer.error_rate == 1.0
    assert _minute(before) <= answer.first_error_minute <= _minute(after)
    assert answer.first_throttle_minute is None
    assert [m.errors for m in answer.minutes] in ([3], [1, 2], [2, 1])  # a minute boundary may fall between
    assert all(m.errors == m.invocations and m.duration_max_ms is not None for m in answer.minutes)
    assert answer.minutes_with_data == len(answer.minutes)
    assert answer.timeout_seconds == names.FUNCTION_TIMEOUT_SECONDS
    assert answer.gaps == []


def test_throttles_count_without_invocations(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject, clients: AwsClients
) -> None:
    sandbox.reset_cloudwatch()
    inject(THROTTLE, concurrency=0)
    assert [runtime.invoke(names.FUNCTION_NAME, names.input_event()).status for _ in range(2)] == [
        "throttled"
    ] * 2

    answer = _metrics(clients)

    assert (answer.invocations, answer.errors, answer.throttles) == (0, 0, 2)
    assert answer.error_rate is None
    assert answer.first_throttle_minute == answer.minutes[0].timestamp
    assert answer.first_error_minute is None
    assert answer.max_duration_ms is None
    assert answer.duration_to_timeout is None


def test_no_datapoints_is_said(sandbox: Sandbox, clients: AwsClients) -> None:
    sandbox.reset_cloudwatch()
    answer = _metrics(clients, minutes=5)
    assert (answer.minutes, answer.minutes_with_data, answer.invocations) == ([], 0, 0)
    assert answer.error_rate is None
    assert answer.note is not None
    assert f"no datapoints in the window for AWS/Lambda FunctionName={names.FUNCTION_NAME}" in answer.note


def test_duration_against_the_configured_timeout(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo, clients: AwsClients
) -> None:
    operator = sandbox.session(names.OPERATOR).client("lambda")
    original = operator.get_function_configuration(FunctionName=names.REPORT_FUNCTION)["Timeout"]
    operator.update_function_configuration(FunctionName=names.REPORT_FUNCTION, Timeout=1)
    undo(lambda: operator.update_function_configuration(FunctionName=names.REPORT_FUNCTION, Timeout=original))
    sandbox.reset_cloudwatch()
    invocation = runtime.invoke(names.REPORT_FUNCTION, names.report_request(size_mb=10, work_seconds=1.5))
    assert invocation.status == "timed_out"

    answer = _metrics(clients, names.REPORT_FUNCTION)

    assert answer.timeout_seconds == 1
    assert (answer.invocations, answer.errors) == (1, 1)
    assert answer.max_duration_ms == pytest.approx(invocation.duration_ms, abs=0.01)
    assert answer.duration_to_timeout == pytest.approx(1.0, abs=0.05)


def _max_memory_used(sandbox: Sandbox, log_group: str, since: str) -> list[int]:
    """Max Memory Used of each report in the group since ``since`` (text REPORT lines or JSON
    ``platform.report`` records), read with plain boto3."""
    logs = sandbox.session(names.OPERATOR).client("logs")
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName=log_group, startTime=int(datetime.fromisoformat(since).timestamp() * 1000)
    )
    used = []
    for message in (e["message"] for page in pages for e in page["events"]):
        if text := MAX_MEMORY_USED.match(message):
            used.append(int(text.group(1)))
        elif message.startswith('{"time"') and (record := json.loads(message))["type"] == "platform.report":
            used.append(int(record["record"]["metrics"]["maxMemoryUsedMB"]))
    return used


def test_peak_memory_from_report_lines(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, clients: AwsClients
) -> None:
    invocation = runtime.invoke(names.REPORT_FUNCTION, names.report_request(size_mb=100))
    assert invocation.status == "succeeded"

    answer = _metrics(clients, names.REPORT_FUNCTION, minutes=5)

    assert answer.log_group == f"/aws/lambda/{names.REPORT_FUNCTION}"
    used = _max_memory_used(sandbox, answer.log_group, answer.window_start)
    assert answer.report_lines == len(used)
    assert answer.peak_memory_used_mb == max(used)
    assert 100 < answer.peak_memory_used_mb < 256  # ~150 MB for a 100 MB report
    assert answer.memory_size_mb == 256
    assert answer.memory_to_size == round(max(used) / 256, 4)


def test_an_alias_counts_only_its_own_invocations(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, clients: AwsClients
) -> None:
    sandbox.reset_cloudwatch()
    for _ in range(2):
        runtime.invoke(names.ORDERS_FUNCTION, names.order_request(), qualifier=names.ORDERS_ALIAS)
    runtime.invoke(names.ORDERS_FUNCTION, names.order_request())

    live = _metrics(clients, ALIAS_ARN, minutes=5)
    every_version = _metrics(clients, names.ORDERS_FUNCTION, minutes=5)

    assert live.function_name == f"{names.ORDERS_FUNCTION}:{names.ORDERS_ALIAS}"
    assert live.invocations == 2
    assert every_version.invocations == 3
    assert live.report_lines is not None
    assert every_version.report_lines is not None
    assert 2 <= live.report_lines < every_version.report_lines  # the alias's version's streams only


def _report_line(max_memory_used_mb: int) -> str:
    return (
        f"REPORT RequestId: {uuid.uuid4()}\tDuration: 12.00 ms\tBilled Duration: 12 ms\t"
        f"Memory Size: 256 MB\tMax Memory Used: {max_memory_used_mb} MB\n"
    )


def test_report_lines_come_from_the_logging_config_group_and_are_bounded(
    sandbox: Sandbox, undo: Undo, clients: AwsClients
) -> None:
    """2,100 REPORT lines in the group LoggingConfig names: the first 2,000 are read, so the 250 MB line
    written last does not count."""
    operator = sandbox.session(names.OPERATOR)
    logs, lambda_ = operator.client("logs"), operator.client("lambda")
    group = f"/custom/{names.REPORT_FUNCTION}-{uuid.uuid4().hex[:6]}"
    logs.create_log_group(logGroupName=group)
    undo(lambda: logs.delete_log_group(logGroupName=group))
    lambda_.update_function_configuration(
        FunctionName=names.REPORT_FUNCTION, LoggingConfig={"LogGroup": group}
    )
    undo(
        lambda: lambda_.update_function_configuration(
            FunctionName=names.REPORT_FUNCTION,
            LoggingConfig={"LogGroup": f"/aws/lambda/{names.REPORT_FUNCTION}"},
        )
    )
    logs.create_log_stream(logGroupName=group, logStreamName="2025/01/01/[$LATEST]0")
    start_ms = int((datetime.now(UTC) - timedelta(minutes=2)).timestamp() * 1000)
    used = [100 + i % 50 for i in range(1999)] + [200] + [250] * 100
    logs.put_log_events(
        logGroupName=group,
        logStreamName="2025/01/01/[$LATEST]0",
        logEvents=[{"timestamp": start_ms + i, "message": _report_line(mb)} for i, mb in enumerate(used)],
    )

    answer = _metrics(clients, names.REPORT_FUNCTION, minutes=5)

    assert answer.log_group == group
    assert answer.report_lines == 2000
    assert answer.peak_memory_used_mb == 200
    assert answer.memory_to_size == 0.7812
    assert answer.note is not None
    assert "first 2,000 REPORT lines" in answer.note


@pytest.fixture
def denied_metrics(sandbox: Sandbox) -> Iterator[AwsClients]:
    """Clients for a new identity holding the MCP server's permissions except cloudwatch:GetMetricData: the
    emulator itself refuses the call, as AWS would, rather than a stub we wrote answering for it."""
    with reader_without(sandbox, "cloudwatch:GetMetricData") as session:
        yield AwsClients.create(SETTINGS, session)


def test_denied_metrics_are_a_gap_and_report_lines_still_answer(
    runtime: LocalLambdaRuntime, denied_metrics: AwsClients
) -> None:
    invocation = runtime.invoke(names.REPORT_FUNCTION, names.report_request(size_mb=10, work_seconds=0))
    assert invocation.status == "succeeded"

    answer = _metrics(denied_metrics, names.REPORT_FUNCTION, minutes=5)

    assert [g.source.split(" ")[0] for g in answer.gaps] == ["cloudwatch:GetMetricData"]
    # AWS says AccessDenied; moto answers a denied CloudWatch request in XML, which botocore's CBOR protocol
    # cannot parse, so only the HTTP status arrives.
    (gap,) = answer.gaps
    why = {
        "AccessDenied": "the MCP server's identity is not allowed to read it",
        "403": "it could not be read",
    }
    assert gap.error_code in why
    assert (gap.source, gap.meaning) == (
        f"cloudwatch:GetMetricData of AWS/Lambda FunctionName={names.REPORT_FUNCTION} (the server's account)",
        f"{why[gap.error_code]}: the function's invocations, errors, throttles, duration and concurrency are "
        "unknown",
    )
    assert (answer.minutes, answer.minutes_with_data, answer.invocations, answer.error_rate) == (
        [],
        None,
        None,
        None,
    )
    assert answer.report_lines is not None
    assert answer.report_lines >= 1
    assert answer.peak_memory_used_mb is not None
    assert answer.peak_memory_used_mb >= invocation.max_memory_mb
    assert answer.timeout_seconds == 3


def test_output_is_bounded_and_totals_cover_the_whole_window(sandbox: Sandbox, clients: AwsClients) -> None:
    """300 minutes with data over a day: the newest 240 are listed, the totals count all 300, and the
    first error is in a minute too old to be listed."""
    sandbox.reset_cloudwatch()
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    minutes = [now - timedelta(minutes=4 * i + 2) for i in range(300)]  # newest first
    dimensions = [{"Name": "FunctionName", "Value": names.FUNCTION_NAME}]
    data = [
        {"MetricName": name, "Dimensions": dimensions, "Timestamp": minute, "Value": value, "Unit": "Count"}
        for minute in minutes
        for name, value in (("Invocations", 1), ("Errors", 1 if minute == minutes[-1] else 0))
    ]
    # botocore gzips PutMetricData bodies over 10 KB, and moto checks the signature against the inflated body.
    cloudwatch = sandbox.session(names.OPERATOR).client(
        "cloudwatch", config=Config(disable_request_compression=True)
    )
    cloudwatch.put_metric_data(Namespace="AWS/Lambda", MetricData=data)

    answer = _metrics(clients, minutes=1440)

    assert datetime.fromisoformat(answer.window_end) - datetime.fromisoformat(
        answer.window_start
    ) == timedelta(minutes=1440)
    assert answer.minutes_with_data == 300
    assert len(answer.minutes) == 240
    assert [m.timestamp for m in answer.minutes] == [m.isoformat() for m in reversed(minutes[:240])]
    assert (answer.invocations, answer.errors) == (300, 1)
    assert answer.error_rate == 0.0033
    assert answer.first_error_minute == minutes[-1].isoformat()
    assert answer.note is not None
    assert "60 older minutes with data are not listed" in answer.note


def test_unknown_function_is_a_tool_error_naming_function_account_and_region(clients: AwsClients) -> None:
    with pytest.raises(DiagnosticToolError) as raised:
        _metrics(clients, "no-such-function")
    message = str(raised.value)
    assert "ResourceNotFoundException" in message
    assert "no-such-function" in message
    assert "the server's account" in message
    assert names.DEFAULT_REGION in message


async def test_published_with_output_schema_and_structured_content(clients: AwsClients) -> None:
    async with Client(build_server(SETTINGS, clients)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool(
            "get_function_metrics", {"lambda_name": names.REPORT_FUNCTION, "minutes": 5}
        )
        too_short = await client.call_tool(
            "get_function_metrics", {"lambda_name": names.REPORT_FUNCTION, "minutes": 4}
        )
    schema = tools["get_function_metrics"].output_schema
    assert schema is not None
    assert "duration_to_timeout" in schema["properties"]
    assert not result.is_error
    answer = FunctionMetricsResponse.model_validate(result.structured_content)
    assert answer.function_name == names.REPORT_FUNCTION
    assert too_short.is_error
