"""The drill's one-causal-timeline scenarios (issue 26) staged in the sandbox: each makes the changes
CloudTrail must record, in their order, the invocations fail (or succeed) the way they must, and its
alarms open the incidents it expects; whatever the diagnosis says, the world is restored exactly.

The diagnosis is not judged here (the drill does that): only what the sandbox did."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chaos.drill.checks import Change, DiagnosisStage, Incident, Stage, check_incident
from chaos.drill.progress import Progress
from chaos.drill.report import ScenarioResult
from chaos.drill.runner import Drill
from chaos.drill.scenarios import COPY, COPY_ROLE, INTAKE_COPY, SCENARIOS
from chaos.drill.sent_answers import SentAnswer
from chaos.drill.settings import DrillSettings
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox

IAM_EVENTS_REGION = "us-east-1"  # CloudTrail records IAM, a global service, there
STAGING = ("incidents", "terminal state", "world restored", "healthy after restore", "notified once")
DP, ORDERS, INTAKE = names.FUNCTION_NAME, names.ORDERS_FUNCTION, names.ORDER_INTAKE_FUNCTION

# What each scenario must do: its invocations' statuses per function, in order, and the operator's changing
# calls as CloudTrail names them, in order, from the first injection to the end of the restore (SSM, where
# the injectors keep their saved state, and CloudWatch Logs left out).
BAD_DEPLOY = (
    "UpdateFunctionCode20150331v2",
    "PublishVersion20150331",
    "UpdateAlias20150331",
)
UNDEPLOY = ("UpdateFunctionCode20150331v2", "UpdateAlias20150331", "DeleteFunction20150331")
REDEPLOY = ("UpdateFunctionCode20150331v2", "UpdateFunctionCode20150331v2")  # $LATEST only: no alias
COPIED = (
    "CreateRole",
    "PutRolePolicy",
    "PutMetricAlarm",
    "PutMetricAlarm",
    "PutMetricAlarm",
    "CreateFunction20150331",  # last: the function's creation
    "DeleteFunction20150331",
    "DeleteAlarms",
    "DeleteRolePolicy",
    "DeleteRole",
)
# The diagnosis's rollback, applied before the restore by the executor (its own identity), once the drill's
# person approved it: none of the operator's changes.
ROLLED_BACK = ("UpdateAlias20150331",)
# The executor's changes, where the scenario's fix is its to apply and a plan was made for it.
FIXED = {
    "deploy-oom": ROLLED_BACK,
    "deploy-timeout": ROLLED_BACK,
    "json-system-warn": ("UpdateFunctionConfiguration20150331v2",),
}
# The moved twist's change and the operator's undo of it, where a plan was made, before the last restore.
MOVED = {"fixed-then-second": ("PutFunctionConcurrency20171031", "DeleteFunctionConcurrency20171031")}
STAGED: dict[str, tuple[dict[str, list[str]], tuple[str, ...]]] = {
    "deploy-oom": (
        {ORDERS: ["succeeded", "succeeded", "out_of_memory"]},
        (*BAD_DEPLOY, *UNDEPLOY),
    ),
    "deploy-timeout": (
        {ORDERS: ["succeeded", "succeeded", "timed_out"]},
        (*BAD_DEPLOY, *UNDEPLOY),
    ),
    "config-wrong-value": (
        {DP: ["succeeded", "succeeded", "failed"]},
        (
            "PutRolePolicy",  # iam-touch: the role's one inline policy put again, unchanged
            "UpdateFunctionConfiguration20150331v2",  # INPUT_BUCKET changed
            "UpdateFunctionConfiguration20150331v2",  # restore: the environment as it was
            "PutRolePolicy",
        ),
    ),
    "fixed-then-second": (
        {DP: ["throttled", "timed_out"]},
        (
            "PutFunctionConcurrency20171031",
            "DeleteFunctionConcurrency20171031",  # the operator's fix, before the second fault
            "RevokeSecurityGroupEgress",
            "AuthorizeSecurityGroupEgress",  # restore (the throttle has nothing left to restore)
        ),
    ),
    "never-granted": ({COPY: ["failed"]}, COPIED),
    "node-deploy-timeout": ({INTAKE: ["succeeded", "succeeded", "timed_out"]}, REDEPLOY),
    "node-deploy-oom": ({INTAKE: ["succeeded", "succeeded", "out_of_memory"]}, REDEPLOY),
    "node-never-granted": ({INTAKE_COPY: ["failed"]}, COPIED),
    "json-system-warn": (
        {names.REPORT_FUNCTION: ["succeeded", "succeeded", "timed_out"]},
        # SystemLogLevel WARN, the timeout cut; restored in reverse: the timeout, then the LoggingConfig (the
        # diagnosis's fix, the timeout put back, is the executor's: FIXED)
        ("UpdateFunctionConfiguration20150331v2",) * 4,
    ),
}

# Final at once: recorded 20 minutes after the first failure, past the 900 s delivery bound.
FINAL = DiagnosisStage(True, "2026-11-23T10:05:00.000Z", None, None, "2026-11-23T10:25:00.000Z", 900)


@pytest.fixture(scope="module")
def drill(sandbox: Sandbox, mcp_server_url: str, mcp_answer_log: Path) -> Iterator[Drill]:
    """The drill on the session's sandbox; on a busy machine an alarm may take longer than the drill's own
    wait (a scenario whose incidents are all in goes on at once)."""
    settings = DrillSettings(alarm_wait_seconds=30)
    with Drill(
        sandbox,
        mcp_server_url,
        settings=settings,
        progress=Progress(io.StringIO(), live=False),
        answer_log=mcp_answer_log,
    ) as drill:
        yield drill


def _operator_changes(sandbox: Sandbox, since: datetime, user: str = names.OPERATOR) -> list[str]:
    """``user``'s changing calls since ``since``, oldest first, from both regions CloudTrail records
    them in; SSM and CloudWatch Logs left out."""
    operator = sandbox.session(names.OPERATOR)
    events: list[dict[str, Any]] = []
    for region in (sandbox.world.region, IAM_EVENTS_REGION):
        cloudtrail = operator.client("cloudtrail", region_name=region)
        pages = cloudtrail.get_paginator("lookup_events").paginate(
            LookupAttributes=[{"AttributeKey": "Username", "AttributeValue": user}],
            StartTime=since,
            EndTime=datetime.now(UTC) + timedelta(seconds=2),
        )
        events += [event for page in pages for event in page["Events"]]
    left_out = ("ssm.amazonaws.com", "logs.amazonaws.com")
    kept = [
        e
        for e in events
        if e["EventSource"] not in left_out and e["EventTime"] >= since and e["ReadOnly"] == "false"
    ]
    return [e["EventName"] for e in sorted(kept, key=lambda e: e["EventTime"])]


@pytest.mark.parametrize("name", list(STAGED))
def test_the_scenario_stages_its_changes_and_failures_and_restores_them(
    drill: Drill, sandbox: Sandbox, name: str
) -> None:
    scenario = next(s for s in SCENARIOS if s.name == name)
    traffic, changes = STAGED[name]
    since = datetime.now(UTC)
    result = drill.run_scenario(scenario)
    assert result.traffic == traffic
    # The executor changed exactly what the plan made for the incident applies (whether a plan is made, in
    # this sandbox that other tests changed too, the full drill's fresh worlds judge: tests/test_drill.py).
    remediations = [str(incident.remediation) for incident in result.incidents]
    planned = "AWAITING_APPROVAL" in remediations
    moved = MOVED.get(name, ()) if planned else ()
    assert tuple(_operator_changes(sandbox, since)) == changes[:-1] + moved + changes[-1:]
    fixed = FIXED.get(name, ()) if planned else ()
    assert tuple(_operator_changes(sandbox, since, names.EXECUTOR)) == fixed, remediations
    staged = {c.name: c.detail for c in result.checks if c.name in STAGING and not c.ok}
    assert staged == {}
    assert len(result.incidents) == len(scenario.expected)
    if name == "fixed-then-second":
        _first_investigated_before_the_fix(result, since)


def _first_investigated_before_the_fix(result: ScenarioResult, since: datetime) -> None:
    """The throttling incident was investigated before the operator's fix: the change history its agent
    read holds the throttle, not its removal; the second incident's holds both and the egress revoke
    (the scenario's own changes: earlier tests on this sandbox made some of the same)."""
    first, second = (
        {
            event["event_name"]
            for answer in incident.tool_results
            if answer["tool"] == "get_recent_changes"
            for event in answer["result"]["events"]
            if datetime.fromisoformat(event["time"]) >= since
        }
        for incident in result.incidents
    )
    assert "PutFunctionConcurrency20171031" in first
    assert "DeleteFunctionConcurrency20171031" not in first
    assert {
        "PutFunctionConcurrency20171031",
        "DeleteFunctionConcurrency20171031",
        "RevokeSecurityGroupEgress",
    } <= second


# --------------------------------------------------------------------------- the expectations can fail

OPERATOR = f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.OPERATOR}"
SG = "sg-0123"
# What the injectors of these scenarios save before their changes, as the runner hands it to the judge.
SAVED: dict[str, dict[str, Any]] = {
    "deploy-bad-code": {
        "function": ORDERS,
        "aliases": {names.ORDERS_ALIAS: {"version": "1", "routing": None}},
    },
    "config-timeout": {"function": names.REPORT_FUNCTION, "timeout": 3},
}


