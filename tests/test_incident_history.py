"""``get_incident_history`` on incident tables the supervisor's store wrote: what ended is read (by Query,
as the MCP server's sandbox identity, which may not Scan), scored against the arguments, and counted into
patterns; what is in flight, another function's and what is older than the window are not."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics
from pydantic import ValidationError

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract.history import (
    ENDED,
    FIX,
    FIX_VERDICT,
    RECOVERED_AT,
    RESOLVED_BY,
    GetIncidentHistoryArgs,
)
from mcp_server.settings import ServerSettings
from mcp_server.tools.incident_history import incident_history
from supervisor.diagnosis.cli_commands import build_command
from supervisor.incident.lifecycle import REMEDIATION_ENDS, TERMINAL
from supervisor.incident.notification import RECALL_HEADING
from supervisor.incident.notify import PUBLISHED, Notifier, notify_once, sns_client
from supervisor.incident.outcome import headline_of
from supervisor.incident.signals import Signal, stamp
from supervisor.incident.store import IncidentStore
from supervisor.settings import SupervisorSettings
from tests.test_remediation_plan import _diagnosis
from tests.tool_support import call_tool

FN, OTHER = "report-builder", "data-processor"
NOW = datetime.now(UTC).replace(microsecond=0)
RAISE_TIMEOUT = {"service": "lambda", "operation": "UpdateFunctionConfiguration", "params": {"Timeout": 30}}
ENDS = {  # the statuses after DIAGNOSED that lead to each end
    "DIAGNOSED": [],
    "REMEDIATED": ["PLANNING", "AWAITING_APPROVAL", "APPLYING", "VERIFYING", "REMEDIATED"],
    "NOT_REMEDIATED": ["PLANNING", "AWAITING_APPROVAL", "APPLYING", "VERIFYING", "NOT_REMEDIATED"],
}


def _incident(
    store: IncidentStore,
    function: str,
    days_ago: float,
    faults: list[str],
    end: str,
    trigger: str | None = None,
    outcome: dict[str, object] | None = None,
) -> str:
    """An incident observed ``days_ago``, diagnosed with ``faults`` and moved to ``end`` as the store moves
    them, its history as the pipeline (``headline_of``) and the executor write it."""
    observed = NOW - timedelta(days=days_ago)
    signal = Signal(str(uuid.uuid4()), "direct", function, "Errors", "failing", observed)
    incident_id = str(store.claim(signal, window_seconds=0)[0]["incident_id"])
    store.transition(incident_id, "RECEIVED", "INVESTIGATING")
    if end == "INVESTIGATING":
        return incident_id
    diagnosis: dict[str, Any] = {"fault_types": faults, "affected_resources": [f"{function}-role"]}
    diagnosis |= {"trigger": {"event_name": trigger}} if trigger else {}
    status = "DIAGNOSED"
    store.transition(incident_id, "INVESTIGATING", status, headline=headline_of(diagnosis, function))
    for target in ENDS[end]:
        store.transition(incident_id, status, target, headline=outcome if target == end else None)
        status = target
    return incident_id


def _history(sandbox: Sandbox, store: IncidentStore, **arguments: Any) -> dict[str, Any]:
    settings = ServerSettings(mcp_incident_state_table=store.state_table)
    clients = AwsClients.create(settings, sandbox.session(names.MCP_SERVER))
    args = GetIncidentHistoryArgs.model_validate({"lambda_name": FN} | arguments)
    answer: dict[str, Any] = call_tool(clients, incident_history, args, settings).model_dump(mode="json")
    return answer


@pytest.fixture
def past(incidents: IncidentStore) -> dict[str, str]:
    fixed: dict[str, object] = {
        FIX: json.dumps([RAISE_TIMEOUT]),
        FIX_VERDICT: "held",
        RESOLVED_BY: "alice@example.com",
        RECOVERED_AT: stamp(NOW - timedelta(days=3) + timedelta(seconds=95)),
    }
    made = {
        "fixed": _incident(incidents, FN, 3, ["timeout"], "REMEDIATED", "UpdateFunctionConfiguration", fixed),
        "undone": _incident(
            incidents,
            FN,
            10,
            ["timeout", "memory_exhaustion"],
            "NOT_REMEDIATED",
            None,
            {FIX: "[]", FIX_VERDICT: "did_not_help"},
        ),
        "diagnosed": _incident(
            incidents, FN, 20, ["permission_loss", "timeout"], "DIAGNOSED", "PutRolePolicy"
        ),
        "old": _incident(incidents, FN, 120, ["timeout"], "DIAGNOSED", "UpdateFunctionConfiguration"),
        "other": _incident(incidents, OTHER, 2, ["timeout"], "DIAGNOSED", "UpdateFunctionConfiguration"),
    }
    return made | {"in_flight": _incident(incidents, FN, 0, [], "INVESTIGATING")}


@pytest.mark.open_incidents  # one is left INVESTIGATING: in flight, never history
def test_asked_with_a_fault_type_only_incidents_it_was_first_named_in_are_read_and_scored(
    sandbox: Sandbox, incidents: IncidentStore, past: dict[str, str]
) -> None:
    answer = _history(sandbox, incidents, fault_type="timeout", trigger_event="UpdateFunctionConfiguration")
    assert answer["gaps"] == []  # read by Query: a Scan is not the MCP identity's to make
    listed = {i["incident_id"]: i for i in answer["incidents"]}
    assert set(listed) == {past["fixed"], past["undone"]}  # not: second-named, too old, another's
    fixed, undone = listed[past["fixed"]], listed[past["undone"]]
    assert (fixed["similarity"], fixed["shared"]) == (0.8, ["fault class", "trigger kind"])
    assert (undone["similarity"], undone["shared"]) == (0.5, ["fault class"])
    assert [i["incident_id"] for i in answer["incidents"]] == [past["fixed"], past["undone"]]
    assert fixed["fix"] == [
        {"service": "lambda", "operation": "UpdateFunctionConfiguration", "parameters": {"Timeout": 30}}
    ]
    assert (fixed["status"], fixed["resolved_by"], fixed["seconds_to_recover"]) == (
        "REMEDIATED",
        "alice@example.com",
        95.0,
    )
    assert undone["fault_types"] == ["timeout", "memory_exhaustion"]  # the primary one first
    assert (undone["status"], undone["fix"], undone["seconds_to_recover"]) == ("NOT_REMEDIATED", [], None)
    assert (fixed["fix_verdict"], undone["fix_verdict"]) == ("held", "did_not_help")
    patterns = {(p["fault_type"], p["trigger_event"]): p for p in answer["patterns"]}
    assert patterns[("timeout", "UpdateFunctionConfiguration")] == {
        "fault_type": "timeout",
        "trigger_event": "UpdateFunctionConfiguration",
        "incidents": 1,
        "in_last_30_days": 1,
        "recurring": False,
        "fixes_applied": 1,
        "fixes_held": 1,
        "mean_seconds_to_recover": 95.0,
    }
    assert patterns[("timeout", None)]["fixes_applied"] == 1
    assert patterns[("timeout", None)]["fixes_held"] == 0


@pytest.mark.open_incidents
def test_asked_without_a_fault_type_every_ended_incident_in_the_window_is_read_unscored(
    sandbox: Sandbox, incidents: IncidentStore, past: dict[str, str]
) -> None:
    answer = _history(sandbox, incidents)
    assert answer["incidents_read"] == 3
    assert [i["incident_id"] for i in answer["incidents"]] == [
        past["fixed"],
        past["undone"],
        past["diagnosed"],
    ]
    assert all(i["similarity"] is None and i["shared"] == [] for i in answer["incidents"])
    older = _history(sandbox, incidents, days=150, resource=f"arn:aws:iam::123456789012:role/{FN}-role")
    assert older["incidents_read"] == 4
    assert {i["incident_id"]: i["similarity"] for i in older["incidents"]}[past["old"]] == 0.2


def test_three_of_one_fault_and_trigger_in_thirty_days_are_a_recurring_pattern(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    for days in (1, 8, 15):
        _incident(incidents, FN, days, ["throttling"], "DIAGNOSED", "PutFunctionConcurrency")
    _incident(incidents, FN, 40, ["throttling"], "DIAGNOSED", "PutFunctionConcurrency")
    [pattern] = _history(sandbox, incidents, fault_type="throttling")["patterns"]
    assert (pattern["incidents"], pattern["in_last_30_days"], pattern["recurring"]) == (4, 3, True)


def test_the_history_reads_every_status_an_incident_ends_in_and_no_other() -> None:
    assert ENDED == TERMINAL | REMEDIATION_ENDS


def test_an_incident_and_its_context_carry_the_time_dynamodb_deletes_them_after_the_retention(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """The state item expires the retention after the alarm; the context item the retention after its first
    write, which a later write leaves alone. The tables' time to live reads that attribute."""
    clock = [NOW]
    store = IncidentStore(
        incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: clock[0], 30
    )
    observed = NOW - timedelta(days=2)
    signal = Signal(str(uuid.uuid4()), "direct", FN, "Errors", "failing", observed)
    incident_id = str(store.claim(signal, window_seconds=0)[0]["incident_id"])
    store.transition(incident_id, "RECEIVED", "FAILED", reason="kept for the test")
    store.update_context(incident_id, {"first": "write"})
    clock[0] = NOW + timedelta(hours=5)
    store.update_context(incident_id, {"second": "write"})

    def expiry(table: str) -> int:
        key = {"incident_id": {"S": incident_id}}
        return int(incidents.dynamodb.get_item(TableName=table, Key=key)["Item"]["expires_at"]["N"])

    assert expiry(incidents.state_table) == int((observed + timedelta(days=30)).timestamp())
    assert expiry(str(incidents.context_table)) == int((NOW + timedelta(days=30)).timestamp())
    for table in (incidents.state_table, str(incidents.context_table)):
        operator = sandbox.session(names.OPERATOR).client("dynamodb")
        ttl = operator.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "expires_at")


