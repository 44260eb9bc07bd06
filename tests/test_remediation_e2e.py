"""Remediation end to end on the sandbox: a real fault, its alarm into the supervisor's pipeline (rules model,
the MCP server as shipped), a plan awaiting approval, a person's decision with `incident-remediate`, the
executor's handler taking the queue's message as its own identity, recovery shown by the function's own
invocations, and the world read back by the operator equal to what it was before the fault."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import boto3
import httpx2
import pytest
from aws_lambda_powertools import Logger
from starlette.testclient import TestClient

from chaos.faults.iam import REVOKE_S3
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from console.app import create_app
from executor.approvals import Approvals
from executor.cli import main as remediate
from executor.handler import build_executor, handle
from executor.run import Executor
from supervisor.incident.lifecycle import EXECUTION, PLAN, PLAN_REVIEW
from supervisor.incident.pipeline import IncidentPipeline
from supervisor.incident.store import IncidentStore
from tests.conftest import Inject
from tests.console_support import local_issuer
from tests.fault_scenarios import fresh_logs
from tests.oauth_issuer import LocalIssuer
from tests.pipeline_support import outcomes, published_notifications
from tests.test_console import console
from tests.test_console_auth import AUDIENCE, CLIENT, PUBLIC, oauth, to_callback

PERSON = f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.OPERATOR}"


def _policy(operator: boto3.Session) -> dict[str, Any]:
    """The role's inline policies, each by name with its document, as the operator reads them."""
    iam = operator.client("iam")
    return {
        name: iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=name)["PolicyDocument"]
        for name in iam.list_role_policies(RoleName=names.ROLE_NAME)["PolicyNames"]
    }


def _requests(sandbox: Sandbox) -> list[dict[str, Any]]:
    """The executor queue's messages as Lambda's mapping would hand them over (an SQS event's records)."""
    sqs = sandbox.session(names.OPERATOR).client("sqs")
    url = sandbox.world.remediation_queue_url
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
        "Messages", []
    )
    for message in messages:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return [
        {"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs", "eventSourceARN": arn}
        for m in messages
    ]


def _attribute(envelope: dict[str, Any], name: str) -> str:
    return str(envelope["MessageAttributes"][name]["Value"])


def rewrite_policy(operator: boto3.Session) -> None:
    """The role's inline policy written again as it is, so the change history the diagnosis reads holds
    the document to put back, however many changes earlier tests made in this sandbox (the lookup reads
    the newest changes; a policy written long before them is beyond it, and its fix has no command)."""
    iam = operator.client("iam")
    document = iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME)[
        "PolicyDocument"
    ]
    iam.put_role_policy(
        RoleName=names.ROLE_NAME, PolicyName=names.INLINE_POLICY_NAME, PolicyDocument=json.dumps(document)
    )


def _executor(
    sandbox: Sandbox, incidents: IncidentStore, mcp_server_url: str, topic: str, approvers: str
) -> Executor:
    """The executor as its handler builds it, as the sandbox's executor identity."""
    return build_executor(
        sandbox.session(names.EXECUTOR),
        incident_state_table=incidents.state_table,
        incident_context_table=incidents.context_table,
        incident_approvals_table=_approvals_table(incidents),
        approvers=approvers,
        mcp_server_url=f"{mcp_server_url}/sse",
        poll_seconds=0.5,
        diagnoses_topic_arn=topic,
    )


def _approvals_table(incidents: IncidentStore) -> str:
    return incidents.state_table.replace("incident-state-", "incident-approvals-")


def _awaiting_approval(
    sandbox: Sandbox,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: Callable[..., IncidentPipeline],
    incidents: IncidentStore,
) -> tuple[str, dict[str, Any], str]:
    """The role's S3 policy revoked, the function failing, its alarm through the pipeline with remediation
    on: the incident, its state item (its plan awaiting a person) and the diagnoses topic."""
    fresh_logs(sandbox, names.FUNCTION_NAME)
    rewrite_policy(sandbox.session(names.OPERATOR))
    inject(REVOKE_S3)
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "failed"
    (event,) = alarm_events(wait_seconds=2)
    topic = sandbox.world.diagnoses_topic_arn
    published_notifications(sandbox)  # what earlier tests left on the topic's reader
    pipeline = make_pipeline(
        remediation=True, remediation_queue_url=sandbox.world.remediation_queue_url, diagnoses_topic_arn=topic
    )

    (outcome,) = outcomes(pipeline.handle(event, None))

    assert outcome["status"] == "DIAGNOSED"  # the investigation's outcome; planning came after it
    incident_id = str(outcome["incident_id"])
    reason = (incidents.get(incident_id) or {}).get("error_reason")
    assert outcome["remediation"] == "AWAITING_APPROVAL", reason
    context = incidents.get_context(incident_id) or {}
    plan = json.loads(context[PLAN]["S"])
    assert [(s["call"]["operation"], s["risk"]) for s in plan["steps"]] == [("PutRolePolicy", "high")]
    review = {"unplanned": [], "refused": [], "history": "0 precedent(s) held, 0 failed before"}
    assert json.loads(context[PLAN_REVIEW]["S"]) == review
    incident = incidents.get(incident_id)
    assert incident is not None
    assert incident["status"] == "AWAITING_APPROVAL"
    return incident_id, incident, topic