# What the server sent, and for each fault a value of it that shows the fault.
_SENT: dict[str, dict[str, Any]] = {
    "get_recent_changes": {
        "events": [{"event_name": "-"}, {"event_name": "UpdateFunctionConfiguration20150331v2"}]
    },
    "get_function_metrics": {
        "errors": 1.0,
        "throttles": 1.0,
        "duration_to_timeout": 1.0,
        "memory_to_size": 1.0,
        "minutes": [{"invocations": 3.0, "errors": 1.0, "throttles": 1.0}],
    },
    "get_iam_state": {"role_name": "-", "inline_policies": {}, "attached_policies": []},
    "get_network_state": {"https_egress_allowed": False},
    "get_event_sources": {"mappings": [{"State": "Disabled"}]},
}
_SHOWS: dict[str, tuple[str, str, str]] = {
    "timeout": ("get_function_metrics", "duration_to_timeout", "1.0"),
    "out_of_memory": ("get_function_metrics", "memory_to_size", "1.0"),
    "code_error": ("get_function_metrics", "errors", "1.0"),
    "dependency_failure": ("get_function_metrics", "errors", "1.0"),
    "throttling": ("get_function_metrics", "throttles", "1.0"),
    "bad_input": ("get_function_metrics", "minutes.0.invocations", "3.0"),
    "configuration_error": (
        "get_recent_changes",
        "events.1.event_name",
        "UpdateFunctionConfiguration20150331v2",
    ),
    "permission_loss": ("get_iam_state", "inline_policies", "{}"),
    "network_block": ("get_network_state", "https_egress_allowed", "false"),
    "event_source_stopped": ("get_event_sources", "mappings.0.State", "Disabled"),
}


