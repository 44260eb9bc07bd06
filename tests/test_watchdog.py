"""The stale-incident watchdog, and the Lambda entry points run as Lambda runs them: a process that
imports the handler module and calls it with an event."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chaos.loopback import BlackHole
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from supervisor.incident.notify import NOTIFY_LEASE
from supervisor.incident.signals import parse_record
from supervisor.incident.store import IncidentStore, incident_id_for
from tests.pipeline_support import (
    deny_publish,
    direct_event,
    emitted,
    load_event,
    stuck_incident,
)
from watchdog import handler as watchdog_handler
from watchdog.handler import Watchdog, build_watchdog
from watchdog.sweep import STALE_REASON, SweepReport, fail_stale, find_stale


def _lambda_env(
    sandbox: Sandbox, incidents: IncidentStore, profile: str = names.SUPERVISOR, **extra: str
) -> dict[str, str]:
    """A Lambda-like environment: the function's identity, the test's tables, no MCP key variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_"))}
    sandbox_env = {k: v for k, v in sandbox.env.items() if k != "MCP_API_KEY"}
    return (
        env
        | sandbox_env
        | {
            "AWS_PROFILE": profile,
            "INCIDENT_STATE_TABLE": incidents.state_table,
            "INCIDENT_CONTEXT_TABLE": str(incidents.context_table),
        }
        | extra
    )


def _handler_code(module: str, event: dict[str, Any], tmp_path: Path, then: str = "") -> str:
    """Python that calls ``module``.handler(event, None), as Lambda would, then runs ``then``."""
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(event))
    return (
        f"import json, sys; from {module} import handler; "
        f"result = handler(json.load(open({str(event_file)!r})), None); {then}"
    )


def test_a_handler_killed_mid_investigation_is_failed_by_the_watchdog(
    sandbox: Sandbox, incidents: IncidentStore, tmp_path: Path
) -> None:
    hole = BlackHole()  # the MCP server never answers, so the investigation hangs until killed
    env = _lambda_env(
        sandbox, incidents, MCP_SERVER_URL=f"{hole.url}/sse", SUPERVISOR_MCP_CONNECT_TIMEOUT="120"
    )
    event = direct_event()
    incident_id = incident_id_for(parse_record(event["Records"][0], now=datetime.now(UTC)))
    log = (tmp_path / "handler.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-c", _handler_code("supervisor.orchestrator", event, tmp_path)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while (state := incidents.get(incident_id)) is None or state["status"] != "INVESTIGATING":
            assert process.poll() is None, (tmp_path / "handler.log").read_text()
            assert time.monotonic() < deadline, "the handler never started investigating"
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)  # Lambda's timeout, an OOM, a lost host
        process.wait(10)
    finally:
        process.kill()
        process.wait(10)
        log.close()
        hole.close()
    assert incidents.get(incident_id)["status"] == "INVESTIGATING"  # type: ignore[index]

    watchdog = build_watchdog(sandbox.session(names.WATCHDOG), incident_state_table=incidents.state_table)
    assert watchdog.run().examined == 0  # not stale yet
    watchdog.store.clock = lambda: datetime.now(UTC) + timedelta(minutes=11)
    report = watchdog.run()
    assert report.failed == [incident_id]
    state = incidents.get(incident_id)
    assert state is not None
    assert (state["status"], state["error_reason"]) == ("FAILED", STALE_REASON)


