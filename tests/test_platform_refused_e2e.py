"""The platform refusing to start the code (issue 45), end to end: order-worker's environment-variable key
made unusable by the operator's own boto3 calls (not the project's injectors), orders polled from its queue
as Lambda does once its warm environments are replaced, then diagnosed by the `rules` model over MCP and
held to the exact fault set, trigger and remediation; where a command exists it is applied as a person
approving it would and the queue must drain."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from chaos.drill import event_traffic
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime, RuntimeSettings
from chaos.workload.sqs_poller import OK
from tests.fault_scenarios import RestoreSteps, Undo
from tests.timeline_cases import diagnosed, own_world, restored_exactly
from tests.timeline_scenarios import IAM_QUIET_SECONDS, Stage, Staged
from tests.worker_orders import WorkerOrders

sandbox, mcp_server_url, before = own_world("platform")

ORDER = "platform-0001"
LIFETIME_SECONDS = 0.01  # the environments' lifetime in this module's own runtime: a cold start after it


def _key_made_unusable(
    event_name: str, unusable: Callable[[Any, str, str], object]
) -> Callable[[Sandbox, LocalLambdaRuntime, Undo], Staged]:
    """Orders processed; the operator's ``unusable(kms, key, role)`` call; the environments replaced; orders
    that the poller's invocations cannot run (Invoke's KMS errors), which stay in orders-queue."""

    def situation(sandbox: Sandbox, _: LocalLambdaRuntime, undo: Undo) -> Staged:
        runtime = LocalLambdaRuntime(
            sandbox.session(names.LAMBDA_SERVICE),
            RuntimeSettings(environment_lifetime_seconds=LIFETIME_SECONDS),
        )
        undo(runtime.close)
        stage = Stage(sandbox, runtime, names.ORDER_WORKER_FUNCTION, None)
        kms = stage.operator.client("kms")
        config = stage.operator.client("lambda").get_function_configuration(FunctionName=stage.function)
        key, role = config["KMSKeyArn"], config["Role"]
        orders = WorkerOrders(sandbox, runtime, stage, ORDER, undo)

        time.sleep(IAM_QUIET_SECONDS)  # the world's making and earlier restores: well before the last success
        assert orders.phase("healthy", 2) == [OK]
        assert event_traffic.waiting(stage.operator) == 0
        stage.call(event_name, lambda: unusable(kms, key, role))
        time.sleep(LIFETIME_SECONDS)  # Lambda replaces the warm environment: the next invocation starts one
        refused = orders.phase("refused", 3)
        assert refused, "the poller took no batch"
        assert OK not in refused, refused
        assert event_traffic.waiting(stage.operator) == 3
        return stage.finish(None, works=orders.drains, key=key, role=role)

    situation.__name__ = f"key_{event_name}"
    return situation


def _enable(kms: Any, key: str) -> None:
    state = kms.describe_key(KeyId=key)["KeyMetadata"]["KeyState"]
    if state == "PendingDeletion":
        kms.cancel_key_deletion(KeyId=key)
    if state != "Enabled":
        kms.enable_key(KeyId=key)


def _granted_again(kms: Any, lambda_: Any, config: dict[str, Any]) -> None:
    """Lambda's grant for the role made again, as AWS's knowledge center does: by updating the role."""
    grants = kms.list_grants(KeyId=config["KMSKeyArn"])["Grants"]
    if not any(g["GranteePrincipal"] == config["Role"] for g in grants):
        lambda_.update_function_configuration(FunctionName=config["FunctionName"], Role=config["Role"])


@pytest.fixture
def kms_restored(sandbox: Sandbox, steps: RestoreSteps) -> RestoreSteps:
    """Whatever a test did to order-worker's key is undone last: enabled again, Lambda's grant made again."""
    operator = sandbox.session(names.OPERATOR)
    kms, lambda_ = operator.client("kms"), operator.client("lambda")
    config = lambda_.get_function_configuration(FunctionName=names.ORDER_WORKER_FUNCTION)
    steps(lambda: _granted_again(kms, lambda_, config))
    steps(lambda: _enable(kms, config["KMSKeyArn"]))
    return steps


async def test_a_disabled_environment_key_is_platform_refused_and_enabling_it_drains_the_queue(
    sandbox: Sandbox, mcp_server_url: str, runtime: LocalLambdaRuntime, kms_restored: RestoreSteps
) -> None:
    situation = _key_made_unusable("DisableKey", lambda kms, key, _: kms.disable_key(KeyId=key))
    case = await diagnosed(situation, sandbox, mcp_server_url, runtime, kms_restored)
    assert case.diagnosis.fault_types == ["platform_refused"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    key = case.staged.detail["key"]
    assert key in case.diagnosis.affected_resources, case.why
    case.apply_first_command("kms enable-key", "EnableKey", {"KeyId": key})


async def test_a_key_pending_deletion_is_cancelled_first_and_enabled_next(
    sandbox: Sandbox, mcp_server_url: str, runtime: LocalLambdaRuntime, kms_restored: RestoreSteps
) -> None:
    situation = _key_made_unusable(
        "ScheduleKeyDeletion", lambda kms, key, _: kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7)
    )
    case = await diagnosed(situation, sandbox, mcp_server_url, runtime, kms_restored)
    assert case.diagnosis.fault_types == ["platform_refused"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    key = case.staged.detail["key"]
    step = case.diagnosis.remediation_plan[0]
    assert step.command == f"aws kms cancel-key-deletion --key-id {key} --region {sandbox.region}", case.why
    assert f"aws kms enable-key --key-id {key} --region {sandbox.region}" in step.details, case.why


async def test_a_revoked_grant_is_platform_refused_with_the_gap_named(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    kms_restored: RestoreSteps,
) -> None:
    """Lambda's grant for the role revoked: the key is Enabled, but no grant lets the role decrypt."""

    def revoke(kms: Any, key: str, role: str) -> None:
        grants = kms.list_grants(KeyId=key)["Grants"]
        [grant] = [g for g in grants if g["GranteePrincipal"] == role]
        kms.revoke_grant(KeyId=key, GrantId=grant["GrantId"])

    case = await diagnosed(
        _key_made_unusable("RevokeGrant", revoke), sandbox, mcp_server_url, runtime, kms_restored
    )
    assert case.diagnosis.fault_types == ["platform_refused"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    case.assert_no_command(
        f"No single command restores its grant for the execution role {case.staged.detail['role']}: switch "
        "the function to another role and back (Lambda grants the role again), or give it a usable key and "
        "its variables again."
    )
    restored_exactly(case, kms_restored, before)
