"""The stale-incident watchdog, and the Lambda entry points run as Lambda runs them: a process that
imports the handler module and calls it with an event."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chaos.loopback import BlackHole
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from supervisor.incident.signals import parse_record
from supervisor.incident.store import IncidentStore, incident_id_for
from tests.pipeline_support import direct_event, load_event, stuck_incident
from watchdog import handler as watchdog_handler
from watchdog.handler import build_watchdog
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
    incident_id = incident_id_for(parse_record(event["Records"][0]))
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
    signal_ = parse_record(event["Records"][0])
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