def test_the_watchdog_loses_a_race_to_a_live_transition_without_overwriting_it(
    sandbox: Sandbox, incidents: IncidentStore, caplog: pytest.LogCaptureFixture
) -> None:
    racing = stuck_incident(incidents, minutes_ago=12, function="fn-racing")
    reentered = stuck_incident(incidents, minutes_ago=11, function="fn-reentered")
    dead = stuck_incident(incidents, minutes_ago=30, function="fn-dead")
    watchdog = build_watchdog(sandbox.session(names.WATCHDOG), incident_state_table=incidents.state_table)
    cutoff, candidates = find_stale(watchdog.store, watchdog.settings.stale_after_seconds)
    assert sorted(str(c["incident_id"]) for c in candidates) == sorted([racing, reentered, dead])

    # Between the watchdog's query and its writes, the investigation finishes and another is re-entered.
    incidents.transition(racing, "INVESTIGATING", "DIAGNOSED")
    incidents.transition(reentered, "INVESTIGATING", "INVESTIGATING")
    report = SweepReport(cutoff=cutoff)
    caplog.set_level("INFO")
    fail_stale(watchdog.store, candidates, report, watchdog.logger)

    assert report.failed == [dead]
    assert sorted(lost["incident_id"] for lost in report.lost) == sorted([racing, reentered])
    assert incidents.get(racing)["status"] == "DIAGNOSED"  # type: ignore[index]
    assert "error_reason" not in incidents.get(racing)  # type: ignore[operator]
    assert incidents.get(reentered)["investigations"] == 2  # type: ignore[index]
    assert sum(r.getMessage() == "watchdog_lost_race" for r in caplog.records) == 2
    incidents.transition(reentered, "INVESTIGATING", "FAILED", reason="test over")


