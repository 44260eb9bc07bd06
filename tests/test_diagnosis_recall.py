"""The diagnosis recalls the function's past: the graph reads get_incident_history before the model's first
turn, shows it with the incident only when there is a past, names the earlier incidents of the diagnosis's
pattern with their fixes, and a recurrence as advice; a pointer into history never supports a fault."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from mcp_server.contract.history import IncidentHistoryResponse, PastCall, PastIncident, Pattern
from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import AgentState, build_graph, initial_state, run_graph
from supervisor.agent.prompt import SUBMIT_TOOL, incident_message, read_tagged
from supervisor.agent.providers import MockToolProvider
from supervisor.diagnosis.corroboration import HISTORY_REFUSAL
from supervisor.diagnosis.precedents import HISTORY_HEADING, HISTORY_TOOL, MAX_SHOWN, recall
from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.settings import SupervisorSettings
from tests.agent_support import FUNCTION, RESPONSES, ScriptedChatModel, Step, ai, call, pointer, submission

NOW = datetime.now(UTC)
FIX = [
    PastCall(service="lambda", operation="DeleteFunctionConcurrency", parameters={"FunctionName": FUNCTION})
]


def _past(incident_id: str, days_ago: float, fault: str, **fields: Any) -> PastIncident:
    return PastIncident(
        incident_id=incident_id,
        observed_at=(NOW - timedelta(days=days_ago)).isoformat(),
        status=fields.pop("status", "REMEDIATED"),
        fault_types=[fault],
        **fields,
    )


def _history(*past: PastIncident, patterns: list[Pattern] | None = None) -> str:
    answer = IncidentHistoryResponse(
        function_name=FUNCTION,
        window_start=(NOW - timedelta(days=90)).isoformat(),
        incidents_read=len(past),
        incidents=list(past),
        patterns=patterns or [],
    )
    return answer.model_dump_json()


# Two earlier throttling incidents with no change found (the older one's fix held, the newer one's did not
# help), and a decoy of another pattern on the same function.
HELD = _past("inc-old", 20, "throttling", fix=FIX, fix_verdict="held", seconds_to_recover=42.0)
FAILED = _past("inc-newer", 3, "throttling", status="NOT_REMEDIATED", fix=FIX, fix_verdict="did_not_help")
DECOY = _past("inc-decoy", 1, "timeout", trigger_event="UpdateFunctionConfiguration20150331v2")
RECURRING = Pattern(
    fault_type="throttling", trigger_event=None, incidents=2, in_last_30_days=2, recurring=False,
    fixes_applied=2, fixes_held=1, mean_seconds_to_recover=42.0,
)  # fmt: skip
DECOY_PATTERN = Pattern(
    fault_type="timeout", trigger_event=DECOY.trigger_event, incidents=1, in_last_30_days=1, recurring=False,
    fixes_applied=0, fixes_held=0,
)  # fmt: skip
PAST = _history(DECOY, FAILED, HELD, patterns=[RECURRING, DECOY_PATTERN])

SUBMIT = call(SUBMIT_TOOL, submission(), "submit")  # throttling, corroborated by the limit and the throttles
CORROBORATE = (call("get_lambda_config"), call("get_function_metrics"))


async def _run(
    script: Sequence[Step], history: str | None, model: Any = None
) -> tuple[AgentState, Accounting]:
    responses = {**RESPONSES, **({HISTORY_TOOL: history} if history is not None else {})}
    accounting = Accounting()
    graph = build_graph(
        model or ScriptedChatModel(script), MockToolProvider(responses), SupervisorSettings(), accounting,
        recall=True,
    )  # fmt: skip
    state = initial_state({"AlarmName": "data-processor-errors"}, "inc-now", FUNCTION, time.time() + 300)
    final, _ = await run_graph(graph, state, 25)
    return final, accounting


async def test_the_earlier_incidents_of_the_pattern_are_named_with_their_fixes_and_the_decoy_is_not() -> None:
    final, accounting = await _run([ai(*CORROBORATE), ai(SUBMIT)], PAST)
    diagnosis = final["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.fault_types == ["throttling"]
    assert diagnosis.verification.passed
    assert [(p.incident_id, p.fix_verdict, p.fix) for p in diagnosis.precedents] == [
        ("inc-newer", "did_not_help", FIX),
        ("inc-old", "held", FIX),
    ]
    assert [p.field for p in diagnosis.precedents] == ["incidents.1", "incidents.2"]
    assert diagnosis.precedents[1].seconds_to_recover == 42.0
    # Two before it in 30 days, and this one: a recurrence, with a lasting fix as advice only.
    assert diagnosis.recurrence is not None
    assert (diagnosis.recurrence.in_last_30_days, diagnosis.recurrence.field) == (3, "patterns.0")
    assert diagnosis.recurrence.advice.endswith("advice, never applied")
    assert [step.command for step in diagnosis.remediation_plan] == [
        submission()["remediation_plan"][0]["command"]
    ]
    # Read once, before the model's first turn, and shown with the incident as corroboration.
    first = accounting.tool_calls[0]
    assert (first.tool, first.turn, first.arguments) == (HISTORY_TOOL, 1, {"lambda_name": FUNCTION})
    shown = str(final["messages"][0].content)
    assert shown.startswith(incident_message("inc-now", FUNCTION, {"AlarmName": "data-processor-errors"}))
    assert f'{HISTORY_HEADING}\n<tool_result tool="{HISTORY_TOOL}"' in shown
    assert sum(isinstance(m, HumanMessage) for m in final["messages"]) == 1


async def test_a_function_without_past_incidents_is_shown_nothing_more() -> None:
    empty = _history()
    final, _accounting = await _run([ai(*CORROBORATE), ai(SUBMIT)], empty)
    assert final["messages"][0].content == incident_message(
        "inc-now", FUNCTION, {"AlarmName": "data-processor-errors"}
    )
    assert next(result.tool for result in final["tool_results"]) == HISTORY_TOOL
    diagnosis = final["diagnosis"]
    assert diagnosis is not None
    assert (diagnosis.precedents, diagnosis.recurrence) == ([], None)


async def test_the_model_is_shown_the_newest_past_incidents_only_and_code_reads_the_whole_answer() -> None:
    many = [_past(f"inc-{n}", n + 5, "timeout") for n in range(MAX_SHOWN + 3)]  # newer than HELD
    final, _ = await _run([ai(*CORROBORATE), ai(SUBMIT)], _history(*many, HELD, patterns=[RECURRING]))
    shown = read_tagged(str(final["messages"][0].content).split(HISTORY_HEADING, 1)[1])
    assert shown is not None
    assert [p["incident_id"] for p in shown[2]["incidents"]] == [f"inc-{n}" for n in range(MAX_SHOWN)]
    assert shown[2]["incidents_read"] == MAX_SHOWN + 4  # the answer's own count, said as it is
    diagnosis = final["diagnosis"]
    assert diagnosis is not None
    assert [(p.incident_id, p.field) for p in diagnosis.precedents] == [
        ("inc-old", f"incidents.{MAX_SHOWN + 3}")
    ]


async def test_a_history_that_cannot_be_read_is_a_gap_and_the_diagnosis_goes_on() -> None:
    final, accounting = await _run([ai(*CORROBORATE), ai(SUBMIT)], None)
    diagnosis = final["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.fault_types == ["throttling"]
    assert (accounting.tool_calls[0].tool, accounting.tool_calls[0].status) == (HISTORY_TOOL, "error")
    gaps = {gap.source: gap.reason for gap in diagnosis.gaps}
    assert gaps[HISTORY_TOOL] == "the call failed: nothing it reads was checked"
    assert diagnosis.precedents == []


HISTORY_ONLY = submission(
    evidence=[pointer(HISTORY_TOOL, "incidents.2.fault_types.0", "throttling")],
    remediation_plan=[],
)


async def test_a_fault_whose_only_support_is_a_history_pointer_is_refused_then_taken_out() -> None:
    script = [
        ai(*CORROBORATE),
        ai(call(SUBMIT_TOOL, HISTORY_ONLY, "s1")),
        ai(call(SUBMIT_TOOL, HISTORY_ONLY, "s2")),
    ]
    final, _ = await _run(script, PAST)
    refusals = [m for m in final["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(refusals) == 1
    assert HISTORY_REFUSAL in str(refusals[0].content)
    diagnosis = final["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.pointers[0].verified  # the value is there, as history holds it ...
    assert diagnosis.fault_types == ["unknown"]  # ... but it shows nothing of today's failure
    assert {claim.claim for claim in diagnosis.refused} >= {"fault_types.throttling"}
    assert any(HISTORY_REFUSAL in claim.reason for claim in diagnosis.refused)
    assert diagnosis.precedents == []  # nothing is recalled for an unknown fault


async def test_a_history_pointer_cited_as_context_stands_beside_the_support() -> None:
    context = pointer(HISTORY_TOOL, "incidents.2.incident_id", "inc-old", None)
    payload = submission()
    payload["evidence"] = [*payload["evidence"], context]
    final, _ = await _run([ai(*CORROBORATE), ai(call(SUBMIT_TOOL, payload, "s"))], PAST)
    diagnosis = final["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed
    assert diagnosis.evidence[2].tool == HISTORY_TOOL
    assert diagnosis.fault_types == ["throttling"]


async def test_the_rules_model_diagnoses_the_same_with_a_past_shown() -> None:
    # RESPONSES' change history holds the operator's PutFunctionConcurrency: the past of that pattern.
    trigger = "PutFunctionConcurrency20171031"
    same = [p.model_copy(update={"trigger_event": trigger}) for p in (FAILED, HELD)]
    without, _ = await _run([], _history(), RulesChatModel())
    with_past, _ = await _run([], _history(DECOY, *same, HELD), RulesChatModel())
    assert without["diagnosis"] is not None
    assert with_past["diagnosis"] is not None
    keep = {"precedents", "recurrence", "verification", "gaps"}
    assert with_past["diagnosis"].model_dump(exclude=keep) == without["diagnosis"].model_dump(exclude=keep)
    assert with_past["diagnosis"].trigger is not None
    assert with_past["diagnosis"].trigger.event_name == trigger
    assert [p.incident_id for p in with_past["diagnosis"].precedents] == ["inc-newer", "inc-old"]
    assert [p.field for p in with_past["diagnosis"].precedents] == ["incidents.1", "incidents.2"]


@pytest.mark.parametrize(
    ("fault_types", "trigger", "expected"),
    [
        (["throttling"], None, ["inc-newer", "inc-old"]),
        (["throttling"], "PutFunctionConcurrency20171031", []),  # another trigger kind: another pattern
        (["timeout"], DECOY.trigger_event, ["inc-decoy"]),
        (["unknown"], None, []),
        (["network_block", "throttling"], None, []),  # the primary fault decides
    ],
)
def test_the_pattern_is_the_primary_fault_and_the_trigger(
    fault_types: list[str], trigger: str | None, expected: list[str]
) -> None:
    precedents, _ = recall(json.loads(PAST), "inc-now", fault_types, trigger)
    assert [p.incident_id for p in precedents] == expected


def test_this_incident_is_neither_its_own_precedent_nor_counted_twice() -> None:
    answer = json.loads(_history(HELD, patterns=[RECURRING.model_copy(update={"in_last_30_days": 2})]))
    precedents, recurrence = recall(answer, "inc-old", ["throttling"], None)
    assert precedents == []
    assert recurrence is None
    precedents, recurrence = recall(answer, "inc-now", ["throttling"], None)
    assert [p.incident_id for p in precedents] == ["inc-old"]
    assert recurrence is not None
    assert recurrence.in_last_30_days == 3