def _judged(name: str, number: int, changes: tuple[str, ...], **diagnosis: Any) -> dict[str, str]:
    """The checks an incident of scenario ``name`` fails (its ``number``-th expectation), for a diagnosis
    with ``diagnosis``'s fields, the scenario's changes as the runner records them; its command is compared
    but not applied (the drill applies it in the sandbox)."""
    expected = replace(next(s for s in SCENARIOS if s.name == name).expected[number], applies=None)
    function = expected.function
    role = COPY_ROLE if function == COPY else f"{function}-role"
    pointer = {
        "tool": "get_recent_changes",
        "field": "events.0.event_name",
        "value": "-",
        "interpretation": "-",
    }
    fields: dict[str, Any] = {
        "root_cause": "-",
        "fault_types": [],
        "affected_resources": [function],
        "evidence": [pointer | {"supports": None}],
        "remediation_plan": [],
        "trigger": None,
        "gaps": [],
        "verification": {
            "pointers": [{"index": 0, "verified": True}],
            "entries": [],
            "unsupported_fault_types": [],
        },
    } | diagnosis
    fields["remediation_plan"] = [
        {"action": "-", "details": "-", "evidence_basis": [0], "command": command}
        for command in fields["remediation_plan"]
    ]
    # Grounded: one pointer per named fault, each a value that shows it where the server's answer holds it.
    fields["evidence"] += [
        {"tool": tool, "field": field, "value": value, "interpretation": "-", "supports": fault}
        for fault in fields["fault_types"]
        if fault != "unknown"
        for tool, field, value in [_SHOWS[fault]]
    ]
    sent = [SentAnswer(tool, {}, answer) for tool, answer in _SENT.items()]
    incident = Incident(f"{function}@t", function, "DIAGNOSED", diagnosis=fields, answers=sent, stage=FINAL)
    stage = Stage(
        {"function": function, "role": role, "security-group": SG},
        tuple(Change(operation, OPERATOR) for operation in changes),
        other_functions=tuple(f for f in names.FUNCTIONS if f != function),
        saved=SAVED,
    )
    return {c.name: c.detail for c in check_incident(incident, expected, stage) if not c.ok}