@pytest.mark.open_incidents
def test_the_scheduled_handler_fails_only_stale_incidents_and_reports(
    sandbox: Sandbox, incidents: IncidentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = stuck_incident(incidents, minutes_ago=10.5, function="fn-stale")
    fresh = stuck_incident(incidents, minutes_ago=9, function="fn-fresh")
    for key, value in _lambda_env(sandbox, incidents, names.WATCHDOG).items():
        monkeypatch.setenv(key, value)
    watchdog_handler._watchdog.cache_clear()
    try:
        summary = watchdog_handler.handler(load_event("eventbridge_scheduled.json"), None)
    finally:
        watchdog_handler._watchdog.cache_clear()
    assert summary["examined"] == 1
    assert summary["failed"] == [stale]
    assert summary["lost"] == []
    assert incidents.get(fresh)["status"] == "INVESTIGATING"  # type: ignore[index]


def test_the_orchestrator_cold_path_does_not_import_the_agent_stack(
    sandbox: Sandbox, incidents: IncidentStore, tmp_path: Path
) -> None:
    """A rejected record and a duplicate are handled by ``supervisor.orchestrator.handler`` in a fresh
    process without LangGraph, LangChain or the MCP client ever being imported."""
    event = direct_event()
    signal_ = parse_record(event["Records"][0], now=datetime.now(UTC))
    item, _ = incidents.claim(signal_, window_seconds=3600)
    incidents.transition(str(item["incident_id"]), "RECEIVED", "FAILED", reason="finished earlier")
    both = {"Records": [*load_event("sns_alarm_ok.json")["Records"], *event["Records"]]}
    code = _handler_code(
        "supervisor.orchestrator",
        both,
        tmp_path,
        then="stack = ('langgraph', 'langchain', 'mcp.client'); "
        "heavy = sorted(m for m in sys.modules if m.startswith(stack)); "
        "print(json.dumps({'result': result, 'heavy': heavy}))",
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_lambda_env(sandbox, incidents),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert [o["action"] for o in report["result"]["outcomes"]] == ["rejected", "duplicate"]
    assert report["heavy"] == []


# ---------------------------------------------------------------------------- notifications


def _attribute(envelope: dict[str, Any], name: str) -> str:
    return str(envelope["MessageAttributes"][name]["Value"])


def _ids(envelopes: list[dict[str, Any]]) -> list[str]:
    return sorted(_attribute(envelope, "incident_id") for envelope in envelopes)


def _notifying(sandbox: Sandbox, incidents: IncidentStore, **overrides: Any) -> Watchdog:
    """The watchdog as its own identity, on this test's tables, publishing to the sandbox's diagnoses
    topic."""
    settings: dict[str, Any] = {
        "incident_state_table": incidents.state_table,
        "incident_context_table": incidents.context_table,
        "diagnoses_topic_arn": sandbox.world.diagnoses_topic_arn,
    }
    return build_watchdog(sandbox.session(names.WATCHDOG), **(settings | overrides))


def _ended(incidents: IncidentStore, ago: timedelta, status: str, function: str, **finish: Any) -> str:
    """An incident of ``function`` that reached the terminal ``status`` ``ago`` and was never notified
    (its orchestrator's publish failed, or it died before publishing)."""
    incident_id = stuck_incident(incidents, minutes_ago=ago.total_seconds() / 60, function=function)
    then = datetime.now(UTC) - ago
    past = IncidentStore(incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: then)
    past.transition(incident_id, "INVESTIGATING", status, **finish)
    return incident_id


def _later(minutes: float) -> Callable[[], datetime]:
    return lambda: datetime.now(UTC) + timedelta(minutes=minutes)


def test_a_stale_incident_the_watchdog_fails_is_notified_once(
    sandbox: Sandbox,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Through the scheduled handler, configured as Lambda is: WATCHDOG_DIAGNOSES_TOPIC_ARN."""
    stale = stuck_incident(incidents, minutes_ago=11, function="fn-stale")
    env = _lambda_env(
        sandbox, incidents, names.WATCHDOG, WATCHDOG_DIAGNOSES_TOPIC_ARN=sandbox.world.diagnoses_topic_arn
    )
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    watchdog_handler._watchdog.cache_clear()
    try:
        summary = watchdog_handler.handler(load_event("eventbridge_scheduled.json"), None)
        (envelope,) = notified()
        # The next scheduled sweeps: the incident is now past the grace and within the retry window.
        watchdog_handler._watchdog().store.clock = _later(5)
        again = watchdog_handler.handler(load_event("eventbridge_scheduled.json"), None)
    finally:
        watchdog_handler._watchdog.cache_clear()

    assert (summary["failed"], summary["notified"], summary["notify_failed"]) == ([stale], [stale], [])
    assert envelope["TopicArn"] == sandbox.world.diagnoses_topic_arn
    assert _attribute(envelope, "incident_id") == stale
    assert (_attribute(envelope, "status"), _attribute(envelope, "function_name")) == ("FAILED", "fn-stale")
    assert envelope["Subject"] == "[FAILED] fn-stale: no diagnosis"
    chat = json.loads(envelope["Message"])
    assert chat["metadata"]["eventType"] == "IncidentFailed"
    assert f"*Why there is no diagnosis*\n{STALE_REASON}" in chat["content"]["description"]
    state = incidents.get(stale)
    assert state is not None
    assert (state["status"], state["error_reason"]) == ("FAILED", STALE_REASON)
    assert state["notification_message_id"] == envelope["MessageId"]
    assert "notify_claim" not in state

    assert (again["failed"], again["notified"], again["notify_failed"]) == ([], [], [])
    assert notified() == []
    metrics = emitted(capsys.readouterr().out)
    assert metrics["NotificationsPublished"] == 1
    assert metrics["StaleIncidentsFailed"] == 1
    assert "NotificationPublishFailed" not in metrics


def test_a_denied_publish_leaves_the_incident_failed_and_the_next_sweep_sends_it(
    sandbox: Sandbox,
    incidents: IncidentStore,
    notified: Callable[[], list[dict[str, Any]]],
    undo: Callable[[Callable[[], object]], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    lift = deny_publish(sandbox, names.WATCHDOG, undo)
    stale = stuck_incident(incidents, minutes_ago=11, function="fn-denied")
    watchdog = _notifying(sandbox, incidents)
    report = watchdog.run()
    assert (report.failed, report.notified) == ([stale], [])
    assert [failure["incident_id"] for failure in report.notify_failed] == [stale]
    assert "not authorized to perform: sns:Publish" in report.notify_failed[0]["error"]
    state = incidents.get(stale)
    assert state is not None
    assert (state["status"], state["error_reason"]) == ("FAILED", STALE_REASON)  # the outcome stands
    assert "notified_at" not in state
    assert "notify_claim" not in state
    assert "sns:Publish" in state["notify_error"]
    assert notified() == []
    metrics = emitted(capsys.readouterr().out)
    assert metrics["NotificationPublishFailed"] == 1
    assert "NotificationsPublished" not in metrics

    lift()  # the permission is back
    assert watchdog.run().notified == []  # a sweep right away: still within the grace, left alone
    watchdog.store.clock = _later(5)  # the next scheduled sweep
    retried = watchdog.run()
    assert (retried.failed, retried.notified, retried.notify_failed) == ([], [stale], [])
    (envelope,) = notified()
    assert (_attribute(envelope, "incident_id"), _attribute(envelope, "status")) == (stale, "FAILED")
    assert STALE_REASON in json.loads(envelope["Message"])["content"]["description"]
    assert incidents.get(stale)["notification_message_id"] == envelope["MessageId"]  # type: ignore[index]
    watchdog.store.clock = _later(10)
    assert watchdog.run().notified == []
    assert notified() == []
    metrics = emitted(capsys.readouterr().out)
    assert metrics["NotificationsPublished"] == 1
    assert "NotificationPublishFailed" not in metrics


def test_a_sweep_sends_what_the_orchestrator_left_unsent_exactly_once(
    sandbox: Sandbox, incidents: IncidentStore, notified: Callable[[], list[dict[str, Any]]]
) -> None:
    minutes = timedelta(minutes=5)
    errored = _ended(
        incidents, minutes, "ERROR", "fn-errored", reason="MCP server unreachable", category="mcp_connection"
    )
    diagnosed = _ended(incidents, timedelta(minutes=30), "DIAGNOSED", "fn-diagnosed")
    diagnosis = {"root_cause": "fn-diagnosed-role lost its policy", "fault_types": ["permission_loss"]}
    incidents.put_context(
        {"incident_id": {"S": diagnosed}, "diagnosis": {"S": json.dumps(diagnosis | {"severity": "high"})}}
    )
    sent = _ended(incidents, minutes, "FAILED", "fn-sent", reason="test")
    token = uuid.uuid4().hex
    assert incidents.claim_notification(sent, token, NOTIFY_LEASE) is not None
    incidents.notification_sent(sent, token, "earlier-message")
    publishing = _ended(incidents, minutes, "FAILED", "fn-publishing", reason="test")
    assert incidents.claim_notification(publishing, uuid.uuid4().hex, NOTIFY_LEASE) is not None  # right now
    fresh = _ended(incidents, timedelta(seconds=10), "ERROR", "fn-fresh", reason="test")  # in the grace
    old = _ended(incidents, timedelta(hours=25), "FAILED", "fn-old", reason="test")  # out of the window

    watchdog = _notifying(sandbox, incidents)
    report = watchdog.run()
    assert (report.failed, report.notify_failed) == ([], [])
    assert sorted(report.notified) == sorted([errored, diagnosed])
    envelopes = notified()
    assert _ids(envelopes) == sorted([errored, diagnosed])
    subjects = {_attribute(envelope, "incident_id"): envelope["Subject"] for envelope in envelopes}
    assert subjects[errored] == "[ERROR] fn-errored: mcp_connection"
    assert subjects[diagnosed] == "[DIAGNOSED] fn-diagnosed: permission_loss (high)"  # the stored diagnosis
    for incident_id in (errored, diagnosed):
        assert "notified_at" in incidents.get(incident_id)  # type: ignore[operator]
    for incident_id in (publishing, fresh, old):
        assert "notified_at" not in incidents.get(incident_id)  # type: ignore[operator]
    assert incidents.get(sent)["notification_message_id"] == "earlier-message"  # type: ignore[index]

    watchdog.store.clock = _later(5)  # the next sweep: the fresh one is past its grace now
    assert watchdog.run().notified == [fresh]
    assert _ids(notified()) == [fresh]
    watchdog.store.clock = _later(10)
    assert watchdog.run().notified == []
    assert notified() == []


def test_a_watchdog_without_a_topic_publishes_nothing(
    sandbox: Sandbox, incidents: IncidentStore, notified: Callable[[], list[dict[str, Any]]]
) -> None:
    stale = stuck_incident(incidents, minutes_ago=11, function="fn-quiet")
    unsent = _ended(incidents, timedelta(minutes=5), "ERROR", "fn-unsent", reason="test")
    watchdog = build_watchdog(
        sandbox.session(names.WATCHDOG),
        incident_state_table=incidents.state_table,
        incident_context_table=incidents.context_table,
    )
    assert watchdog.notifier is None
    report = watchdog.run()
    assert (report.failed, report.notified, report.notify_failed) == ([stale], [], [])
    assert notified() == []
    for incident_id in (stale, unsent):
        state = incidents.get(incident_id)
        assert state is not None
        assert not {"notified_at", "notify_claim", "notify_error"} & set(state)
