"""Logs read newest first (issue 41) on a busy function: everyday traffic written by the stage's traffic
generator (chaos/workload/traffic.py) over the last 25 minutes, then a permission revoked by the chaos
injector and invocations that really fail in the sandbox's runtime, only in the newest minutes.

Read oldest first up to the scan limit, such a window shows neither the failures' reports nor the last
success before them; read newest first, it shows both, and the `rules` model names the fault.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from chaos.faults.iam import REVOKE_S3
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from chaos.workload.traffic import BATCH_BYTES, EVENT_OVERHEAD, Traffic, batches, write_traffic
from mcp_server.aws import AwsClients
from mcp_server.contract import GetRecentLogsArgs, LogsResponse
from mcp_server.settings import ServerSettings
from mcp_server.tools.logs import recent_logs
from supervisor.agent.run import run_agent
from supervisor.settings import SupervisorSettings
from tests.conftest import Inject, shipped_mcp_server
from tests.fault_scenarios import OPERATOR_ARN, fresh_logs
from tests.tool_support import tool_context

FUNCTION = names.FUNCTION_NAME
MINUTE_MS = 60_000
ROLE_CHANGES = {"PutRolePolicy", "DeleteRolePolicy"}  # what iam-s3 does to an inline policy


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A sandbox of this module's own: 100,000 events in data-processor's group slow no other test's reads,
    and the change history holds only these tests' changes."""
    with running_sandbox(tmp_path_factory.mktemp("busy-logs-sandbox"), cloudtrail_delay=0) as own:
        yield own


@dataclass(frozen=True)
class Busy:
    traffic: Traffic
    failed: list[Invocation]
    changed_at: datetime


def _wait_for_role_change(sandbox: Sandbox, since: datetime) -> None:
    """Until CloudTrail lists the operator's change to the role (IAM's events are in us-east-1)."""
    trail = sandbox.session(names.OPERATOR).client("cloudtrail", region_name="us-east-1")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        events = trail.lookup_events(StartTime=since - timedelta(seconds=2), EndTime=datetime.now(UTC))[
            "Events"
        ]
        if any(e["EventName"] in ROLE_CHANGES and e.get("Username") == names.OPERATOR for e in events):
            return
        time.sleep(0.2)
    pytest.fail("CloudTrail does not list the operator's change to the role")


def _busy_then_denied(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject, *, events: int, streams: int
) -> Busy:
    """``events`` of everyday traffic from 25 minutes to 30 seconds ago across ``streams`` streams, then
    s3 taken out of the role (iam-s3) and three invocations that fail with AccessDenied."""
    sandbox.reset_cloudwatch()
    fresh_logs(sandbox, FUNCTION)
    now_ms = int(time.time() * 1000)
    traffic = write_traffic(
        sandbox.session(names.OPERATOR),
        FUNCTION,
        events=events,
        streams=streams,
        start_ms=now_ms - 25 * MINUTE_MS,
        end_ms=now_ms - MINUTE_MS // 2,
    )
    changed_at = datetime.now(UTC)
    inject(REVOKE_S3)
    _wait_for_role_change(sandbox, changed_at)
    failed = [runtime.invoke(FUNCTION, names.input_event(i % len(names.INPUT_KEYS))) for i in range(3)]
    assert all(i.status == "failed" and "AccessDenied" in (i.error or "") for i in failed), failed
    return Busy(traffic, failed, changed_at)


def _logs(sandbox: Sandbox) -> LogsResponse:
    settings = ServerSettings()
    clients = AwsClients.create(settings, sandbox.session(names.MCP_SERVER))
    args = GetRecentLogsArgs(lambda_name=FUNCTION)
    return recent_logs(tool_context(clients, args, settings), args)