def _by(event_name: str) -> dict[str, str]:
    return {"event_name": event_name, "identity": OPERATOR}


ROLLBACK = "aws lambda update-alias --function-name orders-api --name live --function-version 1"
DEPLOYED = ("UpdateFunctionCode", "PublishVersion", "UpdateAlias")


@pytest.mark.parametrize(("name", "fault"), [("deploy-oom", "out_of_memory"), ("deploy-timeout", "timeout")])
def test_a_deploy_must_be_the_trigger_and_rolled_back(name: str, fault: str) -> None:
    right = {"fault_types": [fault], "trigger": _by("UpdateAlias20150331"), "remediation_plan": [ROLLBACK]}
    assert _judged(name, 0, DEPLOYED, **right) == {}
    raise_the_limit = "aws lambda update-function-configuration --function-name orders-api --memory-size 512"
    main = right | {"trigger": None, "remediation_plan": [raise_the_limit]}  # what main answered
    assert set(_judged(name, 0, DEPLOYED, **main)) == {"trigger", "remediation command"}
    published = right | {"trigger": _by("PublishVersion20150331")}
    assert set(_judged(name, 0, DEPLOYED, **published)) == {"trigger"}


def test_a_wrong_value_is_a_configuration_error_of_the_env_change_with_a_named_gap() -> None:
    changes = ("PutRolePolicy", "UpdateFunctionConfiguration")
    gap = {
        "source": "configuration",
        "reason": "INPUT_BUCKET's earlier value is not recorded",
        "evidence": [0],
    }
    right = {
        "fault_types": ["configuration_error"],
        "trigger": _by("UpdateFunctionConfiguration20150331v2"),
        "gaps": [gap],
    }
    assert _judged("config-wrong-value", 0, changes, **right) == {}
    main = {
        "fault_types": ["permission_loss"],
        "trigger": _by("PutRolePolicy"),
        "remediation_plan": ["aws iam put-role-policy --role-name data-processor-role --policy-name p"],
    }
    assert set(_judged("config-wrong-value", 0, changes, **main)) == {"fault types", "trigger", "named gap"}


