"""Failures outside the drill that came back wrong (issue 42), end to end: each staged in the sandbox by
the operator's own calls (tests/misses_scenarios.py), diagnosed by the `rules` model over MCP, and held to
the exact fault set, trigger, resolved list and remediation; a command is applied as a person approving it
would and must make the function succeed, and no step may set a value the trigger itself set."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from tests.fault_scenarios import RestoreSteps
from tests.misses_scenarios import (
    DENY_POLICY,
    MISSING_KEY,
    misspelled_bucket,
    one_missing_object,
    put_back_then_new,
    receive_denied_managed_grant,
    rollback_to_buggy,
    truncated_bodies,
    unreported_errors,
)
from tests.timeline_cases import diagnosed, environment_not_recorded, own_world, restored_exactly

sandbox, mcp_server_url, before = own_world("misses")


async def test_a_fault_put_back_is_resolved_and_the_later_change_is_the_trigger(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """The timeout cut and put back is over: resolved, its changes no candidates for the later fault, and
    no step sets the timeout (least of all to the 1 s the cut set)."""
    case = await diagnosed(put_back_then_new, sandbox, mcp_server_url, runtime, steps)
    cut, put_back, removed = case.staged.changes
    assert case.diagnosis.fault_types == ["configuration_error"], case.why
    case.assert_trigger(removed)
    assert "Also changed in that time" not in case.diagnosis.root_cause, case.why
    resolved = case.resolved()
    assert [entry["fault_type"] for entry in resolved] == ["timeout"], case.why
    for side, change in (("caused_by", cut), ("undone_by", put_back)):
        assert datetime.fromisoformat(resolved[0][side]["time"]) == change.time, case.why
    case.assert_no_command(
        "the value INPUT_BUCKET had is not recorded (CloudTrail hides environment values): no command can "
        "set it back"
    )
    restored_exactly(case, steps, before)


async def test_a_rollback_to_a_buggy_version_is_undone_to_the_version_the_alias_held(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """Not the version numbered before the buggy one: the one the alias pointed at just before the move.
    The error is raised inside the standard library's json; the frame cited is the function's own."""
    case = await diagnosed(rollback_to_buggy, sandbox, mcp_server_url, runtime, steps)
    staged = case.staged
    assert case.diagnosis.fault_types == ["code_error"], case.why
    case.assert_trigger(staged.changes[-1])
    frames = [p.value for p in case.diagnosis.evidence if p.field.endswith(".error.frame")]
    assert frames, case.why
    assert all(str(frame).split("/")[-1].startswith("orders_api.py:") for frame in frames), frames
    case.apply_first_command(
        "lambda update-alias",
        "UpdateAlias",
        {
            "FunctionName": names.ORDERS_FUNCTION,
            "Name": names.ORDERS_ALIAS,
            "FunctionVersion": staged.detail["fixed"],
        },
    )
    restored_exactly(case, steps, before)


async def test_a_node_function_failing_on_cut_bodies_amid_successes_is_bad_input(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """The runtime's SyntaxError raised inside the code, yet the same version and configuration succeed
    between the failures and nothing was deployed: the input's, with no command."""
    case = await diagnosed(truncated_bodies, sandbox, mcp_server_url, runtime, steps)
    diagnosis = case.diagnosis
    assert diagnosis.fault_types == ["bad_input"], case.why
    assert diagnosis.trigger is None, case.why
    assert "SyntaxError" in diagnosis.root_cause, case.why
    case.assert_input_gap("SyntaxError")
    assert case.resolved() == [], case.why
    restored_exactly(case, steps, before)


async def test_error_records_stand_for_failures_the_platform_did_not_report(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """SystemLogLevel WARN keeps the start and report records from being written: the error records (each
    with its request id) are the failures, the environment change their trigger."""
    case = await diagnosed(unreported_errors, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["configuration_error"], case.why
    case.assert_trigger(case.staged.changes[-1])
    assert "INPUT_BUCKET" in case.diagnosis.root_cause, case.why
    case.assert_no_command(
        "the value INPUT_BUCKET had is not recorded (CloudTrail hides environment values): no command can "
        "set it back"
    )
    restored_exactly(case, steps, before)


async def test_a_denial_right_after_an_environment_change_is_that_change_s_configuration_error(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """The role did not change; the bucket the environment names did: not permission_loss, no wider role."""
    case = await diagnosed(misspelled_bucket, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["configuration_error"], case.why
    case.assert_trigger(case.staged.changes[-1])
    case.assert_no_command(environment_not_recorded(case, "INPUT_BUCKET"))
    restored_exactly(case, steps, before)


async def test_a_deny_on_receive_blocks_a_grant_held_in_a_managed_policy(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """The Deny decides whatever policy holds the grant: permission_loss, the Deny's PutRolePolicy the
    trigger (not the earlier moves of the grant), and deleting the Deny drains the queue."""
    case = await diagnosed(receive_denied_managed_grant, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["permission_loss"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    case.apply_first_command(
        "iam delete-role-policy",
        "DeleteRolePolicy",
        {"RoleName": names.ORDER_WORKER_ROLE, "PolicyName": DENY_POLICY},
    )
    restored_exactly(case, steps, before)


async def test_one_request_naming_an_object_that_does_not_exist_is_its_input(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """One failure, the newest invocation, after successes on the same version with nothing changed: the
    object its request names (and no success did) does not exist. The input's, naming the key."""
    case = await diagnosed(one_missing_object, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["bad_input"], case.why
    assert case.diagnosis.trigger is None, case.why
    assert f"s3://{names.INPUT_BUCKET}/{MISSING_KEY}" in case.diagnosis.root_cause, case.why
    case.assert_input_gap("NoSuchKey", "one bad request")
    assert case.resolved() == [], case.why
    restored_exactly(case, steps, before)
