"""One causal timeline (issue 26), end to end: situations staged in the sandbox by the operator's own API
calls (tests/timeline_scenarios.py: healthy traffic first, then the change, then the failures, each
checked), diagnosed by the `rules` model over MCP (SSE to the shipped server). Each test asserts the exact
fault set, the trigger (the change after the last success and before the first failure: its CloudTrail
event, time and identity), a fault already undone as resolved rather than current, and the remediation:
a command that, read by the stage's own parser (chaos/drill/apply_command.py, which shares no code with the
diagnosis's command builder) and applied as the operator, makes the function succeed again, or, where no
command can be right, none and the exact remediation gap that says why. Every restore gives back the world
it found.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from chaos.drill.apply_command import parse_command, run_command
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox, running_sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from supervisor.agent.run import run_agent
from supervisor.schemas import Diagnosis
from supervisor.settings import SupervisorSettings
from tests.conftest import shipped_mcp_server
from tests.fault_scenarios import OPERATOR_ARN, RestoreSteps
from tests.timeline_scenarios import NEW_ROLE, SITUATIONS, Change, Staged, world

VERSIONED = re.compile(r"\d{8}(v\d+)?$")  # CloudTrail's API-version suffix of Lambda event names


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A sandbox of this module's own: its change history holds only these situations' changes."""
    with running_sandbox(tmp_path_factory.mktemp("timeline-sandbox"), cloudtrail_delay=0) as own:
        yield own


