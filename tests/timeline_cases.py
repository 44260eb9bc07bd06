"""A situation staged in the sandbox (tests/timeline_scenarios.py, tests/misses_scenarios.py), diagnosed by
the `rules` model over MCP, and what the end-to-end tests assert of the diagnosis: the trigger, the
remediation command applied as a person approving it would, the named gaps, and the world restored."""

from __future__ import annotations

import json
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
from tests.fault_scenarios import OPERATOR_ARN, RestoreSteps, cloudtrail_reader
from tests.timeline_scenarios import Change, Situation, Staged, world

# Which resource, not what is set: a function and its alias, an API's integration.
IDENTIFIERS = frozenset(
    {"functionname", "name", "qualifier", "restapiid", "resourceid", "httpmethod", "apiid", "integrationid"}
)
VERSIONED = re.compile(r"\d{8}(v\d+)?$")  # CloudTrail's API-version suffix of Lambda event names


def own_world(prefix: str, time_scale: float = 1.0) -> tuple[Any, Any, Any]:
    """The fixtures of a module of staged situations: a sandbox of its own (its change history holds only
    its situations' changes), the shipped MCP server on it (SSE), and the world before each test."""

    @pytest.fixture(scope="module")
    def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
        state = tmp_path_factory.mktemp(f"{prefix}-sandbox")
        with running_sandbox(state, time_scale=time_scale, cloudtrail_delay=0) as own:
            yield own

    @pytest.fixture(scope="module")
    def mcp_server_url(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
        with shipped_mcp_server(sandbox, tmp_path_factory.mktemp(f"{prefix}-mcp")) as url:
            yield url

    @pytest.fixture
    def before(sandbox: Sandbox) -> dict[str, Any]:
        return world(sandbox)

    return sandbox, mcp_server_url, before


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
        v = d.verification
        trigger = f"{d.trigger.event_name} at {d.trigger.time} by {d.trigger.identity}" if d.trigger else None
        return (
            f"\nfault_types={d.fault_types}\ntrigger={trigger}\nroot_cause={d.root_cause}\n"
            f"commands={[s.command for s in d.remediation_plan]}\n"
            f"gaps={[(g.source, g.reason) for g in d.gaps]}\nresolved={self.resolved()}\n"
            f"failed pointers={[c for c in v.pointers if not c.verified]}\n"
            f"failed checks={[c for c in v.entries if not c.verified]}\n"
            f"unsupported={v.unsupported_fault_types} support={v.support}"
        )

    def resolved(self) -> Any:
        """``Diagnosis.resolved`` as JSON (None while the field does not exist)."""
        return self.diagnosis.model_dump(mode="json").get("resolved")

    def assert_trigger(self, change: Change, failed: bool = True) -> None:
        """The trigger is this change, by the operator, named in the root cause and on the timeline before
        the first failure (``failed=False``: the function never failed, as when Lambda cannot poll its
        queue; no failure is on the timeline and no other change is a candidate)."""
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
        if failed:
            assert any(failure > change.time for failure in failures), self.why
        else:
            assert (failures, changes) == ([], [change.time]), self.why
        assert "change history" not in [gap.source for gap in self.diagnosis.gaps], self.why  # no "no change"

    def assert_no_step_sets_what_the_trigger_set(self) -> None:
        """No command of the trigger's own operation sets a parameter to the value the trigger's request set
        (CloudTrail's record, read here as the operator): applied, it would break the function again."""
        trigger = self.diagnosis.trigger
        if trigger is None:
            return
        change = next(c for c in self.staged.changes if c.time == datetime.fromisoformat(trigger.time))
        cloudtrail = cloudtrail_reader(self.sandbox, names.OPERATOR, change.region)
        lookup = [{"AttributeKey": "EventId", "AttributeValue": change.event_id}]
        record = json.loads(cloudtrail.lookup_events(LookupAttributes=lookup)["Events"][0]["CloudTrailEvent"])
        history = {key.lower(): value for key, value in (record.get("requestParameters") or {}).items()}
        for step in self.diagnosis.remediation_plan:
            words = (step.command or "").split()
            if len(words) < 3:
                continue
            command = parse_command(step.command or "", {f"{words[1]} {words[2]}"})
            if command.operation != VERSIONED.sub("", change.event_name):
                continue
            for key, value in command.params.items():
                if key.lower() not in IDENTIFIERS:
                    assert history.get(key.lower(), ...) != value, f"{step.command}: {key}{self.why}"

    def assert_input_gap(self, error: str, phase: str = "mixed") -> None:
        """No command, and the bad-input gap naming ``error`` in one of the phase's failed requests."""
        failed = [i.request_id for i in self.staged.phase(phase).invocations if i.status == "failed"]
        assert failed, self.why
        self.assert_no_command(
            *(
                f"No command can fix this: {self.staged.function} fails on what its callers send it ({error} "
                f"in request {request_id}), while the same version and configuration succeed on other input. "
                "Look at the caller that sent it (the event source, client or job that builds the event) and "
                "the object or record the event names."
                for request_id in failed
            )
        )

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
        failed = self.failing()
        assert failed is None, f"after `{step.command}`: {failed}"

    def failing(self) -> str | None:
        """What fails when the function is used now (the situation's own check, else its probe invoked),
        None when it works."""
        staged = self.staged
        if staged.works is not None:
            return staged.works()
        invoked = self.runtime.invoke(staged.function, staged.probe, staged.qualifier)
        return None if invoked.status == "succeeded" else f"{invoked.status}: {invoked.error}"


def environment_not_recorded(case: Case, variable: str) -> str:
    """The remediation gap of an environment change: the earlier values are nowhere to be read."""
    change = case.staged.change("UpdateFunctionConfiguration20150331v2")
    lambda_ = case.sandbox.session(names.OPERATOR).client("lambda")
    now = lambda_.get_function_configuration(FunctionName=case.staged.function)["Environment"]["Variables"]
    assert variable in now, now
    return (
        f"the environment values before the change at {change.time.isoformat()} are not recorded (CloudTrail "
        f"hides them; variables set now: {', '.join(now)}): no command can restore them"
    )


async def diagnosed(
    situation: Situation, sandbox: Sandbox, url: str, runtime: LocalLambdaRuntime, steps: RestoreSteps
) -> Case:
    """The situation staged, then diagnosed by the `rules` model over MCP; every claim checked out with no
    refinement turn."""
    staged = situation(sandbox, runtime, steps)
    settings = SupervisorSettings(mcp_server_url=f"{url}/sse", supervisor_model="rules")
    incident = {"AlarmName": f"{staged.function}-errors", "NewStateValue": "ALARM"}
    result = await run_agent(
        incident,
        f"inc-{situation.__name__}",
        staged.function,
        settings=settings,
        api_key=sandbox.world.mcp_api_key,
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
    case.assert_no_step_sets_what_the_trigger_set()
    return case


def restored_exactly(case: Case, steps: RestoreSteps, before: dict[str, Any]) -> None:
    """The restore gives back the world it found, and a function of the world works again."""
    steps.restore()
    assert world(case.sandbox) == before
    if case.staged.function in names.FUNCTIONS:
        assert case.failing() is None