def test_a_busy_window_shows_the_newest_failures_and_the_last_success_before_them(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    busy = _busy_then_denied(sandbox, runtime, inject, events=100_000, streams=50)
    assert busy.traffic.events >= 100_000
    assert len(set(busy.traffic.streams)) == 50

    answer = _logs(sandbox)

    shown = {i.request_id: i for i in answer.invocations}
    for failure in busy.failed:  # their reports and error records were read
        assert shown[failure.request_id].outcome == "error_record", shown.get(failure.request_id)
    assert {e.request_id for e in answer.events if e.kind == "error_record"} >= {
        f.request_id for f in busy.failed
    }
    last = shown[busy.traffic.newest_request_id]  # the last success before the first failure, with its start
    assert (last.outcome, last.started) == ("no_error_seen", _iso(busy.traffic.newest_started_ms))
    assert answer.note is not None
    assert answer.note.startswith("read newest first within the scan limit (")
    assert " of 20000 events fetched): every event from " in answer.note
    read_from = datetime.fromisoformat(answer.note.split("every event from ", 1)[1].split(" ", 1)[0])
    assert answer.window_start is not None
    assert datetime.fromisoformat(answer.window_start) < read_from
    assert read_from < datetime.fromtimestamp(busy.traffic.newest_started_ms / 1000, UTC)
    assert f"the older events, from {answer.window_start} to " in answer.note


async def test_a_revoked_permission_under_busy_traffic_is_diagnosed_as_permission_loss(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, inject: Inject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """20,000 everyday lines in the last 25 minutes, then iam-s3 and three failing invocations: the `rules`
    model over MCP names the permission loss and the operator's change to the role as its trigger."""
    busy = _busy_then_denied(sandbox, runtime, inject, events=20_000, streams=50)
    assert busy.traffic.events >= 20_000

    with shipped_mcp_server(sandbox, tmp_path_factory.mktemp("busy-logs-mcp")) as url:
        settings = SupervisorSettings(mcp_server_url=f"{url}/sse", supervisor_model="rules")
        incident = {"AlarmName": f"{FUNCTION}-errors", "NewStateValue": "ALARM"}
        result = await run_agent(
            incident, "inc-busy", FUNCTION, settings=settings, api_key=sandbox.world.mcp_api_key
        )

    diagnosis = result.diagnosis
    assert diagnosis is not None, result.stop_reason
    assert diagnosis.fault_types == ["permission_loss"], diagnosis.root_cause
    assert diagnosis.trigger is not None
    assert (diagnosis.trigger.event_name in ROLE_CHANGES, diagnosis.trigger.identity) == (True, OPERATOR_ARN)
    assert diagnosis.trigger.time >= busy.changed_at.isoformat()[:19]


def test_traffic_batches_stay_within_put_log_events_limits() -> None:
    big = "x" * 2000
    events = [{"timestamp": i, "message": big if i % 2 else "y"} for i in range(25_000)]
    cut = list(batches(events))
    assert [e for batch in cut for e in batch] == events
    assert all(len(batch) <= 10_000 for batch in cut)
    assert all(sum(len(e["message"]) + EVENT_OVERHEAD for e in batch) <= BATCH_BYTES for batch in cut)
    assert max(sum(len(e["message"]) + EVENT_OVERHEAD for e in batch) for batch in cut) > BATCH_BYTES - 2100
    day = [{"timestamp": 0, "message": "a"}, {"timestamp": 24 * 3_600_000 + 1, "message": "b"}]
    assert len(list(batches(day))) == 2  # a batch may not span more than 24 hours


def test_traffic_is_lambda_shaped_streams_of_successful_invocations(sandbox: Sandbox) -> None:
    fresh_logs(sandbox, FUNCTION)
    now_ms = int(time.time() * 1000)
    traffic = write_traffic(
        sandbox.session(names.OPERATOR),
        FUNCTION,
        events=1_000,
        streams=5,
        start_ms=now_ms - 10 * MINUTE_MS,
        end_ms=now_ms,
    )
    logs = sandbox.session(names.OPERATOR).client("logs")
    read = [
        event
        for page in logs.get_paginator("filter_log_events").paginate(logGroupName=traffic.group)
        for event in page["events"]
    ]
    assert len(read) == traffic.events >= 1_000
    assert {e["logStreamName"] for e in read} == set(traffic.streams)
    day = datetime.fromtimestamp(traffic.first_ms / 1000, UTC)
    assert all(
        s.startswith(f"{day:%Y/%m/%d}/[$LATEST]") and len(s.split("]")[1]) == 32 for s in traffic.streams
    )
    assert [e["timestamp"] for e in read] == sorted(
        e["timestamp"] for e in read
    )  # interleaved, in time order
    assert now_ms - 10 * MINUTE_MS <= traffic.first_ms <= traffic.last_ms <= now_ms
    messages = [e["message"] for e in read]
    assert sum(m.startswith("START RequestId: ") for m in messages) == traffic.invocations
    assert sum(m.startswith("REPORT RequestId: ") for m in messages) == traffic.invocations
    assert sum(m.startswith("INIT_START ") for m in messages) == 5
    assert not any("Status:" in m or "ERROR" in m for m in messages)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()