@pytest.fixture(scope="module")
def mcp_server_url(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shipped_mcp_server(sandbox, tmp_path_factory.mktemp("timeline-mcp")) as url:
        yield url


@pytest.fixture
def before(sandbox: Sandbox) -> dict[str, Any]:
    return world(sandbox)


class Case:
    """One situation staged and diagnosed, with what the assertions need."""

    def __init__(
        self, sandbox: Sandbox, runtime: LocalLambdaRuntime, staged: Staged, diagnosis: Diagnosis
    ) -> None:
        self.sandbox, self.runtime, self.staged, self.diagnosis = sandbox, runtime, staged, diagnosis

    @property
    def why(self) -> str:
        """The diagnosis in short, for assertion messages: what the brain concluded."""
        d = self.diagnosis
        trigger = f"{d.trigger.event_name} at {d.trigger.time} by {d.trigger.identity}" if d.trigger else None
        return (
            f"\nfault_types={d.fault_types}\ntrigger={trigger}\nroot_cause={d.root_cause}\n"
            f"commands={[s.command for s in d.remediation_plan]}\n"
            f"gaps={[(g.source, g.reason) for g in d.gaps]}\nresolved={self.resolved()}\n"
            f"failed checks={[c for c in d.verification.entries if not c.verified]}"
        )

    def resolved(self) -> Any:
        """``Diagnosis.resolved`` as JSON (None while the field does not exist)."""
        return self.diagnosis.model_dump(mode="json").get("resolved")

    def assert_trigger(self, change: Change) -> None:
        """The trigger is this change, by the operator, named in the root cause and on the timeline before
        the first failure."""
        trigger = self.diagnosis.trigger
        assert trigger is not None, self.why
        assert trigger.event_name == change.event_name, self.why
        assert datetime.fromisoformat(trigger.time) == change.time, self.why
        assert trigger.identity == OPERATOR_ARN, self.why
        called = f"{OPERATOR_ARN} called {VERSIONED.sub('', trigger.event_name)}"  # e.g. called UpdateAlias
        assert called in self.diagnosis.root_cause, self.why
        timeline = self.diagnosis.timeline
        changes = [datetime.fromisoformat(e.time) for e in timeline if e.kind == "change"]
        failures = [
            datetime.fromisoformat(e.time) for e in timeline if e.kind in ("first_failure", "failure")
        ]
        assert change.time in changes, self.why
        assert any(failure > change.time for failure in failures), self.why
        assert "change history" not in [gap.source for gap in self.diagnosis.gaps], self.why  # no "no change"

    def remediation_gaps(self) -> list[str]:
        return [gap.reason for gap in self.diagnosis.gaps if gap.source == "remediation"]

    def assert_no_command(self, *reasons: str) -> None:
        """No step carries a command, and there is one remediation gap, giving exactly one of ``reasons``
        (several when it may quote any of the failing requests)."""
        commands = [step.command for step in self.diagnosis.remediation_plan]
        assert commands, self.why
        assert commands == [None] * len(commands), self.why
        assert self.remediation_gaps() in [[reason] for reason in reasons], self.why

    def apply_first_command(self, allowed: str, operation: str, params: dict[str, Any]) -> None:
        """The first step's command is this call (``allowed``: the CLI's ``"service operation"``, the only
        one the drill's own parser may read here, with exactly these parameters); run as the operator (as
        a person approving the step would), it makes the function succeed."""
        step = self.diagnosis.remediation_plan[0]
        assert step.requires_approval, self.why
        assert step.command is not None, self.why
        command = parse_command(step.command, {allowed})
        assert (command.service, command.operation, command.params) == (
            allowed.split()[0],
            operation,
            params,
        ), self.why
        run_command(self.sandbox.session(names.OPERATOR), command)
        fixed = self.runtime.invoke(self.staged.function, self.staged.probe, self.staged.qualifier)
        assert fixed.status == "succeeded", f"after `{step.command}`: {fixed.error}"


def _environment_not_recorded(case: Case, variable: str) -> str:
    """The remediation gap of an environment change: the earlier values are nowhere to be read."""
    change = case.staged.change("UpdateFunctionConfiguration20150331v2")
    lambda_ = case.sandbox.session(names.OPERATOR).client("lambda")
    now = lambda_.get_function_configuration(FunctionName=case.staged.function)["Environment"]["Variables"]
    assert variable in now, now
    return (
        f"the environment values before the change at {change.time.isoformat()} are not recorded (CloudTrail "
        f"hides them; variables set now: {', '.join(now)}): no command can restore them"
    )


async def _case(
    name: str, sandbox: Sandbox, url: str, runtime: LocalLambdaRuntime, steps: RestoreSteps
) -> Case:
    """The situation staged, then diagnosed by the `rules` model over MCP; every claim checked out with no
    refinement turn."""
    staged = SITUATIONS[name](sandbox, runtime, steps)
    settings = SupervisorSettings(mcp_server_url=f"{url}/sse", supervisor_model="rules")
    incident = {"AlarmName": f"{staged.function}-errors", "NewStateValue": "ALARM"}
    result = await run_agent(
        incident, f"inc-{name}", staged.function, settings=settings, api_key=sandbox.world.mcp_api_key
    )
    assert result.diagnosis is not None, result.stop_reason
    case = Case(sandbox, runtime, staged, result.diagnosis)
    verification = case.diagnosis.verification
    assert verification.passed, case.why
    assert verification.refinement_turns == 0, case.why
    assert not verification.unsupported_fault_types, case.why
    cited = sorted({i for _, indices in case.diagnosis.citations() for i in indices})
    assert cited, case.why  # every situation here is diagnosed from evidence
    assert [verification.pointers[i].verified for i in cited] == [True] * len(cited), case.why
    return case


def _restored_exactly(case: Case, steps: RestoreSteps, before: dict[str, Any]) -> None:
    """The restore gives back the world it found, and a function of the world works again."""
    steps.restore()
    assert world(case.sandbox) == before
    staged = case.staged
    if staged.function in names.FUNCTIONS:
        after = case.runtime.invoke(staged.function, staged.probe, staged.qualifier)
        assert after.status == "succeeded", after.error


@pytest.mark.parametrize(("name", "fault"), [("deploy_oom", "out_of_memory"), ("deploy_timeout", "timeout")])
async def test_a_deploy_that_breaks_the_function_is_the_trigger_and_is_rolled_back(
    name: str,
    fault: str,
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await _case(name, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == [fault], case.why
    case.assert_trigger(case.staged.change("UpdateAlias20150331"))
    assert case.resolved() == [], case.why
    previous = case.staged.detail["from_version"]
    case.apply_first_command(
        "lambda update-alias",
        "UpdateAlias",
        {"FunctionName": names.ORDERS_FUNCTION, "Name": names.ORDERS_ALIAS, "FunctionVersion": previous},
    )
    _restored_exactly(case, steps, before)


async def test_an_environment_change_on_latest_is_the_trigger_and_its_fix_a_named_gap(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """report-builder has no published version: nothing holds REPORT_MB's earlier value, which CloudTrail
    never shows. No command (not even more memory: the change, not the size, is the cause)."""
    case = await _case("env_heavier", sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["out_of_memory"], case.why
    case.assert_trigger(case.staged.change("UpdateFunctionConfiguration20150331v2"))
    case.assert_no_command(_environment_not_recorded(case, "REPORT_MB"))
    assert case.resolved() == [], case.why
    _restored_exactly(case, steps, before)


async def test_a_wrong_configuration_value_is_blamed_on_its_change_not_on_an_older_iam_change(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """The IAM change precedes the last success by more than IAM's allowance: it cannot be the cause."""
    case = await _case("wrong_config_value", sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["configuration_error"], case.why  # not permission_loss
    case.assert_trigger(case.staged.change("UpdateFunctionConfiguration20150331v2"))
    case.assert_no_command(_environment_not_recorded(case, "INPUT_BUCKET"))
    assert case.resolved() == [], case.why
    _restored_exactly(case, steps, before)


async def test_a_fault_undone_is_resolved_and_the_new_one_current(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await _case("resolved_then_new", sandbox, mcp_server_url, runtime, steps)
    staged = case.staged
    assert case.diagnosis.fault_types == ["network_block"], case.why
    case.assert_trigger(staged.change("RevokeSecurityGroupEgress"))
    resolved = case.resolved()
    assert isinstance(resolved, list), case.why
    assert len(resolved) == 1, case.why
    entry = resolved[0]
    assert entry["fault_type"] == "throttling", case.why
    for side, change in (
        ("caused_by", staged.change("PutFunctionConcurrency20171031")),
        ("undone_by", staged.change("DeleteFunctionConcurrency20171031")),
    ):
        assert entry[side]["event_name"] == change.event_name, case.why
        assert datetime.fromisoformat(entry[side]["time"]) == change.time, case.why
        assert entry[side]["evidence"], case.why
    case.apply_first_command(
        "ec2 authorize-security-group-egress",
        "AuthorizeSecurityGroupEgress",
        {"GroupId": staged.detail["security_group"], "IpPermissions": [staged.detail["revoked_egress"]]},
    )
    _restored_exactly(case, steps, before)


async def test_bad_input_amid_successes_has_no_trigger_and_no_command(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await _case("bad_input", sandbox, mcp_server_url, runtime, steps)
    diagnosis = case.diagnosis
    assert diagnosis.fault_types == ["bad_input"], case.why
    assert diagnosis.trigger is None, case.why
    assert "NoSuchKey" in diagnosis.root_cause, case  # the failing requests' own error ...
    decisive = [
        p for p in diagnosis.evidence if p.tool == "get_recent_logs" and "(NoSuchKey) when calling" in p.value
    ]
    assert decisive, case  # ... pointed at
    failed = [i.request_id for i in case.staged.phase("mixed").invocations if i.status == "failed"]
    assert len(failed) == 3, case.why
    case.assert_no_command(
        *(
            f"No command can fix this: {names.FUNCTION_NAME} fails on what its callers send it (NoSuchKey "
            f"in request {request_id}), while the same version and configuration succeed on other input. "
            "Look at the caller that sent it (the event source, client or job that builds the event) and "
            "the object or record the event names."
            for request_id in failed
        )
    )
    assert case.resolved() == [], case.why
    _restored_exactly(case, steps, before)


async def test_a_role_that_never_granted_the_call_is_a_configuration_error_naming_what_is_missing(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """S3's AccessDenied (as the sandbox, like S3 across accounts, answers it) names neither the action's
    service nor the object: the finding names the operation and the role, and the statement to add is a
    named gap rather than a guessed, broader grant."""
    case = await _case("never_granted", sandbox, mcp_server_url, runtime, steps)
    diagnosis = case.diagnosis
    assert diagnosis.fault_types == ["configuration_error"], case.why
    case.assert_trigger(case.staged.change("CreateFunction20150331"))
    assert f"calls GetObject, which its role {NEW_ROLE} does not grant" in diagnosis.root_cause, case.why
    assert "since it was created; the role did not change" in diagnosis.root_cause, case.why
    assert NEW_ROLE in diagnosis.affected_resources, case.why
    assert case.resolved() == [], case.why
    case.assert_no_command(
        "the denial of GetObject names neither its service nor its resource: the statement the role lacks "
        "cannot be written from the evidence"
    )
    _restored_exactly(case, steps, before)
