"""Each fault class, caused in the sandbox by a real change (checked to fail as that class fails on Lambda,
and restored exactly afterwards), diagnosed end to end by the `rules` model over MCP (SSE to the shipped
server): the fault, the change that triggered it, the timeline, the hypotheses ruled out, and a remediation
command that parses against the AWS service model and, applied, fixes the function.

The sandbox decides what fails (moto's IAM, the sandbox's Lambda runtime, its VPC model); the diagnosis
reads it only through the tools, so agreement here is not shared code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore import xform_name

from chaos.drill.apply_command import parse_command, run_command
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from supervisor.agent.run import AgentResult, run_agent
from supervisor.faults.meanings import operation as operation_of
from supervisor.schemas import Diagnosis
from supervisor.settings import SupervisorSettings
from tests.conftest import shipped_mcp_server
from tests.fault_scenarios import (
    EXPECTED,
    OPERATOR_ARN,
    SCENARIOS,
    RestoreSteps,
    Run,
    check_run,
    healthy_event,
    run_scenario,
    world_state,
)

FAULT = {"bad_deploy": "code_error"}  # scenario fault label -> fault type, where they differ

# The first remediation step's command: (service, operation, the parameters that must be in it).
COMMAND: dict[str, tuple[str, str, dict[str, Any]]] = {
    "permission_wrong_resource": ("iam", "PutRolePolicy", {"PolicyName": names.INLINE_POLICY_NAME}),
    "permission_removed": ("iam", "PutRolePolicy", {"PolicyName": names.INLINE_POLICY_NAME}),
    "permission_attached_deny": ("iam", "DetachRolePolicy", {"RoleName": names.ROLE_NAME}),
    "throttling": ("lambda", "PutFunctionConcurrency", {"FunctionName": names.FUNCTION_NAME}),
    "throttling_zero": ("lambda", "DeleteFunctionConcurrency", {"FunctionName": names.ORDERS_FUNCTION}),
    "network_block": ("ec2", "AuthorizeSecurityGroupEgress", {}),
    "timeout": ("lambda", "UpdateFunctionConfiguration", {"Timeout": 3}),
    "out_of_memory": ("lambda", "UpdateFunctionConfiguration", {"MemorySize": 256}),
    "bad_deploy": ("lambda", "UpdateAlias", {"Name": names.ORDERS_ALIAS, "FunctionVersion": "1"}),
    "configuration_error": ("lambda", "UpdateFunctionConfiguration", {"Handler": "data_processor.handler"}),
}
FAULTY = [name for name, s in SCENARIOS.items() if s.fault != "none"]
HEALTHY = [name for name, s in SCENARIOS.items() if s.fault == "none"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A sandbox of this module's own: its change history holds only these scenarios' changes, however
    many other tests ran before (a diagnosis reads the newest 50 changes)."""
    with running_sandbox(tmp_path_factory.mktemp("e2e-sandbox"), cloudtrail_delay=0) as own:
        yield own