def test_an_incident_past_its_retention_is_not_read_though_dynamodb_has_not_deleted_it_yet(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    short = IncidentStore(
        incidents.dynamodb, incidents.state_table, incidents.context_table, retention_days=5
    )
    kept = _incident(short, FN, 2, ["timeout"], "DIAGNOSED")
    _incident(short, FN, 6, ["timeout"], "DIAGNOSED")  # its 5 days are over: still stored, as in AWS
    answer = _history(sandbox, incidents, fault_type="timeout", days=30)
    assert [i["incident_id"] for i in answer["incidents"]] == [kept]


def test_a_diagnosis_notice_recalls_the_earlier_incidents_of_its_pattern_and_names_a_recurrence(
    sandbox: Sandbox, incidents: IncidentStore, notified: Callable[[], list[dict[str, Any]]]
) -> None:
    """Twice before this month after the same change: which fix, whether it held, how long recovery took;
    a third time is a recurrence, with a lasting fix as advice. Another trigger's incident is not recalled."""
    observed = NOW - timedelta(days=10)
    fixed: dict[str, object] = {
        FIX: json.dumps([RAISE_TIMEOUT]),
        FIX_VERDICT: "held",
        RESOLVED_BY: "console:alice",
        RECOVERED_AT: stamp(observed + timedelta(seconds=40)),
    }
    change = "UpdateFunctionConfiguration"
    held = _incident(incidents, FN, 10, ["timeout"], "REMEDIATED", change, fixed)
    undone = _incident(
        incidents,
        FN,
        20,
        ["timeout"],
        "NOT_REMEDIATED",
        change,
        {FIX: json.dumps([RAISE_TIMEOUT]), FIX_VERDICT: "did_not_help"},
    )
    _incident(incidents, FN, 5, ["timeout"], "DIAGNOSED", "PutFunctionConcurrency")
    now = _incident(incidents, FN, 0, ["timeout"], "DIAGNOSED", change)
    command = build_command(
        "lambda", "UpdateFunctionConfiguration", {"FunctionName": FN, "Timeout": 30}, region=sandbox.region
    )
    incidents.update_context(now, {"diagnosis": _diagnosis(command).model_dump_json()})

    notifier = Notifier(
        sns_client(sandbox.session(names.SUPERVISOR)), sandbox.world.diagnoses_topic_arn, None, Logger()
    )
    metrics = EphemeralMetrics(namespace="IncidentResponse", service="test")
    assert notify_once(incidents, notifier, now, None, metrics) == PUBLISHED
    [message] = notified()
    lines = json.loads(message["Message"])["content"]["description"].splitlines()  # the chat form
    start = lines.index(f"*{RECALL_HEADING}*") + 1
    recalled = [line.strip() for line in lines[start : lines.index("", start)]]
    assert recalled == [
        f"timeout after {change}: 2 earlier incident(s) in 90 days, 3 in 30 with this one",
        f"{held}: the fix held, recovered in 40 s after the alarm (lambda UpdateFunctionConfiguration, "
        "approved by console:alice)",
        f"{undone}: the fix did not help (undone) (lambda UpdateFunctionConfiguration)",
        "recurring (3 in 30 days): advice, never applied: a lasting fix, such as an alarm or a test on the "
        f"change that keeps causing it after {change}",
    ]


@pytest.mark.parametrize("days", ["0", "3651", "a year"])
def test_a_retention_outside_one_day_to_ten_years_is_refused_naming_the_setting(
    days: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INCIDENT_RETENTION_DAYS", days)
    with pytest.raises(ValidationError, match="INCIDENT_RETENTION_DAYS"):
        SupervisorSettings()