def test_a_fault_fixed_before_the_second_is_resolved_not_current() -> None:
    changes = ("PutFunctionConcurrency", "DeleteFunctionConcurrency", "RevokeSecurityGroupEgress")
    first = {
        "fault_types": ["throttling"],
        "trigger": _by("PutFunctionConcurrency20171031"),
        "remediation_plan": ["aws lambda delete-function-concurrency --function-name data-processor"],
    }
    assert _judged("fixed-then-second", 0, changes, **first) == {}
    assert set(_judged("fixed-then-second", 0, changes, **first, resolved=[{"fault_type": "x"}])) == {
        "resolved faults"
    }
    throttled = {"fault_type": "throttling", "reason": "-", "evidence": [0]}
    right = {
        "fault_types": ["network_block"],
        "affected_resources": [DP, SG],
        "trigger": _by("RevokeSecurityGroupEgress"),
        "resolved": [throttled],
    }
    assert _judged("fixed-then-second", 1, changes, **right) == {}
    main = right | {"fault_types": ["network_block", "throttling"], "resolved": []}
    assert set(_judged("fixed-then-second", 1, changes, **main)) == {"fault types", "resolved faults"}


def test_a_never_granted_role_is_a_configuration_error_of_the_functions_creation() -> None:
    """No command: the statement to add is the fix, but its resource is the code's to say; a gap names
    the action the role never granted."""
    changes = ("CreateRole", "PutRolePolicy", *("PutMetricAlarm",) * 3, "CreateFunction")
    gap = {"source": "iam", "reason": f"{COPY_ROLE} never allowed s3:GetObject", "evidence": [0]}
    right = {
        "fault_types": ["configuration_error"],
        "affected_resources": [COPY, COPY_ROLE],
        "trigger": _by("CreateFunction20150331"),
        "gaps": [gap],
    }
    assert _judged("never-granted", 0, changes, **right) == {}
    main = {"fault_types": ["unknown"]}  # what main answered before the timeline
    assert set(_judged("never-granted", 0, changes, **main)) == {
        "fault types",
        "resources named exactly",
        "trigger",
        "named gap",
    }
    assert set(_judged("never-granted", 0, changes, **right | {"trigger": _by("CreateRole")})) == {"trigger"}
    invented = right | {
        "remediation_plan": [f"aws iam put-role-policy --role-name {COPY_ROLE} --policy-name x"]
    }
    assert set(_judged("never-granted", 0, changes, **invented)) == {"named gap"}


def test_a_node_deploy_after_successes_is_the_trigger_with_no_invented_rollback() -> None:
    """order-intake has no alias: the bad build replaced $LATEST, so no version holds the code that worked
    and no rollback command is demanded; the deploy must still be the trigger."""
    changes = ("UpdateFunctionCode",)
    right = {"fault_types": ["out_of_memory"], "trigger": _by("UpdateFunctionCode20150331v2")}
    assert _judged("node-deploy-oom", 0, changes, **right) == {}
    assert set(_judged("node-deploy-oom", 0, changes, **right | {"trigger": None})) == {"trigger"}
    assert set(_judged("node-deploy-timeout", 0, changes, **right)) == {"fault types"}


def test_a_raised_system_log_level_is_a_gap_not_the_trigger_of_the_timeout() -> None:
    """The SystemLogLevel change came before the successes; the timeout cut after them is the trigger and
    is put back; the start and report records the level kept out are a gap that names the setting."""
    changes = ("UpdateFunctionConfiguration", "UpdateFunctionConfiguration")
    put_back = "aws lambda update-function-configuration --function-name report-builder --timeout 3"
    gap = {"source": "logs", "reason": "no start or report records: SystemLogLevel is WARN", "evidence": [0]}
    right = {
        "fault_types": ["timeout"],
        "trigger": _by("UpdateFunctionConfiguration20150331v2"),
        "remediation_plan": [put_back],
        "gaps": [gap],
    }
    assert _judged("json-system-warn", 0, changes, **right) == {}
    silent = right | {"gaps": []}
    assert set(_judged("json-system-warn", 0, changes, **silent)) == {"gap named"}
    unknown = {"fault_types": ["unknown"], "gaps": [gap]}
    assert set(_judged("json-system-warn", 0, changes, **unknown)) == {
        "fault types",
        "trigger",
        "remediation command",
    }