@pytest.fixture(scope="module")
def mcp_server_url(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shipped_mcp_server(sandbox, tmp_path_factory.mktemp("e2e-mcp")) as url:
        yield url


def test_every_scenario_has_expectations() -> None:
    assert set(EXPECTED) == set(SCENARIOS)
    assert all(
        (s.fault == "none") == (set(EXPECTED[n].statuses) == {"succeeded"}) for n, s in SCENARIOS.items()
    )


async def _break_and_diagnose(
    sandbox: Sandbox, url: str, runtime: LocalLambdaRuntime, steps: RestoreSteps, name: str
) -> tuple[Run, AgentResult, Diagnosis]:
    """The scenario's change and traffic (checked to fail as its fault class does), then the `rules`
    model's diagnosis of the function over MCP."""
    run = run_scenario(sandbox, runtime, steps, SCENARIOS[name])
    check_run(run, EXPECTED[name])
    function = run.scenario.function
    settings = SupervisorSettings(mcp_server_url=f"{url}/sse", supervisor_model="rules")
    incident = {"AlarmName": f"{function}-errors", "NewStateValue": "ALARM"}
    key = sandbox.world.mcp_api_key
    result = await run_agent(incident, "inc-e2e", function, settings=settings, api_key=key)
    assert result.diagnosis is not None, result.stop_reason
    return run, result, result.diagnosis


def _assert_checked(diagnosis: Diagnosis) -> None:
    """Every pointer and every entry that cites one checked out, with no refinement needed."""
    verification = diagnosis.verification
    assert verification.passed, verification
    assert verification.refinement_turns == 0
    assert not verification.unsupported_fault_types
    cited = sorted({i for _, indices in diagnosis.citations() for i in indices})
    assert cited  # every diagnosis here cites evidence
    assert [verification.pointers[i].verified for i in cited] == [True] * len(cited)


def _apply(sandbox: Sandbox, command: str, service: str, operation: str) -> dict[str, Any]:
    """Read the command with the stage's own parser (chaos/drill/apply_command.py, which shares no code with
    the diagnosis's command builder), allowing only ``service``'s ``operation``, and run it as the operator,
    as a person approving the step would; its parameters."""
    parsed = parse_command(command, {f"{service} {xform_name(operation, '-')}"})
    assert (parsed.service, parsed.operation) == (service, operation), command
    run_command(sandbox.session(names.OPERATOR), parsed)
    return parsed.params


def _restored_exactly(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, steps: RestoreSteps, run: Run, before: dict[str, Any]
) -> None:
    """The scenario's restore gives back the world it found, and the function works again."""
    steps.restore()
    assert world_state(sandbox) == before
    function = run.scenario.function
    after = runtime.invoke(function, healthy_event(function), run.broken.qualifier)
    assert after.status == "succeeded", after.error


@pytest.fixture
def before(sandbox: Sandbox) -> dict[str, Any]:
    """The world as the test found it."""
    return world_state(sandbox)


@pytest.mark.parametrize("name", FAULTY)
async def test_each_fault_class_is_diagnosed_with_its_trigger_and_a_working_fix(
    name: str,
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    scenario = SCENARIOS[name]
    run, result, diagnosis = await _break_and_diagnose(sandbox, mcp_server_url, runtime, steps, name)
    expected = FAULT.get(scenario.fault, scenario.fault)
    assert diagnosis.fault_types == [expected], diagnosis.root_cause
    _assert_checked(diagnosis)
    assert diagnosis.confidence >= 0.8
    assert {call.tool for call in result.tool_calls if call.turn == 1} >= {
        "get_recent_changes",
        "get_function_metrics",
    }  # every tool in the first turn

    support = next(s for s in diagnosis.verification.support if s.fault_type == expected)
    assert support.supported_by
    assert all(diagnosis.evidence[i].tool != "get_recent_logs" for i in support.supported_by)

    ruled_out = {entry.fault_type for entry in diagnosis.ruled_out}
    assert len(ruled_out) >= 2  # throttled requests never run: nothing shows their duration or memory
    assert expected not in ruled_out

    kinds = [entry.kind for entry in diagnosis.timeline]
    trigger = diagnosis.trigger  # the deleted table too: the role grants it by name, so it is searched
    assert trigger is not None
    assert trigger.event_name == run.broken.trigger
    assert trigger.identity == OPERATOR_ARN
    assert trigger.time >= run.started.isoformat()[:19]
    assert kinds.index("change") < kinds.index("first_failure")
    assert f"{OPERATOR_ARN} called {operation_of(trigger.event_name)}" in diagnosis.root_cause  # names it

    if name == "permission_attached_deny":  # the Deny is described as a Deny, not as a scoped Allow
        assert "a Deny statement of data-processor-role covers it" in diagnosis.root_cause
        attached = [p for p in diagnosis.evidence if p.field.startswith("attached_policies.")]
        assert attached
        assert all(p.interpretation.startswith("Denies GetObject") for p in attached), attached

    step = diagnosis.remediation_plan[0]
    assert step.requires_approval
    if name in COMMAND:
        assert step.command is not None
        want_service, want_operation, want_params = COMMAND[name]
        params = _apply(sandbox, step.command, want_service, want_operation)
        assert params.items() >= want_params.items(), step.command
        fixed = runtime.invoke(scenario.function, healthy_event(scenario.function), run.broken.qualifier)
        assert fixed.status == "succeeded", f"after `{step.command}`: {fixed.error}"
    else:
        assert step.command is None
    _restored_exactly(sandbox, runtime, steps, run, before)


@pytest.mark.parametrize("name", HEALTHY)
async def test_no_fault_is_unknown_and_planted_text_changes_nothing(
    name: str,
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    run, result, diagnosis = await _break_and_diagnose(sandbox, mcp_server_url, runtime, steps, name)
    assert diagnosis.fault_types == ["unknown"], diagnosis.root_cause
    assert diagnosis.remediation_plan == []
    assert diagnosis.confidence <= 0.2
    _assert_checked(diagnosis)
    assert "throttling" in {entry.fault_type for entry in diagnosis.ruled_out}
    if name == "planted_passrole":
        shown = [str(m.content) for m in result.messages if getattr(m, "name", None) == "get_recent_logs"]
        assert any("iam:PassRole" in text for text in shown)  # the model saw the planted line ...
        assert "PassRole" not in diagnosis.model_dump_json()  # ... and it changed nothing
    _restored_exactly(sandbox, runtime, steps, run, before)
