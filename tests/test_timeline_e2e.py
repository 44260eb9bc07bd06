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

from datetime import datetime
from typing import Any

import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload import scratch
from chaos.workload.runtime import LocalLambdaRuntime
from supervisor.diagnosis.causality import PROPAGATION
from tests.fault_scenarios import RestoreSteps
from tests.timeline_cases import diagnosed, environment_not_recorded, own_world, restored_exactly
from tests.timeline_scenarios import NEW_ROLE, SEALER_FUNCTION, SITUATIONS, SPOOL_FUNCTION

sandbox, mcp_server_url, before = own_world("timeline")
NO_SIZED_TMP = "this machine allows no mount namespace for a sized /tmp"


@pytest.mark.parametrize(
    ("name", "fault"),
    [
        ("deploy_oom", "out_of_memory"),
        ("deploy_timeout", "timeout"),
        ("deploy_slow_init", "timeout"),
        pytest.param(  # its successes after the deploy do not bound the window
            "deploy_tmp_leak",
            "resource_exhausted",
            marks=pytest.mark.skipif(not scratch.enforced(), reason=NO_SIZED_TMP),
        ),
    ],
)
async def test_a_deploy_that_breaks_the_function_is_the_trigger_and_is_rolled_back(
    name: str,
    fault: str,
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(SITUATIONS[name], sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == [fault], case.why
    case.assert_trigger(case.staged.change("UpdateAlias20150331"))
    assert case.resolved() == [], case.why
    # The release's calls are on the timeline, and nothing from before the last success (less the lag a
    # change may take): not the world's own deployments, which a leak's successes after its cause must not
    # let in.
    changes = [datetime.fromisoformat(e.time) for e in case.diagnosis.timeline if e.kind == "change"]
    assert {c.time for c in case.staged.changes} <= set(changes), case.why
    assert min(changes) > case.staged.phase("healthy").started - PROPAGATION, case.why
    if name == "deploy_slow_init":  # no timeout is suggested: the init's need is not recorded
        [gap] = case.remediation_gaps()
        assert gap.startswith(
            f"The init of {names.ORDERS_FUNCTION} (its code outside the handler) ran past"
        ), gap
    previous = case.staged.detail["from_version"]
    case.apply_first_command(
        "lambda update-alias",
        "UpdateAlias",
        {"FunctionName": names.ORDERS_FUNCTION, "Name": names.ORDERS_ALIAS, "FunctionVersion": previous},
    )
    restored_exactly(case, steps, before)


@pytest.mark.skipif(not scratch.enforced(), reason=NO_SIZED_TMP)
async def test_a_cut_ephemeral_storage_is_the_trigger_and_its_earlier_size_the_fix(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(SITUATIONS["storage_cut"], sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["resource_exhausted"], case.why
    case.assert_trigger(case.staged.change("UpdateFunctionConfiguration20150331v2"))
    case.apply_first_command(
        "lambda update-function-configuration",
        "UpdateFunctionConfiguration",
        {"FunctionName": SPOOL_FUNCTION, "EphemeralStorage": {"Size": 1024}},
    )
    restored_exactly(case, steps, before)


async def test_an_environment_change_on_latest_is_the_trigger_and_its_fix_a_named_gap(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """report-builder has no published version: nothing holds REPORT_MB's earlier value, which CloudTrail
    never shows. No command (not even more memory: the change, not the size, is the cause)."""
    case = await diagnosed(SITUATIONS["env_heavier"], sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["out_of_memory"], case.why
    case.assert_trigger(case.staged.change("UpdateFunctionConfiguration20150331v2"))
    case.assert_no_command(environment_not_recorded(case, "REPORT_MB"))
    assert case.resolved() == [], case.why
    restored_exactly(case, steps, before)


async def test_a_wrong_configuration_value_is_blamed_on_its_change_not_on_an_older_iam_change(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """The IAM change precedes the last success by more than IAM's allowance: it cannot be the cause."""
    case = await diagnosed(SITUATIONS["wrong_config_value"], sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["configuration_error"], case.why  # not permission_loss
    case.assert_trigger(case.staged.change("UpdateFunctionConfiguration20150331v2"))
    case.assert_no_command(environment_not_recorded(case, "INPUT_BUCKET"))
    assert case.resolved() == [], case.why
    restored_exactly(case, steps, before)


async def test_a_fault_undone_is_resolved_and_the_new_one_current(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(SITUATIONS["resolved_then_new"], sandbox, mcp_server_url, runtime, steps)
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
    restored_exactly(case, steps, before)


async def test_bad_input_amid_successes_has_no_trigger_and_no_command(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(SITUATIONS["bad_input"], sandbox, mcp_server_url, runtime, steps)
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
    case.assert_input_gap("NoSuchKey")
    assert case.resolved() == [], case.why
    restored_exactly(case, steps, before)


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
    case = await diagnosed(SITUATIONS["never_granted"], sandbox, mcp_server_url, runtime, steps)
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
    restored_exactly(case, steps, before)


async def test_a_key_only_the_errors_name_is_searched_and_its_disabling_is_the_trigger(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """Neither the role (every key of the account) nor the environment names the key: only KMS's error
    does ("<key ARN> is disabled."), which is how get_recent_changes finds its DisableKey."""
    case = await diagnosed(SITUATIONS["key_in_code_disabled"], sandbox, mcp_server_url, runtime, steps)
    key = case.staged.detail["key"]
    assert case.diagnosis.fault_types == ["dependency_failure"], case.why
    case.assert_trigger(case.staged.change("DisableKey"))
    assert key in case.diagnosis.affected_resources, case.why
    assert f"Encrypt fails with DisabledException on {key}" in case.diagnosis.root_cause, case.why
    assert SEALER_FUNCTION in case.diagnosis.root_cause, case.why
    case.apply_first_command("kms enable-key", "EnableKey", {"KeyId": key})
    restored_exactly(case, steps, before)
