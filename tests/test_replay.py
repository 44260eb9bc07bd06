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
from supervisor.agent.providers import RecordedToolProvider, ToolCallFailed
from supervisor.incident.audit import canonical_json, fit_chain, replay_hash
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.replay import load_recorded, replay
from supervisor.incident.store import IncidentStore
from supervisor.schemas import ToolResult
from supervisor.settings import SupervisorSettings
from tests.agent_support import ScriptedChatModel, ai, call, pointer, submission
from tests.conftest import Inject
from tests.pipeline_support import direct_event


def _recorded_incident(
    sandbox: Sandbox,
    inject: Inject,
    runtime: LocalLambdaRuntime,
    make_pipeline: Callable[..., IncidentPipeline],
) -> str:
    """Break the function (S3 policy deleted), let it fail once, and diagnose it through the pipeline;
    the incident's id."""
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
