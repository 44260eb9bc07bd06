"""`incident-diagnose --remediate` on the sandbox, as a person runs it in a shell where `.sandbox/env` is
sourced: the command as its own process, the supervisor and the executor as the sandbox's profiles, the
person as the operator answering at the prompt, the function called by its own callers meanwhile."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from chaos.faults.iam import REVOKE_S3
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from supervisor.incident.lifecycle import EXECUTION
from supervisor.incident.store import IncidentStore, from_item
from tests.conftest import Inject
from tests.fault_scenarios import fresh_logs
from tests.test_remediation_e2e import PERSON, _policy, rewrite_policy

# The CloudTrail delivery bound: a diagnosis begun within it of the first failure is provisional, and
# re-checked once it has passed (the command starts, imports and reads the world well within it).
BOUND_SECONDS = 20


COMMAND = [sys.executable, "-m", "supervisor.agent.cli", "--lambda", names.FUNCTION_NAME, "--remediate"]


def _terminal(
    sandbox: Sandbox, incidents: IncidentStore, url: str, profile: str, answer: str, bound: int = 0
) -> subprocess.CompletedProcess[str]:
    """The command in a shell on the sandbox as ``profile``, the operator named an approver, ``answer``
    typed at its prompt, CloudTrail's delivery bound ``bound`` seconds."""
    env = _shell(sandbox, incidents, url, profile, bound)
    return subprocess.run(
        COMMAND, input=answer, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _shell(sandbox: Sandbox, incidents: IncidentStore, url: str, profile: str, bound: int) -> dict[str, str]:
    """The environment of a shell where `.sandbox/env` is sourced, as ``profile``, with the test's tables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "REMEDIATION_", "EXECUTOR_"))}
    return (
        env
        | sandbox.env
        | {
            "AWS_PROFILE": profile,
            "REMEDIATION_APPROVERS": PERSON,
            "MCP_SERVER_URL": f"{url}/sse",
            "CLOUDTRAIL_DELIVERY_BOUND_SECONDS": str(bound),
            "INCIDENT_STATE_TABLE": incidents.state_table,
            "INCIDENT_CONTEXT_TABLE": str(incidents.context_table),
            "INCIDENT_APPROVALS_TABLE": incidents.state_table.replace(
                "incident-state-", "incident-approvals-"
            ),
            "EXECUTOR_POLL_SECONDS": "0.5",
        }
    )


def _incidents(sandbox: Sandbox, incidents: IncidentStore) -> list[dict[str, Any]]:
    """Every incident in the test's state table, as the operator scans it."""
    dynamodb = sandbox.session(names.OPERATOR).client("dynamodb")
    return [from_item(item) for item in dynamodb.scan(TableName=incidents.state_table)["Items"]]


@pytest.fixture
def failing(sandbox: Sandbox, inject: Inject) -> dict[str, Any]:
    """The role's S3 policy revoked (the function fails once called); the policies as they were before."""
    operator = sandbox.session(names.OPERATOR)
    fresh_logs(sandbox, names.FUNCTION_NAME)
    rewrite_policy(operator)
    before = _policy(operator)
    inject(REVOKE_S3)
    return before


def test_the_person_at_the_keyboard_approves_and_the_executor_applies_and_proves_the_fix(
    sandbox: Sandbox,
    operator: boto3.Session,
    incidents: IncidentStore,
    mcp_server_url: str,
    failing: dict[str, Any],
    traffic: Callable[[], None],
) -> None:
    traffic()  # the function's callers, failing from now on, through the diagnosis and the fix
    ran = _terminal(sandbox, incidents, mcp_server_url, names.OPERATOR, "yes\n", BOUND_SECONDS)

    assert ran.returncode == 0, ran.stderr + ran.stdout
    (incident,) = _incidents(sandbox, incidents)
    incident_id = str(incident["incident_id"])
    assert incident["status"] == "REMEDIATED"
    assert _policy(operator) == failing  # the operator reads the role's policy back as it was
    said = ran.stderr
    # Provisional first, re-checked once the bound had passed, then planned, shown and asked about.
    assert f"incident {incident_id}: DIAGNOSED" in said
    assert "provisional: CloudTrail may not have delivered every change yet" in said
    assert "re-check: finalised" in said
    assert said.index("re-check: finalised") < said.index(f"approved by {PERSON}")
    assert said.index(f"approved by {PERSON}") < said.index("executor: REMEDIATED: recovered: ")
    shown = ran.stdout
    assert "Fault types: permission_loss" in shown
    assert f"digest: {incident['plan_digest']}" in shown
    assert "Approve this plan (" + str(incident["plan_digest"]) + ")?" in shown  # the prompt, on stdout
    assert "call:    iam PutRolePolicy" in shown
    *_, ended, where = shown.rstrip().splitlines()
    assert ended.endswith(f"{incident_id}: REMEDIATED ({incident['error_reason']})")
    assert str(incident["error_reason"]).startswith("recovered: ")
    assert where == f"every call and check: incident-remediate show '{incident_id}'"
    # The decision was the person's own, recorded as them; the calls the executor's.
    approvals = operator.client("dynamodb")
    table = incidents.state_table.replace("incident-state-", "incident-approvals-")
    (decision,) = [from_item(i) for i in approvals.scan(TableName=table)["Items"]]
    assert (decision["approved_by"], decision["digest"]) == (PERSON, incident["plan_digest"])
    assert str(decision["redeemed_by"]).startswith("incident-diagnose-")
    execution = json.loads((incidents.get_context(incident_id) or {})[EXECUTION]["S"])
    assert [c["call"]["operation"] for c in execution["calls"]] == ["PutRolePolicy"]


def test_no_answer_decides_nothing_and_no_rejects_and_neither_applies_anything(
    sandbox: Sandbox,
    operator: boto3.Session,
    incidents: IncidentStore,
    mcp_server_url: str,
    failing: dict[str, Any],
    runtime: LocalLambdaRuntime,
) -> None:
    revoked = _policy(operator)
    # The supervisor's identity is no approver: refused before any incident is opened.
    refused = _terminal(sandbox, incidents, mcp_server_url, names.SUPERVISOR, "yes\n")
    assert refused.returncode == 1, refused.stderr
    assert (
        f"you are arn:aws:iam::{names.ACCOUNT_ID}:user/{names.SUPERVISOR}, not one of REMEDIATION_APPROVERS"
        in (refused.stderr)
    )
    assert _incidents(sandbox, incidents) == []

    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "failed"
    ran = _terminal(sandbox, incidents, mcp_server_url, names.OPERATOR, "")  # stdin closed: no answer

    assert ran.returncode == 1
    (incident,) = _incidents(sandbox, incidents)
    assert incident["status"] == "AWAITING_APPROVAL"
    assert "nothing decided: the plan awaits a decision until " in ran.stderr
    assert (
        f"incident-remediate approve {incident['incident_id']} --digest {incident['plan_digest']}"
        in ran.stderr
    )
    assert _policy(operator) == revoked != failing

    rejected = _terminal(sandbox, incidents, mcp_server_url, names.OPERATOR, "no\n")

    assert rejected.returncode == 1
    second = next(i for i in _incidents(sandbox, incidents) if i["incident_id"] != incident["incident_id"])
    assert second["status"] == "REJECTED"
    assert str(second["error_reason"]).startswith(f"rejected by {PERSON} at ")
    assert f"rejected by {PERSON}" in rejected.stderr
    assert _policy(operator) == revoked


def test_an_interrupt_while_the_executor_verifies_undoes_the_fix_at_once(
    sandbox: Sandbox,
    operator: boto3.Session,
    incidents: IncidentStore,
    mcp_server_url: str,
    failing: dict[str, Any],
    runtime: LocalLambdaRuntime,
) -> None:
    """Nobody calls the function, so the executor waits for invocations after the fix; interrupted then
    (Ctrl-C), the command undoes the fix it applied before it stops: the world as it found it, the
    incident NOT_REMEDIATED, nothing left for a watchdog the sandbox does not run."""
    revoked = _policy(operator)
    assert runtime.invoke(names.FUNCTION_NAME, names.input_event()).status == "failed"
    process = subprocess.Popen(
        COMMAND,
        env=_shell(sandbox, incidents, mcp_server_url, names.OPERATOR, 0),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write("yes\n")
    process.stdin.flush()
    try:
        deadline = time.monotonic() + 240
        while [i["status"] for i in _incidents(sandbox, incidents)] != ["VERIFYING"]:
            assert process.poll() is None, process.communicate(timeout=5)
            assert time.monotonic() < deadline, "the executor never reached VERIFYING"
            time.sleep(0.2)
        assert _policy(operator) == failing  # the fix is applied and awaits its proof
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 1, stderr
    assert "interrupted while the executor ran: undoing what it applied" in stderr
    (incident,) = _incidents(sandbox, incidents)
    assert incident["status"] == "NOT_REMEDIATED"
    assert "1 applied step(s) undone, the world read back as before" in str(incident["error_reason"])
    assert _policy(operator) == revoked != failing
    assert f"then NOT_REMEDIATED: {incident['error_reason']}" in stderr