def test_a_revoked_policy_is_planned_approved_applied_verified_and_the_world_is_as_before(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: Callable[..., IncidentPipeline],
    incidents: IncidentStore,
    mcp_server_url: str,
    traffic: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _policy(operator)
    _requests(sandbox)  # what earlier tests left on the queue
    incident_id, incident, topic = _awaiting_approval(
        sandbox, runtime, alarm_events, inject, make_pipeline, incidents
    )
    assert _policy(operator) != before
    (request,) = _requests(sandbox)
    page = html.unescape(console(sandbox, incidents).get(f"/incidents/{quote(incident_id, safe='')}").text)
    assert f"incident-remediate approve '{incident_id}' --digest {incident['plan_digest']}" in page

    executor = _executor(sandbox, incidents, mcp_server_url, topic, approvers=PERSON)
    logger = Logger(service="test-executor")
    waiting = handle(executor, {"Records": [request]}, None, logger)
    assert waiting["outcomes"][0]["outcome"] == "waiting: the plan awaits a person's approval"
    assert _policy(operator) != before  # nothing applied before a person decided

    tables = {
        "INCIDENT_STATE_TABLE": incidents.state_table,
        "INCIDENT_CONTEXT_TABLE": str(incidents.context_table),
        "INCIDENT_APPROVALS_TABLE": executor.approvals.table,
        "REMEDIATION_APPROVERS": PERSON,
        "REMEDIATION_QUEUE_URL": sandbox.world.remediation_queue_url,
    }
    for name, value in (sandbox.env | tables).items():  # a terminal where the sandbox's env file is sourced
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_PROFILE", names.SUPERVISOR)  # the supervisor's identity is no approver
    assert remediate(["approve", incident_id, "--digest", str(incident["plan_digest"])]) == 1
    assert f"user/{names.SUPERVISOR} is not an approver" in capsys.readouterr().err
    monkeypatch.setenv("AWS_PROFILE", names.OPERATOR)  # a person named in REMEDIATION_APPROVERS
    assert remediate(["show", incident_id]) == 0
    shown = capsys.readouterr().out
    assert f"digest: {incident['plan_digest']}" in shown
    assert "iam PutRolePolicy" in shown
    assert remediate(["approve", incident_id, "--digest", str(incident["plan_digest"])]) == 0
    assert capsys.readouterr().out == f"approved by {PERSON}; the executor was asked to take it on\n"
    (request,) = _requests(sandbox)  # the approval's request
    traffic()
    done = handle(executor, {"Records": [request]}, None, logger)

    assert done["batchItemFailures"] == []
    assert done["outcomes"][0]["outcome"].startswith("REMEDIATED: recovered: "), done
    assert _policy(operator) == before
    final = incidents.get(incident_id)
    assert final is not None
    assert final["status"] == "REMEDIATED"

    # People were told: the diagnosis, the plan awaiting them (with what to run), then its end, once each.
    notices = [n for n in published_notifications(sandbox) if _attribute(n, "incident_id") == incident_id]
    assert [(_attribute(n, "kind"), _attribute(n, "status")) for n in notices] == [
        ("diagnosis", "DIAGNOSED"),
        ("remediation", "AWAITING_APPROVAL"),
        ("remediation", "REMEDIATED"),
    ]
    asking = json.loads(notices[1]["Message"])["content"]["description"]  # the chat's (SQS gets "default")
    assert f"incident-remediate approve {incident_id} --digest {incident['plan_digest']}" in asking
    assert "call: iam PutRolePolicy" in asking
    assert "undo: iam DeleteRolePolicy" in asking  # the policy was gone before the fix
    assert notices[2]["Subject"] == f"[REMEDIATED] {names.FUNCTION_NAME}: fix applied, recovery shown"
    assert "applied: iam PutRolePolicy" in json.loads(notices[2]["Message"])["content"]["description"]

    # The console's incident page shows the plan, who approved which digest, each call and the check.
    page = html.unescape(console(sandbox, incidents).get(f"/incidents/{quote(incident_id, safe='')}").text)
    fix = page[page.index('<section id="fix">') : page.index('<section id="gaps">')]
    assert '<span class="status status-remediated">REMEDIATED</span>' in fix
    assert "call <code>iam PutRolePolicy" in fix
    assert f"Digest <code>{incident['plan_digest']}</code>" in fix
    assert f"by {PERSON} at " in fix
    (call,) = json.loads((incidents.get_context(incident_id) or {})[EXECUTION]["S"])["calls"]
    assert f"PutRolePolicy (request {call['request_id']})" in fix
    assert "invocations started after the fix, none failed" in fix


APPROVER = "user-1"  # the local issuer's subject


def _signed_in(console: TestClient) -> None:
    """Sign ``console``'s browser in through the (real) local issuer, as its subject."""
    path, query = to_callback(console)
    assert console.get(path, params=query).status_code == 303


def _form(page: str) -> dict[str, str]:
    """The decision form's hidden fields, as the page gave them."""
    found = re.search(
        r'name="digest" value="([^"]+)"><input type="hidden" name="form_token" value="(\w+)"', page
    )
    assert found is not None, "the page offers no decision form"
    return {"digest": found[1], "form_token": found[2]}


def test_a_person_signed_in_to_the_console_approves_and_the_executor_applies_exactly_that(
    sandbox: Sandbox,
    operator: boto3.Session,
    runtime: LocalLambdaRuntime,
    alarm_events: Callable[..., list[dict[str, Any]]],
    inject: Inject,
    make_pipeline: Callable[..., IncidentPipeline],
    incidents: IncidentStore,
    mcp_server_url: str,
    traffic: Callable[[], None],
) -> None:
    before = _policy(operator)
    _requests(sandbox)  # what earlier tests left on the queue
    incident_id, incident, topic = _awaiting_approval(
        sandbox, runtime, alarm_events, inject, make_pipeline, incidents
    )
    _requests(sandbox)  # the plan's own request
    digest = str(incident["plan_digest"])
    with local_issuer(CLIENT) as issuer:
        issuer.grant_claims = {"aud": AUDIENCE}
        _decide_on_the_console(sandbox, incidents, issuer, incident_id, digest)

    (request,) = _requests(sandbox)  # the console asked the executor to look, once
    traffic()
    done_run = handle(
        _executor(sandbox, incidents, mcp_server_url, topic, approvers=f"console:{APPROVER}"),
        {"Records": [request]},
        None,
        Logger(service="test-executor"),
    )
    assert done_run["outcomes"][0]["outcome"].startswith("REMEDIATED: recovered: "), done_run
    assert _policy(operator) == before


def _decide_on_the_console(
    sandbox: Sandbox, incidents: IncidentStore, issuer: LocalIssuer, incident_id: str, digest: str
) -> None:
    """Refused decisions on the console page write nothing; then the approver's approval is recorded."""
    approvals = Approvals(sandbox.session(names.OPERATOR).client("dynamodb"), _approvals_table(incidents))
    values = {
        "approvers": f"console:{APPROVER}, {PERSON}",
        "approvals_table": approvals.table,
        "remediation_queue_url": sandbox.world.remediation_queue_url,
    }
    app = create_app(oauth(incidents, issuer, **values), sandbox.session(names.CONSOLE))  # IAM enforced
    path = f"/incidents/{quote(incident_id, safe='')}"
    person = TestClient(app, base_url=PUBLIC, follow_redirects=False)
    _signed_in(person)
    form = _form(person.get(path).text)
    assert form["digest"] == digest

    def decide(client: TestClient, decision: str = "APPROVED", **changed: str) -> httpx2.Response:
        headers = {
            "Origin": changed.pop("origin", PUBLIC),
            "Sec-Fetch-Site": changed.pop("site", "same-origin"),
        }
        return client.post(path, data=form | {"decision": decision} | changed, headers=headers)

    def refused(response: httpx2.Response, status: int, why: str) -> bool:
        return response.status_code == status and why in html.unescape(response.text)

    # Each of these is refused, and nothing is decided.
    assert decide(person, origin="https://elsewhere.example").status_code == 403  # the request guard's
    assert refused(decide(person, site="cross-site"), 403, "sent from another site")
    assert refused(decide(person, form_token="0" * 64), 403, "made for another session or plan")
    forged = "sha256:" + "0" * 64  # the token is the plan's: another digest is refused before it is read
    assert refused(decide(person, digest=forged), 403, "made for another session or plan")
    assert refused(decide(person, "MAYBE"), 400, "must be one of APPROVED, REJECTED")
    issuer.grant_claims = {"aud": AUDIENCE, "sub": "user-2"}  # someone the approvers do not name
    stranger = TestClient(app, base_url=PUBLIC, follow_redirects=False)
    _signed_in(stranger)
    assert "console:user-2 is not an approver" in html.unescape(stranger.get(path).text)
    assert refused(
        decide(stranger), 403, "console:user-2 is not an approver"
    )  # even with the approver's form
    assert approvals.get(incident_id, digest) is None
    assert _requests(sandbox) == []

    done = decide(person)
    assert done.status_code == 200, done.text
    assert f"console:{APPROVER} approved the plan of {incident_id}" in html.unescape(done.text)
    decision = approvals.get(incident_id, digest)
    assert decision is not None
    assert (decision["decision"], decision["approved_by"]) == ("APPROVED", f"console:{APPROVER}")
    assert refused(decide(person), 409, f"console:{APPROVER} already decided (APPROVED)")
