"""The remediation loop on the sandbox, from a final diagnosis to its end: planned by the supervisor, decided
by a person in incident-approvals, applied by the executor, verified through the MCP server's logs tool
from the function's own invocations, and undone when recovery is not shown. The world is read with the
operator's own reads, never with the executor's."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from aws_lambda_powertools import Logger
from mcp import Client
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from console.settings import ConsoleSettings
from executor.approvals import ApprovalRefused, Approvals, Approver
from executor.recovery import Verdict, check_invocations
from executor.run import AUTOMATIC, Executor
from executor.settings import ExecutorSettings
from mcp_server.aws import AwsClients
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from supervisor.agent.providers import McpToolProvider
from supervisor.diagnosis.cli_commands import build_command
from supervisor.incident.lifecycle import EXECUTION, PLAN, PLAN_REVIEW
from supervisor.incident.signals import Signal
from supervisor.incident.store import IncidentStateError, IncidentStore, Item
from supervisor.remediation.plan import ApiCall, Plan, PlanStep, Recovery, RecoveryKind, plan_digest
from supervisor.remediation.planning import PlanningLimits, Remediation, plan_incident, stored_plan
from supervisor.settings import SupervisorSettings
from tests.test_incident_history import _history
from tests.test_remediation_plan import _diagnosis, recorded
from watchdog.settings import WatchdogSettings

PERSON = "arn:aws:iam::123456789012:role/on-call-approver"
GROUP = "arn:aws:iam::123456789012:group/ops"  # a group is no principal: it cannot sign a request
FUNCTION = names.FUNCTION_NAME
UNTHROTTLE = ("DeleteFunctionConcurrency", {"FunctionName": FUNCTION})
TIMEOUT_9 = ("UpdateFunctionConfiguration", {"FunctionName": FUNCTION, "Timeout": 9})


@pytest.fixture
def approvals(sandbox: Sandbox, incidents: IncidentStore) -> Approvals:
    """The test's incident-approvals table (made with its incident tables), written as the operator (a
    person)."""
    table = incidents.state_table.replace("incident-state-", "incident-approvals-")
    return Approvals(sandbox.session(names.OPERATOR).client("dynamodb"), table)


@pytest.fixture
def throttled(operator: boto3.Session) -> Iterator[dict[str, Any]]:
    """The function throttled (reserved concurrency 0); its timeout and reservation put back after."""
    lambda_ = operator.client("lambda")
    timeout = lambda_.get_function_configuration(FunctionName=FUNCTION)["Timeout"]
    lambda_.put_function_concurrency(FunctionName=FUNCTION, ReservedConcurrentExecutions=0)
    yield {"Timeout": timeout, "Reserved": 0}
    lambda_.update_function_configuration(FunctionName=FUNCTION, Timeout=timeout)
    lambda_.delete_function_concurrency(FunctionName=FUNCTION)


def _world(operator: boto3.Session) -> dict[str, Any]:
    lambda_ = operator.client("lambda")
    return {
        "Timeout": lambda_.get_function_configuration(FunctionName=FUNCTION)["Timeout"],
        "Reserved": lambda_.get_function_concurrency(FunctionName=FUNCTION).get(
            "ReservedConcurrentExecutions"
        ),
    }


def _planned(
    sandbox: Sandbox, store: IncidentStore, *calls: tuple[str, dict[str, Any]], plan: bool = True
) -> Item:
    """A final DIAGNOSED incident whose diagnosis names ``calls``, planned by the supervisor (unless not
    ``plan``)."""
    signal = Signal(str(uuid.uuid4()), "direct", FUNCTION, "Errors", "failing", datetime.now(UTC))
    item, _ = store.claim(signal, window_seconds=0)
    incident_id = str(item["incident_id"])
    store.transition(incident_id, "RECEIVED", "INVESTIGATING")
    diagnosed = store.transition(incident_id, "INVESTIGATING", "DIAGNOSED", headline={"final": True})
    if not plan:
        return diagnosed
    commands = [build_command("lambda", op, params, region=sandbox.region) for op, params in calls]
    limits = PlanningLimits(recovery_seconds=20, approval_seconds=3600)
    read = sandbox.session(names.SUPERVISOR).client
    history = [recorded(*(params for _, params in calls))]  # each value known from a change before
    return plan_incident(store, diagnosed, _diagnosis(*commands), read=read, limits=limits, results=history)


def _executor(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, store: IncidentStore, approvals: Approvals, **changes: Any
) -> Executor:
    """The executor as its own sandbox identity, verifying through an MCP server
    on the sandbox; before each check the workload sends the function one request, as traffic would."""
    settings = ServerSettings()
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))

    async def check(plan: Plan, since: datetime) -> Verdict:
        async with Client(server) as client:
            provider = McpToolProvider(client.session)
            return await check_invocations(provider.call_tool, plan, since, datetime.now(UTC))

    def verify(plan: Plan, since: datetime) -> Verdict:
        runtime.invoke(FUNCTION, names.input_event())
        return asyncio.run(check(plan, since))

    executor = Executor(
        store=store,
        approvals=approvals,
        approver=Approver(frozenset({PERSON})),
        read=sandbox.session(names.SUPERVISOR).client,
        write=sandbox.session(names.EXECUTOR).client,
        verify=verify,
        poll_seconds=0.5,
    )
    return replace(executor, **changes)


def _approve(store: IncidentStore, approvals: Approvals, incident_id: str, who: str = PERSON) -> Item:
    incident = store.get(incident_id)
    assert incident is not None
    return approvals.decide(incident, str(incident["plan_digest"]), who, "APPROVED")


def _rewrite_plan(store: IncidentStore, incident_id: str, operation: str) -> None:
    """What a compromised supervisor could do: change the stored plan's call and the digest the incident
    awaits approval for, together."""
    context = store.get_context(incident_id) or {}
    document = json.loads(context[PLAN]["S"])
    document["steps"][0]["call"]["operation"] = operation
    store.update_context(incident_id, {PLAN: json.dumps(document)})
    store.dynamodb.update_item(
        TableName=store.state_table,
        Key={"incident_id": {"S": incident_id}},
        UpdateExpression="SET plan_digest = :d",
        ExpressionAttributeValues={":d": {"S": plan_digest(document)}},
    )


def _execution(store: IncidentStore, incident_id: str) -> dict[str, Any]:
    context = store.get_context(incident_id) or {}
    return dict(json.loads(context[EXECUTION]["S"]))


def test_an_approved_fix_is_applied_verified_by_the_functions_own_invocations_and_ends_remediated(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    planned = _planned(sandbox, incidents, UNTHROTTLE)
    incident_id = str(planned["incident_id"])
    assert planned["status"] == "AWAITING_APPROVAL"
    found = stored_plan(incidents, incident_id)
    assert found is not None
    assert found[1] == planned["plan_digest"] == found[0].digest
    executor = _executor(sandbox, runtime, incidents, approvals)
    assert executor.run(incident_id, "run-0") == "waiting: the plan awaits a person's approval"
    assert _world(operator) == throttled  # nothing applied without a person

    _approve(incidents, approvals, incident_id)
    outcome = executor.run(incident_id, "run-1")

    assert outcome.startswith("REMEDIATED: recovered: "), outcome
    assert _world(operator) == throttled | {"Reserved": None}
    incident = incidents.get(incident_id)
    assert incident is not None
    assert incident["status"] == "REMEDIATED"
    execution = _execution(incidents, incident_id)
    assert execution["approval"]["approved_by"] == PERSON
    assert execution["approval"]["redeemed_by"] == "run-1"
    [call] = execution["calls"]
    assert call["call"]["operation"] == "DeleteFunctionConcurrency"
    assert call["request_id"]
    assert call["before"] == {"ReservedConcurrentExecutions": 0}
    assert call["after"] == {"ReservedConcurrentExecutions": None}
    # its history: the fix, who approved it, and the time from the alarm to the recovery shown
    [past] = _history(sandbox, incidents, lambda_name=FUNCTION)["incidents"]
    assert (past["incident_id"], past["status"], past["resolved_by"]) == (incident_id, "REMEDIATED", PERSON)
    assert past["fix_verdict"] == "held"
    unthrottle = {"service": "lambda", "operation": "DeleteFunctionConcurrency", "parameters": UNTHROTTLE[1]}
    assert past["fix"] == [unthrottle]
    alarm = datetime.fromisoformat(str(incident["observed_at"]).replace("Z", "+00:00"))
    assert 0 < past["seconds_to_recover"] <= (datetime.now(UTC) - alarm).total_seconds()
    # replayed: the incident is done and the approval used; nothing runs twice
    assert executor.run(incident_id, "run-2") == "nothing to do: the incident is REMEDIATED"
    with pytest.raises(ApprovalRefused, match=r"it was used at .*an approval is good for one run"):
        approvals.redeem(incident_id, str(planned["plan_digest"]), "run-3")


def test_a_fix_that_shows_no_recovery_in_its_window_is_undone_and_ends_not_remediated(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    planned = _planned(sandbox, incidents, TIMEOUT_9)  # the timeout is not why it fails
    incident_id = str(planned["incident_id"])
    _approve(incidents, approvals, incident_id)
    outcome = _executor(sandbox, runtime, incidents, approvals).run(incident_id, "run-1")
    assert outcome.startswith("NOT_REMEDIATED: the fix did not help: no recovery within"), outcome
    assert "1 applied step(s) undone, the world read back as before" in outcome
    assert _world(operator) == throttled
    execution = _execution(incidents, incident_id)
    assert [c["call"]["params"]["Timeout"] for c in execution["calls"]] == [9]
    # Throttled, it never runs: no report in its logs, no invocation in its metrics, to the last check.
    assert all("0 of 2 invocations in the function's metrics" in line for line in execution["verification"])
    assert "(0 of 2 invocations in the function's metrics from " in outcome
    [past] = _history(sandbox, incidents, lambda_name=FUNCTION)["incidents"]  # it did not help, and says so
    assert (past["status"], past["fix_verdict"], past["seconds_to_recover"]) == (
        "NOT_REMEDIATED",
        "did_not_help",
        None,
    )


@pytest.mark.parametrize(
    "refusal", ["not an approver", "revoked", "tampered", "expired", "off the allowlist"]
)
def test_an_approval_that_does_not_hold_applies_nothing(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
    refusal: str,
) -> None:
    planned = _planned(sandbox, incidents, UNTHROTTLE)
    incident_id, digest = str(planned["incident_id"]), str(planned["plan_digest"])
    executor = _executor(sandbox, runtime, incidents, approvals)
    _approve(
        incidents,
        approvals,
        incident_id,
        "arn:aws:iam::123456789012:role/supervisor" if refusal == "not an approver" else PERSON,
    )
    if refusal == "revoked":
        approvals.revoke(incident_id, digest, PERSON)
    elif refusal == "tampered":  # the stored plan changed after it was approved
        context = incidents.get_context(incident_id) or {}
        document = json.loads(context[PLAN]["S"])
        document["steps"][0]["call"]["params"]["FunctionName"] = "another-function"
        incidents.update_context(incident_id, {PLAN: json.dumps(document)})
    elif refusal == "off the allowlist":  # plan and digest rewritten together, then approved as shown
        _rewrite_plan(incidents, incident_id, "DeleteFunction")
        _approve(incidents, approvals, incident_id)
    elif refusal == "expired":
        later = datetime.now(UTC) + timedelta(hours=2)
        executor = replace(executor, approvals=Approvals(approvals.dynamodb, approvals.table, lambda: later))
    expected = {
        "not an approver": "refused: arn:aws:iam::123456789012:role/supervisor is not an approver",
        "revoked": f"refused: cannot use the approval of {incident_id}'s plan {digest}: {PERSON} revoked it",
        "tampered": "NOT_REMEDIATED: refused: the stored plan's digest sha256:",
        "expired": f"refused: cannot use the approval of {incident_id}'s plan {digest}: it expired at",
        "off the allowlist": "refused: the plan holds a call off the allowlist: nothing of it is applied",
    }[refusal]
    assert executor.run(incident_id, "run-1").startswith(expected)
    assert _world(operator) == throttled
    incident = incidents.get(incident_id)
    assert incident is not None
    # A changed plan ends the incident (people are told); any other refusal leaves it to a person.
    assert incident["status"] == ("NOT_REMEDIATED" if refusal == "tampered" else "AWAITING_APPROVAL")


def test_a_rejected_plan_ends_rejected_and_a_decision_is_made_once(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    planned = _planned(sandbox, incidents, UNTHROTTLE)
    incident_id, digest = str(planned["incident_id"]), str(planned["plan_digest"])
    approvals.decide(planned, digest, PERSON, "REJECTED")
    with pytest.raises(ApprovalRefused, match=f"{PERSON} already decided \\(REJECTED\\)"):
        approvals.decide(planned, digest, PERSON, "APPROVED")
    with pytest.raises(ApprovalRefused, match="is not the plan awaiting approval"):
        approvals.decide(planned, "sha256:" + "0" * 64, PERSON, "APPROVED")
    outcome = _executor(sandbox, runtime, incidents, approvals).run(incident_id, "run-1")
    assert outcome.startswith(f"REJECTED: rejected by {PERSON}")
    assert _world(operator) == throttled


def test_low_risk_applies_without_a_person_only_when_the_setting_says_so(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    planned = _planned(sandbox, incidents, UNTHROTTLE)
    incident_id = str(planned["incident_id"])
    high_only = _executor(sandbox, runtime, incidents, approvals, auto_apply=frozenset({"high"}))
    assert high_only.run(incident_id, "run-0").startswith("waiting")
    low = replace(high_only, auto_apply=frozenset({"low"}))
    assert low.run(incident_id, "run-1").startswith("REMEDIATED")
    assert _execution(incidents, incident_id)["approval"]["approved_by"] == AUTOMATIC
    assert _world(operator)["Reserved"] is None


def test_a_world_that_moved_before_the_approval_voids_the_plan_and_nothing_is_applied(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    planned = _planned(sandbox, incidents, UNTHROTTLE)
    incident_id = str(planned["incident_id"])
    operator.client("lambda").put_function_concurrency(FunctionName=FUNCTION, ReservedConcurrentExecutions=3)
    _approve(incidents, approvals, incident_id)
    outcome = _executor(sandbox, runtime, incidents, approvals).run(incident_id, "run-1")
    assert outcome.startswith("NOT_REMEDIATED: not applied: step 1: the world moved since the plan")
    assert outcome.endswith("; nothing")
    assert _world(operator) == throttled | {"Reserved": 3}  # the operator's change stands


def test_a_fix_someone_applied_by_hand_while_it_waited_is_verified_and_ends_remediated(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    """The operator deleted the reservation by hand while the plan waited: the executor calls nothing,
    proves recovery all the same, and says the step was found in place; there is nothing to undo."""
    planned = _planned(sandbox, incidents, UNTHROTTLE)
    incident_id = str(planned["incident_id"])
    operator.client("lambda").delete_function_concurrency(FunctionName=FUNCTION)
    _approve(incidents, approvals, incident_id)
    outcome = _executor(sandbox, runtime, incidents, approvals).run(incident_id, "run-1")
    assert outcome.startswith("REMEDIATED: recovered: "), outcome
    assert outcome.endswith("(step 1 found in place: not called)")
    execution = _execution(incidents, incident_id)
    assert (execution["calls"], execution["in_place"]) == ([], [1])
    assert _world(operator) == throttled | {"Reserved": None}


class _Died(BaseException):
    """The executor's process ending in the middle of a call (Lambda's timeout, a crash)."""


def test_a_run_that_died_mid_plan_is_undone_by_the_next_run_after_its_lease(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    planned = _planned(sandbox, incidents, TIMEOUT_9, UNTHROTTLE)
    incident_id = str(planned["incident_id"])
    _approve(incidents, approvals, incident_id)
    executor = _executor(sandbox, runtime, incidents, approvals)
    calls: list[str] = []

    def dying_writer(service: str) -> Any:
        client = sandbox.session(names.EXECUTOR).client(service)
        calls.append(service)
        if len(calls) == 2:  # the second call lands, then the process dies before it returns
            client.delete_function_concurrency(FunctionName=FUNCTION)
            raise _Died
        return client

    with pytest.raises(_Died):
        replace(executor, write=dying_writer).run(incident_id, "run-1")
    assert _world(operator) == {"Timeout": 9, "Reserved": None}
    assert executor.run(incident_id, "run-2").startswith("nothing to do: another run has had it APPLYING")
    later = datetime.now(UTC) + timedelta(minutes=16)
    late = replace(
        executor,
        store=IncidentStore(
            incidents.dynamodb, incidents.state_table, incidents.context_table, lambda: later
        ),
    )
    outcome = late.run(incident_id, "run-3")
    assert outcome.startswith("NOT_REMEDIATED: the executor's run died before it finished; 2 applied step(s)")
    assert _world(operator) == throttled


def test_a_diagnosis_with_no_command_ends_no_plan_with_why_and_a_provisional_one_is_never_planned(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    diagnosed = _planned(sandbox, incidents, plan=False)
    limits = PlanningLimits(recovery_seconds=20, approval_seconds=3600)
    read = sandbox.session(names.SUPERVISOR).client
    ended = plan_incident(incidents, diagnosed, _diagnosis(), read=read, limits=limits)
    assert (ended["status"], ended["error_reason"]) == ("NO_PLAN", "no safe plan: the diagnosis names no fix")
    provisional = _planned(sandbox, incidents, plan=False)
    provisional["final"] = False
    with pytest.raises(IncidentStateError, match="a provisional diagnosis is never planned"):
        plan_incident(incidents, provisional, _diagnosis(), read=read, limits=limits)
    assert _status_of(incidents, str(provisional["incident_id"])) == "DIAGNOSED"


def test_what_the_critic_refuses_goes_back_to_the_resolver_once_and_the_rest_is_planned(
    sandbox: Sandbox, incidents: IncidentStore, throttled: dict[str, Any]
) -> None:
    """A timeout no change recorded is refused; the Resolver's second round drafts the other step, which
    passes: the plan is that step, with the refusal beside it. Refused alone, nothing is planned."""
    limits = PlanningLimits(recovery_seconds=20, approval_seconds=3600)
    read = sandbox.session(names.SUPERVISOR).client
    guessed, unthrottle = (
        build_command("lambda", *call, region=sandbox.region) for call in (TIMEOUT_9, UNTHROTTLE)
    )
    refusal = (
        "it sets Timeout to 9, a value no change before the trigger shows: a fix puts back a recorded setting"
    )

    both = plan_incident(
        incidents,
        _planned(sandbox, incidents, plan=False),
        _diagnosis(guessed, unthrottle),
        read=read,
        limits=limits,
    )
    assert both["status"] == "AWAITING_APPROVAL"
    plan, _ = stored_plan(incidents, str(both["incident_id"])) or (None, "")
    assert plan is not None
    assert [step.call.operation for step in plan.steps] == ["DeleteFunctionConcurrency"]
    context = incidents.get_context(str(both["incident_id"])) or {}
    assert json.loads(context[PLAN_REVIEW]["S"]) == {
        "unplanned": [],
        "refused": [{"step": 1, "reason": refusal}],
        "history": "0 precedent(s) held, 0 failed before",
    }

    alone = plan_incident(
        incidents, _planned(sandbox, incidents, plan=False), _diagnosis(guessed), read=read, limits=limits
    )
    assert (alone["status"], alone["error_reason"]) == ("NO_PLAN", f"no safe plan: step 1 refused: {refusal}")
    assert _world(sandbox.session(names.OPERATOR)) == throttled  # planning applies nothing


def test_planning_that_fails_midway_ends_no_plan_saying_why(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """The supervisor's read of the precondition refused (here: a reader that cannot reach AWS at all):
    nothing was planned, the incident ends NO_PLAN at once rather than waiting for the watchdog."""
    diagnosed = _planned(sandbox, incidents, plan=False)
    command = build_command("lambda", *UNTHROTTLE, region=sandbox.region)

    def unreachable(service: str) -> Any:
        raise RuntimeError(f"no route to {service}")

    limits = PlanningLimits(recovery_seconds=20, approval_seconds=3600)
    with pytest.raises(RuntimeError, match="no route to lambda"):
        plan_incident(incidents, diagnosed, _diagnosis(command), read=unreachable, limits=limits)
    item = incidents.get(str(diagnosed["incident_id"]))
    assert item is not None
    assert (item["status"], item["error_reason"]) == (
        "NO_PLAN",
        "planning failed: RuntimeError: no route to lambda",
    )


def _status_of(store: IncidentStore, incident_id: str) -> str:
    item = store.get(incident_id)
    assert item is not None
    return str(item["status"])


def test_an_approver_is_an_iam_principal_and_a_role_s_sessions_count_as_the_role() -> None:
    approver = Approver(frozenset({PERSON, "arn:aws:iam::123456789012:user/alice"}))
    assert approver.identity("arn:aws:sts::123456789012:assumed-role/on-call-approver/alice") == PERSON
    assert approver.identity("arn:aws:iam::123456789012:user/alice") == "arn:aws:iam::123456789012:user/alice"
    assert approver.identity("arn:aws:sts::123456789012:assumed-role/on-call-approver-x/alice") is None
    assert approver.identity("arn:aws:sts::210987654321:assumed-role/on-call-approver/alice") is None
    assert approver.identity("arn:aws:iam::123456789012:user/mallory") is None


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("approvers", "alice", "REMEDIATION_APPROVERS names IAM users or roles by ARN"),
        (
            "approvers",
            f"{PERSON},arn:aws:iam::123456789012:group/ops",
            "'arn:aws:iam::123456789012:group/ops'",
        ),
        ("approvers", f"{PERSON},console:", "not 'console:'"),  # a console sign-in names its subject
        ("approvers", "console:al ice", "not 'console:al ice'"),
        ("auto_apply", "low,medium", "EXECUTOR_AUTO_APPLY takes 'low' and 'high', not 'medium'"),
    ],
)
def test_the_executor_s_settings_say_what_is_wrong(setting: str, value: str, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        ExecutorSettings.model_validate({setting: value})
    settings = ExecutorSettings(approvers=f" {PERSON} , console:alice", auto_apply="low")
    assert settings.approver_arns == frozenset({PERSON, "console:alice"})
    assert settings.auto_apply_risks == frozenset({"low"})
    assert Approver(settings.approver_arns).identity("console:alice") == "console:alice"
    assert Approver(settings.approver_arns).identity("console:mallory") is None


def test_the_console_reads_the_same_approvers_and_decides_only_for_its_own_sign_ins() -> None:
    with pytest.raises(ValidationError, match=re.escape("not 'alice'")):
        ConsoleSettings.model_validate({"approvers": "alice"})
    settings = ConsoleSettings.model_validate({"approvers": f"{PERSON}, console:alice"})
    assert settings.console_approvers() == frozenset({"console:alice"})


@pytest.mark.parametrize(
    "settings", [SupervisorSettings, WatchdogSettings, ExecutorSettings, ConsoleSettings]
)
def test_every_component_checks_the_executor_s_queue_url(settings: type[BaseSettings]) -> None:
    with pytest.raises(ValidationError, match="REMEDIATION_QUEUE_URL must be an SQS queue URL such as"):
        settings.model_validate({"remediation_queue_url": "incident-remediations"})
    assert settings.model_validate({"remediation_queue_url": ""}).remediation_queue_url is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("outcomes", "kind", "recovered"),
    [
        (["error", "no_error_seen", "no_error_seen"], "invocations_succeed", False),
        (["error", "no_error_seen", "no_error_seen"], "records_flow", True),  # the bad record, then skipped
        (["no_error_seen", "error"], "records_flow", None),  # still failing last: not moving yet
        (["no_error_seen", "no_error_seen"], "invocations_succeed", True),
        (["no_error_seen"], "records_flow", None),
    ],
)
def test_records_moving_again_tolerate_the_bad_record_s_failures_before_them(
    outcomes: list[str], kind: RecoveryKind, recovered: bool | None
) -> None:
    """The verdict from get_recent_logs' answer: invocations before the fix never count; for records that
    must move again, only the last ones after the fix decide."""
    since = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    before = {"request_id": "r-0", "started": "2026-11-30T09:59:59.000Z", "outcome": "no_error_seen"}
    invocations = [before] + [
        {"request_id": f"r-{n}", "started": f"2026-11-30T10:00:0{n}.000Z", "outcome": outcome}
        for n, outcome in enumerate(outcomes, start=1)
    ]

    verdict = _verdict(invocations, Recovery(kind=kind, function=FUNCTION, within_seconds=60), since)
    assert verdict.recovered is recovered, verdict.why


def _verdict(
    invocations: list[dict[str, Any]],
    recovery: Recovery,
    since: datetime,
    metrics: dict[str, Any] | None = None,
    asked: list[tuple[str, dict[str, Any]]] | None = None,
) -> Verdict:
    """check_invocations' verdict on a plan with ``recovery`` when get_recent_logs answers ``invocations``
    and get_function_metrics ``metrics``; the tools asked, with their arguments, into ``asked``."""

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        if asked is not None:
            asked.append((name, arguments))
        if name == "get_function_metrics":
            assert metrics is not None, "the metrics were read although the logs decided"
            return json.dumps(metrics)
        assert (name, arguments["lambda_name"]) == ("get_recent_logs", FUNCTION)
        return json.dumps({"invocations": invocations})

    step = PlanStep(
        action="-",
        call=ApiCall(service="lambda", operation="UpdateAlias", params={}),
        precondition={},
        inverse=ApiCall(service="lambda", operation="UpdateAlias", params={}),
        risk="low",
    )
    plan = Plan(incident_id="i-1", function=FUNCTION, steps=(step,), recovery=recovery)
    return asyncio.run(check_invocations(call_tool, plan, since, since + timedelta(seconds=30)))


def _minute(start: str, invocations: int, errors: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2026-11-30T{start}:00Z", "invocations": invocations, "errors": errors}


@pytest.mark.parametrize(
    ("minutes", "recovered", "why"),
    [
        # 10:01 may hold the end of an invocation started before the fix (10:00:30 + a 45 s timeout).
        (
            [_minute("10:01", 3, 3), _minute("10:02", 2)],
            True,
            "2 invocations, none failed, in the function's "
            "metrics from 10:02 UTC (its logs hold no report since the fix)",
        ),
        ([_minute("10:01", 3, 3), _minute("10:02", 2, 1)], False, "1 error(s) of 2 invocations"),
        ([_minute("10:01", 3, 3), _minute("10:02", 1)], None, "1 of 2 invocations in the function's metrics"),
        ([], None, "0 of 2 invocations"),
    ],
)
def test_a_function_whose_logs_hold_no_report_since_the_fix_is_read_from_its_metrics(
    minutes: list[dict[str, Any]], recovered: bool | None, why: str
) -> None:
    """Its system log level drops the start and report records (json-system-warn): the whole minutes that
    begin once an invocation started before the fix can have ended decide, their errors first."""
    since = datetime(2026, 11, 30, 10, 0, 30, tzinfo=UTC)
    before = {"request_id": "r-0", "started": "2026-11-30T10:00:10Z", "outcome": "timeout"}
    asked: list[tuple[str, dict[str, Any]]] = []
    metrics = {"timeout_seconds": 45, "minutes": minutes}
    recovery = Recovery(kind="invocations_succeed", function=FUNCTION, within_seconds=90)

    verdict = _verdict([before], recovery, since, metrics, asked)

    assert (verdict.recovered, why in verdict.why) == (recovered, True), verdict.why
    assert asked[1] == ("get_function_metrics", {"lambda_name": FUNCTION, "minutes": 5})


def test_the_metrics_never_decide_records_moving_again_a_version_s_recovery_nor_what_the_logs_show() -> None:
    since = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    failing = {"timeout_seconds": 3, "minutes": [_minute("10:01", 5, 5)]}
    flowing = Recovery(kind="records_flow", function=FUNCTION, within_seconds=90)
    asked: list[tuple[str, dict[str, Any]]] = []
    assert (
        _verdict([], flowing, since, failing, asked).recovered is None
    )  # a retried bad record fails there too
    after = {"request_id": "r-1", "started": "2026-11-30T10:00:05Z", "outcome": "no_error_seen"}
    succeeding = Recovery(kind="invocations_succeed", function=FUNCTION, within_seconds=90)
    assert _verdict([after], succeeding, since, failing, asked).recovered is None  # one report: wait for more
    rolled_back = succeeding.model_copy(update={"version": "3"})  # its series sums every version
    assert _verdict([], rolled_back, since, failing, asked).recovered is None
    assert [name for name, _ in asked] == ["get_recent_logs"] * 3


def test_after_an_alias_moved_back_only_the_version_it_points_to_shows_recovery() -> None:
    """An invocation routed to the bad version before the rollback may start after it: it decides nothing
    once the plan names the version the alias now runs."""
    since = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    invocations = [
        {
            "request_id": "late",
            "log_stream": "2026/11/30/[4]aa",
            "started": "2026-11-30T10:00:01Z",
            "outcome": "timeout",
        },
        {
            "request_id": "r-1",
            "log_stream": "2026/11/30/[3]bb",
            "started": "2026-11-30T10:00:02Z",
            "outcome": "no_error_seen",
        },
        {
            "request_id": "r-2",
            "log_stream": "2026/11/30/[3]bb",
            "started": "2026-11-30T10:00:03Z",
            "outcome": "no_error_seen",
        },
    ]
    rolled_back = Recovery(kind="invocations_succeed", function=FUNCTION, within_seconds=60, version="3")
    assert _verdict(invocations, rolled_back, since) == Verdict(
        True, "2 invocations started after the fix, none failed"
    )
    any_version = Recovery(kind="invocations_succeed", function=FUNCTION, within_seconds=60)
    assert _verdict(invocations, any_version, since).recovered is False
    assert _verdict(invocations[:2], rolled_back, since).recovered is None  # one of two seen


def test_a_cold_start_whose_init_began_before_the_fix_decides_nothing() -> None:
    """Routed to the configuration from before the fix, its environment initialised for 3.9 s and its START
    came after the fix: it ran out of memory under the old size, which says nothing of the new one."""
    since = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)

    def run(request: str, started: str, outcome: str, init_ms: float | None = None) -> dict[str, Any]:
        return {"request_id": request, "started": started, "outcome": outcome, "init_duration_ms": init_ms}

    old = run("old", "2026-11-30T10:00:01Z", "runtime_exit", 3900.0)
    new = [
        run("r-1", "2026-11-30T10:00:05Z", "no_error_seen", 800.0),
        run("r-2", "2026-11-30T10:00:06Z", "no_error_seen"),
    ]
    succeeding = Recovery(kind="invocations_succeed", function=FUNCTION, within_seconds=60)
    assert _verdict([old, *new], succeeding, since) == Verdict(
        True, "2 invocations started after the fix, none failed"
    )
    warm = {**old, "init_duration_ms": None}  # no init: it ran on an environment the fix reached
    assert _verdict([warm, *new], succeeding, since).recovered is False
    quick = {**old, "init_duration_ms": 500.0}  # its init began after the fix too
    assert _verdict([quick, *new], succeeding, since).recovered is False


def test_a_diagnosis_with_no_safe_plan_is_logged_with_the_critics_reason(
    sandbox: Sandbox, incidents: IncidentStore, throttled: dict[str, Any]
) -> None:
    """The supervisor's planning, as the pipeline calls it, logs why an incident ended NO_PLAN: the reason
    the incident itself holds, not only its status."""
    diagnosed = _planned(sandbox, incidents, plan=False)
    incident_id = str(diagnosed["incident_id"])
    guessed = build_command("lambda", *TIMEOUT_9, region=sandbox.region)
    incidents.update_context(incident_id, {"diagnosis": _diagnosis(guessed).model_dump_json()})
    lines = io.StringIO()
    logger = Logger(service=f"planning-{uuid.uuid4().hex[:8]}", logger_handler=logging.StreamHandler(lines))
    limits = PlanningLimits(recovery_seconds=20, approval_seconds=3600)
    remediation = Remediation(incidents, sandbox.session(names.SUPERVISOR).client, limits, logger)

    assert remediation.begin(incident_id) == "NO_PLAN"
    item = incidents.get(incident_id) or {}
    assert str(item["error_reason"]).startswith("no safe plan: step 1 refused: it sets Timeout to 9")
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    planned = [entry for entry in logged if entry["message"] == "remediation_planned"]
    assert [(p["status"], p["reason"]) for p in planned] == [("NO_PLAN", item["error_reason"])]
