"""The watchdog over remediations in flight, as its own identity: a plan whose planning died ends NO_PLAN, one
past its approval deadline EXPIRED, and a run that died mid-plan is handed to the executor (which undoes it,
the world read back by the operator) or, when no executor ever comes, ends UNDO_FAILED naming what the dead
run applied."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from aws_lambda_powertools import Logger

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from executor.approvals import Approvals
from executor.handler import handle
from supervisor.incident.store import IncidentStore
from tests.test_executor_run import (
    FUNCTION,
    TIMEOUT_9,
    UNTHROTTLE,
    _approve,
    _executor,
    _planned,
    _world,
    approvals,
    throttled,
)
from watchdog.handler import build_watchdog

pytestmark = pytest.mark.usefixtures("throttled")
__all__ = ["approvals", "throttled"]  # the fixtures of tests/test_executor_run.py


class _Died(BaseException):
    """The executor's process ending in the middle of a call."""


def _sweep(sandbox: Sandbox, incidents: IncidentStore, minutes: float, **settings: Any) -> dict[str, Any]:
    watchdog = build_watchdog(
        sandbox.session(names.WATCHDOG),
        incident_state_table=incidents.state_table,
        incident_context_table=incidents.context_table,
        **settings,
    )
    watchdog.store.clock = lambda: datetime.now(UTC) + timedelta(minutes=minutes)
    return watchdog.run().as_dict()


def _status(incidents: IncidentStore, incident_id: str) -> tuple[str, str | None]:
    item = incidents.get(incident_id)
    assert item is not None
    return str(item["status"]), item.get("error_reason")


def test_a_plan_past_its_approval_deadline_expires_and_a_dead_planning_ends_no_plan(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    awaiting = str(_planned(sandbox, incidents, UNTHROTTLE)["incident_id"])  # deadline: an hour from now
    diagnosed = _planned(sandbox, incidents, UNTHROTTLE, plan=False)
    planning = str(diagnosed["incident_id"])
    incidents.transition(planning, "DIAGNOSED", "PLANNING")  # and the supervisor died

    early = _sweep(sandbox, incidents, minutes=5)
    assert early["remediations_ended"] == []
    assert _status(incidents, awaiting)[0] == "AWAITING_APPROVAL"

    late = _sweep(sandbox, incidents, minutes=61)
    assert sorted(late["remediations_ended"], key=str) == sorted(
        [{"incident_id": awaiting, "status": "EXPIRED"}, {"incident_id": planning, "status": "NO_PLAN"}],
        key=str,
    )
    status, reason = _status(incidents, awaiting)
    assert status == "EXPIRED"
    assert reason is not None
    assert reason.startswith("no approval was used by ")
    assert _status(incidents, planning) == ("NO_PLAN", "planning never finished: nothing was applied")


def _died_mid_plan(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, incidents: IncidentStore, approvals: Approvals
) -> str:
    """An approved two-step plan whose run died in its second call (which landed)."""
    incident_id = str(_planned(sandbox, incidents, TIMEOUT_9, UNTHROTTLE)["incident_id"])
    _approve(incidents, approvals, incident_id)
    executor = _executor(sandbox, runtime, incidents, approvals)
    calls: list[str] = []

    def dying_writer(service: str) -> Any:
        client = sandbox.session(names.EXECUTOR).client(service)
        calls.append(service)
        if len(calls) == 2:
            client.delete_function_concurrency(FunctionName=FUNCTION)
            raise _Died
        return client

    with pytest.raises(_Died):
        replace(executor, write=dying_writer).run(incident_id, "run-1")
    return incident_id


def test_a_run_that_died_is_handed_to_the_executor_which_undoes_it(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
) -> None:
    queue = sandbox.world.remediation_queue_url
    sqs = operator.client("sqs")
    sqs.purge_queue(QueueUrl=queue)
    throttled_world = _world(operator)
    incident_id = _died_mid_plan(sandbox, runtime, incidents, approvals)
    assert _world(operator) == {"Timeout": 9, "Reserved": None}

    assert _sweep(sandbox, incidents, minutes=5, remediation_queue_url=queue)["remediations_resent"] == []
    report = _sweep(sandbox, incidents, minutes=16, remediation_queue_url=queue)
    assert report["remediations_resent"] == [incident_id]
    (message,) = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"]
    assert json.loads(message["Body"]) == {"incident_id": incident_id, "kind": "remediation"}

    executor = _executor(sandbox, runtime, incidents, approvals)
    later = datetime.now(UTC) + timedelta(minutes=16)
    store = IncidentStore(incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: later)
    record = {"messageId": message["MessageId"], "body": message["Body"], "eventSource": "aws:sqs"}
    done = handle(replace(executor, store=store), {"Records": [record]}, None, Logger(service="test"))
    assert done["outcomes"][0]["outcome"].startswith("NOT_REMEDIATED: the executor's run died")
    assert _world(operator) == throttled_world
    assert _status(incidents, incident_id)[0] == "NOT_REMEDIATED"


def test_a_run_no_executor_finishes_ends_undo_failed_naming_what_it_applied(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
) -> None:
    incident_id = _died_mid_plan(sandbox, runtime, incidents, approvals)
    queue = sandbox.world.remediation_queue_url
    assert _sweep(sandbox, incidents, minutes=16, remediation_queue_url=queue)["remediations_resent"] == [
        incident_id
    ]
    assert _sweep(sandbox, incidents, minutes=20, remediation_queue_url=queue)["remediations_ended"] == []
    ended = _sweep(sandbox, incidents, minutes=32, remediation_queue_url=queue)
    assert ended["remediations_ended"] == [{"incident_id": incident_id, "status": "UNDO_FAILED"}]
    status, reason = _status(incidents, incident_id)
    assert status == "UNDO_FAILED"
    assert reason == (
        "the executor's run died APPLYING and no run finished its undo; check and undo by hand: "
        f'step 1: UpdateFunctionConfiguration {{"FunctionName": "{FUNCTION}", "Timeout": 9}}; '
        f'step 2: DeleteFunctionConcurrency {{"FunctionName": "{FUNCTION}"}}'
    )
