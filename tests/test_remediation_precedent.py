"""A plan reads the function's history: it cites the past incidents of its pattern (function, primary fault,
trigger) whose same calls held, flags those whose same calls did not help, and one so flagged waits for a
person even where its risk may apply without one. Other calls, other triggers and other ends are not
cited; a history that cannot be read leaves the plan as the code made it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import boto3
import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from executor.approvals import Approvals
from executor.cli import read_view, view_lines
from mcp_server.contract.history import FIX, FIX_VERDICT, HISTORY_INDEX
from supervisor.diagnosis.cli_commands import build_command
from supervisor.incident.lifecycle import PLAN_REVIEW
from supervisor.incident.remediation_notice import remediation_notice
from supervisor.incident.store import IncidentStore
from supervisor.incident.tables import state_table_schema
from supervisor.remediation.planning import stored_plan
from tests.test_console import console
from tests.test_executor_run import FUNCTION, TIMEOUT_9, UNTHROTTLE, _executor, _planned, approvals, throttled
from tests.test_incident_history import _incident
from tests.test_remediation_plan import _diagnosis

__all__ = ["approvals", "throttled"]  # the fixtures, used by name
SAME = json.dumps([{"service": "lambda", "operation": UNTHROTTLE[0], "params": UNTHROTTLE[1]}])
OTHER = json.dumps([{"service": "lambda", "operation": TIMEOUT_9[0], "params": TIMEOUT_9[1]}])


def _past(store: IncidentStore, days: float, fix: str, verdict: str, trigger: str | None = None) -> str:
    end = "REMEDIATED" if verdict == "held" else "NOT_REMEDIATED"
    return _incident(store, FUNCTION, days, ["timeout"], end, trigger, {FIX: fix, FIX_VERDICT: verdict})


def _review(store: IncidentStore, incident_id: str) -> dict[str, Any]:
    context = store.get_context(incident_id) or {}
    return dict(json.loads(context[PLAN_REVIEW]["S"]))


def test_a_plan_cites_where_its_calls_held_and_flags_where_they_did_not_help_and_people_see_both(
    sandbox: Sandbox, incidents: IncidentStore, approvals: Approvals, throttled: dict[str, Any]
) -> None:
    held = [_past(incidents, days, SAME, "held") for days in (3, 9)]
    failed = _past(incidents, 5, SAME, "did_not_help")
    _past(incidents, 4, OTHER, "held")  # other calls
    _past(incidents, 6, SAME, "held", trigger="PutFunctionConcurrency")  # another trigger kind
    _past(incidents, 7, SAME, "not_applied")  # never judged

    planned = _planned(sandbox, incidents, UNTHROTTLE)
    found = stored_plan(incidents, str(planned["incident_id"]))
    assert found is not None
    plan, digest = found
    assert (plan.precedents, plan.failed_before) == (tuple(held), (failed,))  # the newest first
    assert digest == planned["plan_digest"]  # bound by the digest like every call
    incident_id = str(planned["incident_id"])
    assert _review(incidents, incident_id)["history"] == "2 precedent(s) held, 1 failed before"
    # in the notice that asks for approval, at the terminal and on the console, each past incident by id
    notice = remediation_notice(planned, incidents.get_context(incident_id) or {}, None).text
    assert [line.strip() for line in notice.splitlines() if "before:" in line] == [
        f"held before: {held[0]}",
        f"held before: {held[1]}",
        f"did not help before: {failed} (it waits for a person)",
    ]
    shown = view_lines(read_view(incidents, approvals, planned))
    assert f"  did not help before: {failed} (waits for a person)" in shown
    assert f"  held before: {held[0]} (the same calls, proven)" in shown
    command = build_command("lambda", *UNTHROTTLE, region=sandbox.region)
    incidents.update_context(incident_id, {"diagnosis": _diagnosis(command).model_dump_json()})  # as stored
    page = console(sandbox, incidents).get(f"/incidents/{quote(incident_id, safe='')}").text
    for past in (*held, failed):
        assert f'<a href="/incidents/{quote(past, safe="")}">{past}</a>' in page


def test_a_fix_that_did_not_help_before_waits_for_a_person_whatever_its_risk(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    incidents: IncidentStore,
    approvals: Approvals,
    throttled: dict[str, Any],
) -> None:
    _past(incidents, 5, SAME, "did_not_help")
    incident_id = str(_planned(sandbox, incidents, UNTHROTTLE)["incident_id"])
    low = _executor(sandbox, runtime, incidents, approvals, auto_apply=frozenset({"low"}))
    assert low.run(incident_id, "run-1") == "waiting: the plan awaits a person's approval"
    lambda_ = operator.client("lambda")
    assert lambda_.get_function_concurrency(FunctionName=FUNCTION)["ReservedConcurrentExecutions"] == 0


@pytest.mark.usefixtures("throttled")
def test_a_history_that_cannot_be_read_leaves_the_plan_as_the_code_made_it_and_says_so(
    sandbox: Sandbox, incidents: IncidentStore
) -> None:
    """A table made before the history index existed: the Query is refused, the plan stands."""
    operator = sandbox.session(names.OPERATOR).client("dynamodb")
    schema = state_table_schema()
    schema["GlobalSecondaryIndexes"] = [
        index for index in schema["GlobalSecondaryIndexes"] if index["IndexName"] != HISTORY_INDEX
    ]
    keys = {key["AttributeName"] for index in schema["GlobalSecondaryIndexes"] for key in index["KeySchema"]}
    schema["AttributeDefinitions"] = [
        a for a in schema["AttributeDefinitions"] if a["AttributeName"] in keys | {"incident_id"}
    ]
    older = f"{incidents.state_table}-before-history"
    operator.create_table(TableName=older, BillingMode="PAY_PER_REQUEST", **schema)
    try:
        store = IncidentStore(incidents.dynamodb, older, incidents.context_table)
        planned = _planned(sandbox, store, UNTHROTTLE)
        assert planned["status"] == "AWAITING_APPROVAL"
        found = stored_plan(store, str(planned["incident_id"]))
        assert found is not None
        assert (found[0].precedents, found[0].failed_before) == ((), ())
        history = _review(store, str(planned["incident_id"]))["history"]
        assert history.startswith("not read (")  # the index is unknown to the table
        assert history.endswith("): no precedent cited, no earlier failure flagged")
    finally:
        operator.delete_table(TableName=older)
