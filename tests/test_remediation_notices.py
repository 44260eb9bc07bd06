"""The notices of a fix: one per remediation status people are told of, each exactly once whoever sends it
(the supervisor, the executor, the watchdog's sweeps), only while the incident is in that status, saying
what to do and how urgent it is, with nothing secret in any form."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from supervisor.incident.lifecycle import EXECUTION, PLAN
from supervisor.incident.notify import CLAIMED_ELSEWHERE, PUBLISHED, SENT_BEFORE, Notifier, notify_once
from supervisor.incident.remediation_notice import remediation_notice
from supervisor.incident.store import IncidentStore
from tests.pipeline_support import published_notifications
from tests.test_executor_run import UNTHROTTLE, _planned, throttled
from watchdog.handler import build_watchdog

__all__ = ["throttled"]  # a fixture of tests/test_executor_run.py
INCIDENT = "data-processor@2026-11-30T10:00:00.000Z"
KEY = "AKIAIOSFODNN7EXAMPLE"
STEP = {
    "action": "Put the timeout back",
    "call": {"service": "lambda", "operation": "UpdateFunctionConfiguration", "params": {"Timeout": 30}},
    "inverse": {"service": "lambda", "operation": "UpdateFunctionConfiguration", "params": {"Timeout": 1}},
    "precondition": {"Timeout": 1},
    "risk": "low",
}


def _attribute(envelope: dict[str, Any], name: str) -> str:
    return str(envelope["MessageAttributes"][name]["Value"])


def _attributes(notification: Any) -> dict[str, str]:
    return {name: value["StringValue"] for name, value in notification.attributes.items()}


def test_a_plan_awaiting_approval_says_how_to_approve_it_and_what_each_call_and_undo_is() -> None:
    item = {
        "incident_id": INCIDENT,
        "function_name": names.FUNCTION_NAME,
        "status": "AWAITING_APPROVAL",
        "plan_digest": "sha256:abc",
        "approval_expires_at": "2026-11-30T11:00:00.000Z",
    }
    notice = remediation_notice(item, {PLAN: {"S": json.dumps({"steps": [STEP]})}}, "https://console.example")
    assert notice.subject == "[AWAITING_APPROVAL] data-processor: a fix awaits a person's approval"
    assert f"incident-remediate approve {INCIDENT} --digest sha256:abc" in notice.text
    assert "(before 2026-11-30T11:00:00.000Z; an approval binds this digest, once)" in notice.text
    assert 'call: lambda UpdateFunctionConfiguration {"Timeout": 30}' in notice.text
    assert 'undo: lambda UpdateFunctionConfiguration {"Timeout": 1}' in notice.text
    assert _attributes(notice) | {"fault_types": ""} == {
        "incident_id": INCIDENT,
        "function_name": names.FUNCTION_NAME,
        "status": "AWAITING_APPROVAL",
        "stage": "final",
        "kind": "remediation",
        "severity": "high",
        "fault_types": "",
    }
    assert notice.chat["metadata"]["eventType"] == "IncidentAwaitingApproval"


def test_an_undo_that_failed_is_critical_and_says_what_is_left_with_no_secret_in_any_form() -> None:
    item = {
        "incident_id": INCIDENT,
        "status": "UNDO_FAILED",
        "error_reason": f"the fix did not help; the undo left: step 1 (key {KEY} in a log line)",
    }
    execution = {"calls": [{"call": STEP["call"], "request_id": "r-1"}], "undo": [f"step 1: denied ({KEY})"]}
    notice = remediation_notice(item, {EXECUTION: {"S": json.dumps(execution)}}, None)
    assert notice.subject == "[UNDO_FAILED] data-processor: ACT NOW: a fix could not be undone"
    assert _attributes(notice)["severity"] == "critical"
    assert 'applied: lambda UpdateFunctionConfiguration {"Timeout": 30} (request r-1)' in notice.text
    assert "left by the undo: step 1: denied (" in notice.text
    assert notice.chat["metadata"]["eventType"] == "IncidentUndoFailed"
    published = json.dumps(notice.publish_arguments("arn:aws:sns:ca-central-1:123456789012:t"))
    assert KEY not in published
    assert KEY[:4] not in notice.text


@pytest.mark.usefixtures("throttled")
def test_each_status_is_noticed_once_and_only_while_the_incident_is_in_it(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    published_notifications(sandbox)  # what earlier tests left on the topic's reader
    notifier = Notifier(
        sandbox.session(names.SUPERVISOR).client("sns"),
        sandbox.world.diagnoses_topic_arn,
        None,
        Logger(service="test"),
    )
    metrics = EphemeralMetrics(namespace="test")
    noticed = str(_planned(sandbox, incidents, UNTHROTTLE)["incident_id"])
    assert notify_once(incidents, notifier, noticed, None, metrics) == PUBLISHED
    assert notify_once(incidents, notifier, noticed, None, metrics) == SENT_BEFORE

    awaiting = _planned(sandbox, incidents, UNTHROTTLE)  # its notice not sent yet
    incident_id = str(awaiting["incident_id"])
    incidents.transition(incident_id, "AWAITING_APPROVAL", "REJECTED", reason="rejected by a person")
    stale = notify_once(incidents, notifier, incident_id, awaiting, metrics)  # read before it moved
    assert stale == CLAIMED_ELSEWHERE  # a plan no longer awaiting approval is not announced as awaiting
    assert notify_once(incidents, notifier, incident_id, None, metrics) == PUBLISHED
    assert notify_once(incidents, notifier, incident_id, None, metrics) == SENT_BEFORE

    notices = [
        (_attribute(envelope, "incident_id"), _attribute(envelope, "status"))
        for envelope in published_notifications(sandbox)
    ]
    assert [notice for notice in notices if notice[0] in (noticed, incident_id)] == [
        (noticed, "AWAITING_APPROVAL"),
        (incident_id, "REJECTED"),
    ]


@pytest.mark.usefixtures("throttled")
def test_the_watchdog_notices_what_it_ends_and_sends_a_notice_nobody_sent(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    published_notifications(sandbox)
    unsent = str(_planned(sandbox, incidents, UNTHROTTLE)["incident_id"])  # the supervisor had no topic

    def watchdog(**settings: Any) -> Any:
        return build_watchdog(
            sandbox.session(names.WATCHDOG),
            incident_state_table=incidents.state_table,
            incident_context_table=incidents.context_table,
            diagnoses_topic_arn=sandbox.world.diagnoses_topic_arn,
            **settings,
        )

    first = watchdog(notify_grace_seconds=0).run().as_dict()
    assert first["notified"] == [unsent]  # the plan's notice, retried
    late = watchdog()  # its retries wait a minute: what it ends it notices itself
    late.store.clock = lambda: datetime.now(UTC) + timedelta(minutes=61)  # past the approval deadline
    swept = late.run().as_dict()
    assert swept["remediations_ended"] == [{"incident_id": unsent, "status": "EXPIRED"}]
    assert swept["notified"] == [unsent]
    assert late.run().as_dict()["notified"] == []

    notices = [
        (_attribute(envelope, "status"), envelope["Subject"])
        for envelope in published_notifications(sandbox)
        if _attribute(envelope, "incident_id") == unsent
    ]
    assert notices == [
        ("AWAITING_APPROVAL", "[AWAITING_APPROVAL] data-processor: a fix awaits a person's approval"),
        ("EXPIRED", "[EXPIRED] data-processor: the fix was not approved in time: nothing applied"),
    ]
