"""Replay of recorded investigations, the replay hash and the reasoning-chain guard."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from chaos.faults.iam import REVOKE_S3
from chaos.loopback import free_port
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.contract.registry import TOOLS
from supervisor.agent.prompt import SUBMIT_TOOL
from supervisor.agent.providers import RecordedToolProvider, ToolCallFailed
from supervisor.agent.report import render
from supervisor.diagnosis.evidence import verify
from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.incident.audit import (
    REPLAY_HASH_VERSION,
    RecordedIncident,
    canonical_json,
    context_item,
    fit_chain,
    read_context,
    replay_hash,
    structured_fields,
)
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.replay import load_recorded, replay
from supervisor.incident.store import IncidentStore, from_item, to_item
from supervisor.schemas import Diagnosis, DiagnosisGap, DiagnosisSubmission, ToolResult
from supervisor.settings import SupervisorSettings
from tests.agent_support import (
    FUNCTION,
    POLICY_DELETED,
    POLICY_RESTORED,
    RESPONSES,
    UNDONE_CHANGES,
    ScriptedChatModel,
    ai,
    call,
    diagnose_with,
    pointer,
    submission,
    with_resolved,
)
from tests.conftest import Inject
from tests.fault_scenarios import fresh_logs
from tests.pipeline_support import direct_event


def _recorded_incident(
    sandbox: Sandbox,
    inject: Inject,
    runtime: LocalLambdaRuntime,
    make_pipeline: Callable[..., IncidentPipeline],
) -> str:
    """Break the function (S3 policy deleted), let it fail once, and diagnose it through the pipeline;
    the incident's id."""
    sandbox.reset_cloudwatch()  # this test's metrics and log lines only
    fresh_logs(sandbox, names.FUNCTION_NAME)
    inject(REVOKE_S3)
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "failed"
    response = make_pipeline().handle(direct_event(), None)
    (outcome,) = response["outcomes"]
    assert outcome["status"] == "DIAGNOSED"
    return str(outcome["incident_id"])


def _cli(sandbox: Sandbox, incidents: IncidentStore, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_"))} | sandbox.env
    env |= {
        "AWS_PROFILE": names.SUPERVISOR,
        "INCIDENT_STATE_TABLE": incidents.state_table,
        "INCIDENT_CONTEXT_TABLE": str(incidents.context_table),
        "MCP_SERVER_URL": f"http://127.0.0.1:{free_port()}/sse",  # a replay needs no MCP server
    }
    return subprocess.run(
        [sys.executable, "-m", "supervisor.agent.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_replaying_a_stored_incident_reproduces_its_hash(
    sandbox: Sandbox,
    inject: Inject,
    runtime: LocalLambdaRuntime,
    make_pipeline: Callable[..., IncidentPipeline],
    incidents: IncidentStore,
) -> None:
    incident_id = _recorded_incident(sandbox, inject, runtime, make_pipeline)
    shown = _cli(sandbox, incidents, "--replay", incident_id)
    assert shown.returncode == 0, shown.stderr
    assert "Fault types: permission_loss" in shown.stdout
    assert "matches the recorded hash" in shown.stdout

    as_json = _cli(sandbox, incidents, "--replay", incident_id, "--json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    stored = load_recorded(incidents, incident_id)
    assert stored.replay_hash_version == REPLAY_HASH_VERSION
    assert report["replay"] == {
        "incident_id": incident_id,
        "recorded_model": "rules",
        "replay_model": "rules",
        "recorded_hash": stored.replay_hash,
        "replay_hash": stored.replay_hash,
        "matches": True,
    }
    assert report["diagnosis"]["fault_types"] == ["permission_loss"]


async def test_a_different_conclusion_gives_a_different_hash(
    sandbox: Sandbox,
    inject: Inject,
    runtime: LocalLambdaRuntime,
    make_pipeline: Callable[..., IncidentPipeline],
    incidents: IncidentStore,
) -> None:
    incident_id = await asyncio.to_thread(_recorded_incident, sandbox, inject, runtime, make_pipeline)
    recorded = load_recorded(incidents, incident_id)
    lazy = submission(
        fault_types=["unknown"],
        evidence=[pointer("get_lambda_config", "FunctionName", names.FUNCTION_NAME, supports=None)],
        remediation_plan=[],
    )
    model = ScriptedChatModel(
        [
            ai(call("get_lambda_config", {"lambda_name": names.FUNCTION_NAME})),
            ai(call("submit_diagnosis", lazy)),
        ]
    )
    outcome = await replay(recorded, settings=SupervisorSettings(), model=model)
    assert outcome.result.diagnosis is not None
    assert outcome.result.diagnosis.verification.passed  # served from the recording
    assert not outcome.matches


def test_an_unknown_incident_is_a_clear_usage_error(sandbox: Sandbox, incidents: IncidentStore) -> None:
    shown = _cli(sandbox, incidents, "--replay", "data-processor@2026-01-01T00:00:00.000Z")
    assert shown.returncode == 2
    assert "no investigation of 'data-processor@2026-01-01T00:00:00.000Z' is recorded" in shown.stderr


async def test_the_recorded_provider_serves_only_what_was_recorded() -> None:
    recorded = ToolResult(
        tool="get_lambda_config", arguments={"lambda_name": "f"}, result={"FunctionName": "f"}
    )
    provider = RecordedToolProvider([recorded])
    assert json.loads(await provider.call_tool("get_lambda_config", {"lambda_name": "f"})) == {
        "FunctionName": "f"
    }
    with pytest.raises(ToolCallFailed, match="only with arguments"):
        await provider.call_tool("get_lambda_config", {"lambda_name": "g"})
    with pytest.raises(ToolCallFailed, match="get_iam_state was not called in the recorded investigation"):
        await provider.call_tool("get_iam_state", {"lambda_name": "f"})


def _result(tool: str, **result: Any) -> ToolResult:
    return ToolResult(tool=tool, arguments={"lambda_name": "f"}, result=result)


def test_the_replay_hash_is_canonical() -> None:
    incident = {"function_name": "f", "error_type": "Errors"}
    a, b = _result("get_lambda_config", Timeout=3.00001, Memory=256), _result("get_iam_state", role="r")
    base = replay_hash(incident, [a, b], None)
    assert replay_hash(dict(reversed(incident.items())), [b, a], None) == base  # key and call order
    assert replay_hash(incident, [_result("get_lambda_config", Timeout=3.00004, Memory=256), b], None) == base
    assert replay_hash(incident, [_result("get_lambda_config", Timeout=3.1, Memory=256), b], None) != base
    assert replay_hash(incident | {"detail": "x"}, [a, b], None) != base
    assert canonical_json({"b": 1.23456, "a": [0.1 + 0.2]}) == '{"a":[0.3],"b":1.2346}'


def test_a_chain_within_budget_is_kept_whole_and_an_oversized_message_is_cut() -> None:
    chain = [{"type": "system", "content": "s"}, {"type": "human", "content": "incident"}]
    chain += [{"type": "ai", "content": f"turn {n}"} for n in range(5)]
    kept = fit_chain(chain, budget=10_000)
    assert (kept.messages, kept.truncated, kept.omitted) == (chain, False, 0)

    huge = [*chain[:2], {"type": "ai", "content": "x" * 50_000}, {"type": "tool", "content": "ok"}]
    cut = fit_chain(huge, budget=5_000)
    assert cut.truncated
    assert cut.omitted == 0
    assert len(json.dumps(cut.messages)) <= 5_000
    assert cut.messages[2]["content"].endswith("…[TRUNCATED]")
    assert huge[2]["content"] == "x" * 50_000  # the input is not modified


# --------------------------------------------------------------------------- records made before version 2

INCIDENT = {"AlarmName": f"{FUNCTION}-throttles", "NewStateValue": "ALARM"}
_LEGACY_STEP_FIELDS = {"command"}
_LEGACY_DIAGNOSIS_FIELDS = {"trigger", "timeline", "gaps", "ruled_out"}
_LEGACY_VERIFICATION_FIELDS = {"entries", "support"}


def _recorded_results() -> list[ToolResult]:
    """What the MCP server answered in the recorded investigation, validated as the graph keeps it."""
    return [
        ToolResult(
            tool=tool,
            arguments={"lambda_name": FUNCTION},
            result=TOOLS[tool].response.model_validate_json(RESPONSES[tool]).model_dump(mode="json"),
        )
        for tool in ("get_lambda_config", "get_function_metrics")
    ]


def _scripted(confidence: float = 0.9) -> ScriptedChatModel:
    """The investigation as it was recorded: the two tools, then a throttling diagnosis."""
    legacy = submission(confidence=confidence)
    del legacy["remediation_plan"][0]["command"]  # no commands before version 2
    return ScriptedChatModel(
        [
            ai(
                call("get_lambda_config", {"lambda_name": FUNCTION}),
                call("get_function_metrics", {"lambda_name": FUNCTION}),
            ),
            ai(call(SUBMIT_TOOL, legacy)),
        ]
    )


def _as_before_version_2(diagnosis: Diagnosis) -> str:
    """The diagnosis JSON as the supervisor stored it before trigger, timeline, gaps, ruled-out hypotheses,
    commands and entry checks existed."""
    data = json.loads(diagnosis.model_dump_json())
    for name in _LEGACY_DIAGNOSIS_FIELDS:
        del data[name]
    for step in data["remediation_plan"]:
        for name in _LEGACY_STEP_FIELDS:
            del step[name]
    for name in _LEGACY_VERIFICATION_FIELDS:
        del data["verification"][name]
    return json.dumps(data)


async def _legacy_item() -> tuple[dict[str, dict[str, Any]], Diagnosis]:
    """An incident-context item as stored before version 2: no replay_hash_version, a diagnosis without
    the new fields, and the hash over the version-1 fields. Made from a run of today's graph, then stripped
    of what did not exist."""
    results = _recorded_results()
    fresh = RecordedIncident(
        incident_id="inc-legacy",
        function_name=FUNCTION,
        incident=INCIDENT,
        tool_results=results,
        replay_hash="",
        replay_hash_version=REPLAY_HASH_VERSION,
        model="bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        diagnosis=None,
    )
    run = await replay(fresh, settings=SupervisorSettings(), model=_scripted())
    diagnosis = run.result.diagnosis
    assert diagnosis is not None
    assert diagnosis.verification.passed
    item = context_item(
        incident_id=fresh.incident_id,
        function_name=FUNCTION,
        incident=INCIDENT,
        result=run.result,
        model=fresh.model,
        recorded_at="2026-11-21T10:02:00+00:00",
    )
    plain = from_item(item)
    assert plain.pop("replay_hash_version") == REPLAY_HASH_VERSION
    legacy = Diagnosis.model_validate_json(_as_before_version_2(diagnosis))
    plain["diagnosis"] = _as_before_version_2(diagnosis)
    plain["replay_hash"] = replay_hash(INCIDENT, run.result.tool_results, legacy, version=1)
    return to_item(plain), diagnosis


async def test_a_record_from_before_version_2_loads_replays_and_matches() -> None:
    item, diagnosis = await _legacy_item()
    stored = json.loads(from_item(item)["diagnosis"])
    assert "replay_hash_version" not in item
    assert _LEGACY_DIAGNOSIS_FIELDS.isdisjoint(stored)
    assert _LEGACY_VERIFICATION_FIELDS.isdisjoint(stored["verification"])

    recorded = read_context(item)
    assert recorded.replay_hash_version == 1
    assert recorded.diagnosis is not None
    assert (recorded.diagnosis.trigger, recorded.diagnosis.timeline, recorded.diagnosis.gaps) == (
        None,
        [],
        [],
    )
    assert recorded.diagnosis.verification.entries == []
    assert structured_fields(recorded.diagnosis, 1) == structured_fields(diagnosis, 1)

    again = await replay(recorded, settings=SupervisorSettings(), model=_scripted())
    assert again.result.diagnosis is not None
    assert again.result.diagnosis.gaps  # today's diagnosis has parts the record has not ...
    assert again.matches  # ... and is compared on the fields the record was hashed over
    assert again.replay_hash == recorded.replay_hash
    hashed_v2 = replay_hash(recorded.incident, again.result.tool_results, again.result.diagnosis, version=2)
    assert hashed_v2 != recorded.replay_hash  # the version is what makes it comparable


async def test_a_different_conclusion_on_a_record_from_before_version_2_does_not_match() -> None:
    item, _ = await _legacy_item()
    again = await replay(read_context(item), settings=SupervisorSettings(), model=_scripted(confidence=0.6))
    assert again.result.diagnosis is not None
    assert again.result.diagnosis.fault_types == ["throttling"]
    assert not again.matches


# --------------------------------------------------------------------------- what version 2 hashes


@pytest.fixture
async def diagnosed() -> tuple[list[ToolResult], Diagnosis]:
    """The rules model's diagnosis of the canned throttling incident: trigger, timeline, ruled-out
    hypotheses and a command, all verified."""
    run = await diagnose_with(RulesChatModel(), RESPONSES)
    diagnosis = run.state["diagnosis"]
    assert diagnosis is not None
    assert diagnosis.verification.passed
    assert diagnosis.trigger is not None
    assert diagnosis.timeline
    assert diagnosis.ruled_out
    assert diagnosis.remediation_plan[0].command
    return run.state["tool_results"], diagnosis


def _changed(diagnosis: Diagnosis, part: str) -> Diagnosis:
    trigger, step = diagnosis.trigger, diagnosis.remediation_plan[0]
    assert trigger is not None
    changes: dict[str, Any] = {
        "trigger": {"trigger": trigger.model_copy(update={"time": "2026-11-21T09:59:31+00:00"})},
        "trigger dropped": {"trigger": None},
        "timeline": {"timeline": diagnosis.timeline[:-1]},
        "timeline kind": {
            "timeline": [diagnosis.timeline[0].model_copy(update={"kind": "limit"}), *diagnosis.timeline[1:]]
        },
        "ruled_out": {"ruled_out": []},
        "gaps": {"gaps": [*diagnosis.gaps, DiagnosisGap(source="get_iam_state", reason="not read")]},
        "commands": {
            "remediation_plan": [step.model_copy(update={"command": f"{step.command} --region ca-central-1"})]
        },
    }
    return diagnosis.model_copy(update=changes[part])


@pytest.mark.parametrize(
    "part", ["trigger", "trigger dropped", "timeline", "timeline kind", "ruled_out", "gaps", "commands"]
)
def test_the_version_2_hash_covers_each_new_part(
    diagnosed: tuple[list[ToolResult], Diagnosis], part: str
) -> None:
    results, diagnosis = diagnosed
    changed = _changed(diagnosis, part)
    assert replay_hash(INCIDENT, results, changed) != replay_hash(INCIDENT, results, diagnosis)
    assert replay_hash(INCIDENT, results, changed, version=1) == replay_hash(
        INCIDENT, results, diagnosis, version=1
    )  # version 1 never saw these parts


def test_the_version_2_hash_leaves_free_text_out(diagnosed: tuple[list[ToolResult], Diagnosis]) -> None:
    results, diagnosis = diagnosed
    reworded = diagnosis.model_copy(
        update={
            "timeline": [e.model_copy(update={"description": "reworded"}) for e in diagnosis.timeline],
            "ruled_out": [r.model_copy(update={"reason": "reworded"}) for r in diagnosis.ruled_out],
            "gaps": [g.model_copy(update={"reason": "reworded"}) for g in diagnosis.gaps],
        }
    )
    assert replay_hash(INCIDENT, results, reworded) == replay_hash(INCIDENT, results, diagnosis)


# --------------------------------------------------------------------------- resolved faults (version 3)

UNDONE_TOOLS = ("get_lambda_config", "get_function_metrics", "get_recent_changes")


def _undone_results() -> list[ToolResult]:
    """The three answers a diagnosis with a resolved fault rests on, validated as the graph keeps them."""
    answers = RESPONSES | {"get_recent_changes": json.dumps(UNDONE_CHANGES)}
    return [
        ToolResult(
            tool=tool,
            arguments={"lambda_name": FUNCTION},
            result=TOOLS[tool].response.model_validate_json(answers[tool]).model_dump(mode="json"),
        )
        for tool in UNDONE_TOOLS
    ]


def _resolving(**changes: Any) -> ScriptedChatModel:
    """The three tools, then the canned throttling diagnosis with a resolved permission_loss."""
    payload = with_resolved(submission())
    payload["resolved"][0] |= changes
    return ScriptedChatModel([ai(*(call(tool) for tool in UNDONE_TOOLS)), ai(call(SUBMIT_TOOL, payload))])


def _unrecorded(results: list[ToolResult]) -> RecordedIncident:
    return RecordedIncident(
        incident_id="inc-resolved",
        function_name=FUNCTION,
        incident=INCIDENT,
        tool_results=results,
        replay_hash="",
        replay_hash_version=REPLAY_HASH_VERSION,
        model="rules",
        diagnosis=None,
    )


async def test_a_diagnosis_with_a_resolved_fault_round_trips_through_incident_context(
    incidents: IncidentStore,
) -> None:
    run = await replay(_unrecorded(_undone_results()), settings=SupervisorSettings(), model=_resolving())
    diagnosis = run.result.diagnosis
    assert diagnosis is not None
    assert diagnosis.verification.passed
    assert [(r.fault_type, r.caused_by.evidence, r.undone_by.evidence) for r in diagnosis.resolved] == [
        ("permission_loss", [2], [3])
    ]
    item = context_item(
        incident_id="inc-resolved",
        function_name=FUNCTION,
        incident=INCIDENT,
        result=run.result,
        model="rules",
        recorded_at="2026-11-21T10:02:00+00:00",
    )
    incidents.put_context(item)
    stored = incidents.get_context("inc-resolved")
    assert stored is not None

    recorded = read_context(stored)
    assert recorded.diagnosis == diagnosis
    assert recorded.replay_hash_version == 3
    again = await replay(recorded, settings=SupervisorSettings(), model=_resolving())
    assert again.matches
    reworded = await replay(recorded, settings=SupervisorSettings(), model=_resolving(reason="reworded"))
    assert reworded.matches  # the reason is prose: left out of the hash
    other = {"event_name": "PutRolePolicy", "time": POLICY_RESTORED, "evidence": [3, 4]}
    cited = await replay(recorded, settings=SupervisorSettings(), model=_resolving(undone_by=other))
    assert cited.result.diagnosis is not None
    assert cited.result.diagnosis.verification.passed
    assert not cited.matches  # what the undoing change cites is structure


def test_the_cli_report_names_each_resolved_fault_with_its_changes() -> None:
    async def run() -> str:
        replayed = await replay(
            _unrecorded(_undone_results()), settings=SupervisorSettings(), model=_resolving()
        )
        return render(replayed.result, FUNCTION)

    report = asyncio.run(run())
    assert (
        "\n\nResolved (not current):\n"
        f"  permission_loss: caused by DeleteRolePolicy at {POLICY_DELETED}, undone by PutRolePolicy at "
        f"{POLICY_RESTORED}. The inline policy deleted was put back; no invocation failed since. [4]\n"
    ) in report
    assert "Fault types: throttling\n" in report


async def test_a_record_from_version_2_loads_without_resolved_faults_and_matches() -> None:
    """A diagnosis stored before ``resolved`` existed: no such key in its JSON, hashed over version 2."""
    run = await replay(_unrecorded(_recorded_results()), settings=SupervisorSettings(), model=_scripted())
    diagnosis = run.result.diagnosis
    assert diagnosis is not None
    plain = from_item(
        context_item(
            incident_id="inc-v2",
            function_name=FUNCTION,
            incident=INCIDENT,
            result=run.result,
            model="rules",
            recorded_at="2026-11-21T10:02:00+00:00",
        )
    )
    stored = json.loads(plain["diagnosis"])
    del stored["resolved"]
    plain |= {
        "diagnosis": json.dumps(stored),
        "replay_hash_version": 2,
        "replay_hash": replay_hash(INCIDENT, run.result.tool_results, diagnosis, version=2),
    }

    recorded = read_context(to_item(plain))
    assert recorded.diagnosis is not None
    assert recorded.diagnosis.resolved == []
    assert recorded.replay_hash_version == 2
    again = await replay(recorded, settings=SupervisorSettings(), model=_scripted())
    assert again.matches
    assert again.replay_hash == recorded.replay_hash


def test_the_version_3_hash_covers_resolved_faults_and_version_2_does_not() -> None:
    payload = with_resolved(submission())
    responses = {tool: [r.result for r in _undone_results() if r.tool == tool] for tool in UNDONE_TOOLS}
    accepted = DiagnosisSubmission.model_validate(payload)
    diagnosis = Diagnosis(**accepted.model_dump(), verification=verify(accepted, responses, 0, FUNCTION))
    (resolved,) = diagnosis.resolved
    undone = resolved.undone_by.model_copy(update={"time": "2026-11-21T09:46:00+00:00"})
    for changed in (
        diagnosis.model_copy(update={"resolved": []}),
        diagnosis.model_copy(update={"resolved": [resolved.model_copy(update={"fault_type": "timeout"})]}),
        diagnosis.model_copy(update={"resolved": [resolved.model_copy(update={"undone_by": undone})]}),
        diagnosis.model_copy(update={"resolved": [resolved.model_copy(update={"evidence": [2, 4]})]}),
    ):
        assert replay_hash(INCIDENT, [], changed) != replay_hash(INCIDENT, [], diagnosis)
        assert replay_hash(INCIDENT, [], changed, version=2) == replay_hash(
            INCIDENT, [], diagnosis, version=2
        )
    assert structured_fields(diagnosis)["resolved"] == [
        {
            "fault_type": "permission_loss",
            "caused_by": {"event_name": "DeleteRolePolicy", "time": POLICY_DELETED, "evidence": [2]},
            "undone_by": {"event_name": "PutRolePolicy", "time": POLICY_RESTORED, "evidence": [3]},
            "evidence": [4],
        }
    ]
    assert "resolved" not in structured_fields(diagnosis, 2)
