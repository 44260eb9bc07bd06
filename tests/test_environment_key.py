"""A function's environment variables under a customer managed key: in the sandbox, the grant Lambda makes
for the role and the Invoke errors a key that cannot decrypt them causes at the next cold start
(chaos/workload/environment_key.py, chaos/sandbox/extensions/lambda_kms.py; sources in their docstrings);
in ``get_lambda_config``, the key's state and who may decrypt with it, as the MCP server's identity reads
them.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from chaos.faults.chaos import Chaos
from chaos.faults.environment_key import KEY_DISABLE
from chaos.faults.errors import ChaosRefused
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.async_invocation import AsyncInvoker
from chaos.workload.runtime import LocalLambdaRuntime, RuntimeSettings
from mcp_server.aws import AwsClients
from mcp_server.contract import GetLambdaConfigArgs, GetRecentChangesArgs
from mcp_server.contract.changes import ChangeEventDetail
from mcp_server.settings import ServerSettings
from mcp_server.tools.changes import recent_changes
from mcp_server.tools.lambda_config import lambda_config
from tests.conftest import Undo
from tests.packages import zip_files
from tests.test_async_invocation import FakeClock, _lambda_metric
from tests.tool_support import call_tool

HANDLER = """\
import os


def handler(event, context):
    return {"greeting": os.environ["GREETING"]}
"""


@pytest.fixture
def operator(sandbox: Sandbox) -> boto3.Session:
    return sandbox.session(names.OPERATOR)


@pytest.fixture
def key(operator: boto3.Session, undo: Undo) -> str:
    kms = operator.client("kms")
    arn: str = kms.create_key(Description="order settings")["KeyMetadata"]["Arn"]
    undo(lambda: kms.schedule_key_deletion(KeyId=arn, PendingWindowInDays=7))
    return arn


@pytest.fixture
def make_function(operator: boto3.Session, undo: Undo) -> Callable[[str], tuple[str, str]]:
    """A function whose variables are encrypted with the key given: its name and its role's ARN."""
    iam, lambda_ = operator.client("iam"), operator.client("lambda")

    def make(key_arn: str) -> tuple[str, str]:
        name = f"kms-{uuid.uuid4().hex[:8]}"
        trust = {
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.LAMBDA_SERVICE}"},
            "Action": "sts:AssumeRole",
        }
        document = json.dumps({"Version": "2012-10-17", "Statement": [trust]})
        role = iam.create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument=document)["Role"]["Arn"]
        undo(lambda: iam.delete_role(RoleName=f"{name}-role"))
        lambda_.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": zip_files({"handler.py": HANDLER})},
            Environment={"Variables": {"GREETING": "hello"}},
            KMSKeyArn=key_arn,
        )
        undo(lambda: lambda_.delete_function(FunctionName=name))
        return name, role

    return make


def _new_environments(operator: boto3.Session, name: str) -> None:
    """A setting the runtime sees changed: the next invocation needs a new execution environment."""
    lambda_ = operator.client("lambda")
    timeout = lambda_.get_function_configuration(FunctionName=name)["Timeout"]
    lambda_.update_function_configuration(FunctionName=name, Timeout=timeout + 1)


def _revoke_grants(kms: Any, key_arn: str) -> None:
    for grant in kms.list_grants(KeyId=key_arn)["Grants"]:
        kms.revoke_grant(KeyId=key_arn, GrantId=grant["GrantId"])


BREAKS: dict[str, tuple[Callable[[Any, str], object], str]] = {
    "disabled": (lambda kms, arn: kms.disable_key(KeyId=arn), "KMSDisabledException"),
    "pending deletion": (
        lambda kms, arn: kms.schedule_key_deletion(KeyId=arn, PendingWindowInDays=7),
        "KMSInvalidStateException",
    ),
    "grant revoked": (_revoke_grants, "KMSAccessDeniedException"),
}


def test_lambda_grants_the_role_decrypt_on_the_key_and_the_function_reads_its_variables(
    operator: boto3.Session,
    key: str,
    make_function: Callable[[str], tuple[str, str]],
    runtime: LocalLambdaRuntime,
) -> None:
    name, role = make_function(key)
    grants = operator.client("kms").list_grants(KeyId=key)["Grants"]
    assert [(g["GranteePrincipal"], g["Operations"]) for g in grants] == [(role, ["Decrypt"])]
    config = operator.client("lambda").get_function_configuration(FunctionName=name)
    assert config["KMSKeyArn"] == key
    invocation = runtime.invoke(name, {})
    assert (invocation.status, invocation.result) == ("succeeded", {"greeting": "hello"})


@pytest.mark.parametrize("broken", list(BREAKS))
def test_a_key_that_cannot_decrypt_refuses_the_next_cold_start_with_invoke_s_own_error(
    broken: str,
    operator: boto3.Session,
    sandbox: Sandbox,
    key: str,
    make_function: Callable[[str], tuple[str, str]],
    runtime: LocalLambdaRuntime,
) -> None:
    kms = operator.client("kms")
    name, role = make_function(key)
    assert runtime.invoke(name, {}).status == "succeeded"
    breaking, error_type = BREAKS[broken]
    breaking(kms, key)
    # Decrypted once per environment: the warm one keeps its variables.
    assert runtime.invoke(name, {}).status == "succeeded"
    invoked = _lambda_metric(sandbox, name, "Invocations")

    _new_environments(operator, name)
    refused = runtime.invoke(name, {})
    assert (refused.status, refused.error_type) == ("refused", error_type)
    unable = f"{error_type}: Lambda was unable to decrypt the environment variables"
    assert (refused.error or "").startswith(unable)
    assert (refused.log_lines, refused.logs_written, refused.result) == ([], False, None)
    assert _lambda_metric(sandbox, name, "Invocations") == invoked  # an invocation error is not recorded

    # Undone as a person would: the key enabled (after cancelling its deletion), or a new grant made by
    # setting the role again.
    if broken == "grant revoked":
        operator.client("lambda").update_function_configuration(FunctionName=name, Role=role)
    else:
        if broken == "pending deletion":
            kms.cancel_key_deletion(KeyId=key)
        kms.enable_key(KeyId=key)
    assert runtime.invoke(name, {}).status == "succeeded"


def test_a_key_that_does_not_exist_is_not_found(
    operator: boto3.Session, make_function: Callable[[str], tuple[str, str]], runtime: LocalLambdaRuntime
) -> None:
    missing = f"arn:aws:kms:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:key/{uuid.uuid4()}"
    name, _ = make_function(missing)
    assert runtime.invoke(name, {}).error_type == "KMSNotFoundException"


def test_a_key_that_is_not_enabled_refuses_encrypt_and_decrypt_naming_itself(
    operator: boto3.Session, key: str
) -> None:
    """KMS's own refusals (chaos/sandbox/extensions/kms_key_states.py): a disabled key, and one pending
    deletion, whatever the ciphertext was made with before; usable again once enabled."""
    kms = operator.client("kms")
    sealed = kms.encrypt(KeyId=key, Plaintext=b"entry")["CiphertextBlob"]
    kms.disable_key(KeyId=key)
    for operation, params in (
        ("encrypt", {"KeyId": key, "Plaintext": b"entry"}),
        ("decrypt", {"CiphertextBlob": sealed}),
        ("generate_data_key", {"KeyId": key, "KeySpec": "AES_256"}),
    ):
        with pytest.raises(kms.exceptions.DisabledException, match=f"^.*: {key} is disabled[.]$"):
            getattr(kms, operation)(**params)
    kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7)
    with pytest.raises(kms.exceptions.KMSInvalidStateException, match=f"{key} is pending deletion[.]$"):
        kms.decrypt(CiphertextBlob=sealed)
    kms.cancel_key_deletion(KeyId=key)
    kms.enable_key(KeyId=key)
    assert kms.decrypt(CiphertextBlob=sealed)["Plaintext"] == b"entry"


def test_an_asynchronous_event_refused_by_the_key_waits_in_the_queue_and_runs_once_the_key_is_back(
    sandbox: Sandbox,
    operator: boto3.Session,
    key: str,
    make_function: Callable[[str], tuple[str, str]],
    runtime: LocalLambdaRuntime,
) -> None:
    name, _ = make_function(key)
    clock = FakeClock()
    invoker = AsyncInvoker(runtime, sandbox.session(names.LAMBDA_SERVICE), clock=clock)
    invoker.collect()
    operator.client("kms").disable_key(KeyId=key)
    operator.client("lambda").invoke(FunctionName=name, InvocationType="Event", Payload=b"{}")
    invoker.collect()
    (first,) = invoker.pump()
    assert (first.status, first.invoke_count) == ("refused", 0)  # returned to the queue, not discarded
    assert first.next_attempt_at is not None

    operator.client("kms").enable_key(KeyId=key)
    clock.advance(first.next_attempt_at - clock.now())
    (second,) = invoker.pump()
    assert (second.status, second.invoke_count) == ("succeeded", 1)


def _clients(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))


def _key_as_read(sandbox: Sandbox, name: str) -> dict[str, Any] | None:
    clients = _clients(sandbox)
    answer = call_tool(clients, lambda_config, GetLambdaConfigArgs(lambda_name=name)).model_dump(mode="json")
    assert answer["gaps"] == []
    key: dict[str, Any] | None = answer.get("EnvironmentKey")
    return key


def test_the_configuration_tool_reads_the_key_s_state_and_who_may_decrypt_with_it(
    sandbox: Sandbox, operator: boto3.Session, key: str, make_function: Callable[[str], tuple[str, str]]
) -> None:
    name, role = make_function(key)
    assert _key_as_read(sandbox, name) == {"KeyState": "Enabled", "DecryptGrantees": [role]}
    kms = operator.client("kms")
    _revoke_grants(kms, key)
    kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7)
    read = _key_as_read(sandbox, name)
    assert read is not None
    assert (read["KeyState"], read["DecryptGrantees"]) == ("PendingDeletion", [])
    deletion = kms.describe_key(KeyId=key)["KeyMetadata"]["DeletionDate"]
    assert read["DeletionDate"] == deletion.isoformat()


def test_a_function_without_a_key_of_its_own_has_no_key_to_read(sandbox: Sandbox) -> None:
    assert _key_as_read(sandbox, names.FUNCTION_NAME) is None


def test_the_change_history_finds_what_was_done_to_the_function_s_key(
    sandbox: Sandbox, operator: boto3.Session, key: str, make_function: Callable[[str], tuple[str, str]]
) -> None:
    name, _ = make_function(key)
    operator.client("kms").disable_key(KeyId=key)
    args = GetRecentChangesArgs(lambda_name=name, hours=1, detail=True)
    answer = call_tool(_clients(sandbox), recent_changes, args)
    assert f"key {key}" in answer.searched
    (disabled,) = [event for event in answer.events if event.event_name == "DisableKey"]
    assert isinstance(disabled, ChangeEventDetail)
    assert disabled.service == "kms.amazonaws.com"
    assert [(r.type, r.name) for r in disabled.resources] == [("AWS::KMS::Key", key.rsplit("/", 1)[1])]
    assert disabled.matched == [f"key {key}"]


def test_an_environment_past_its_lifetime_is_replaced_and_meets_the_key_s_state(
    operator: boto3.Session,
    sandbox: Sandbox,
    key: str,
    make_function: Callable[[str], tuple[str, str]],
    runtime: LocalLambdaRuntime,
) -> None:
    """Lambda replaces environments every few hours: past the lifetime (here a microsecond, so every time),
    the next invocation is a cold start (Init Duration reported), which a disabled key refuses."""
    name, _ = make_function(key)
    started, reused = runtime.invoke(name, {}), runtime.invoke(name, {})
    assert started.init_duration_ms is not None
    assert reused.init_duration_ms is None  # within the default lifetime (two hours): warm
    runtime.retire(name)  # its lifetime over
    assert runtime.invoke(name, {}).init_duration_ms is not None
    settings = RuntimeSettings(environment_lifetime_seconds=1e-6)
    with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE), settings) as recycling:
        invocations = [recycling.invoke(name, {}) for _ in range(2)]
        assert [i.status for i in invocations] == ["succeeded"] * 2
        assert None not in [i.init_duration_ms for i in invocations]  # the second one started anew
        operator.client("kms").disable_key(KeyId=key)
        assert recycling.invoke(name, {}).error_type == "KMSDisabledException"


def _role_grants(kms: Any, key: str, role: str) -> list[tuple[str, list[str]]]:
    return [
        (g["Name"], g["Operations"])
        for g in kms.list_grants(KeyId=key)["Grants"]
        if g["GranteePrincipal"] == role
    ]


def test_the_injector_disables_the_key_schedules_its_deletion_or_revokes_the_grant_and_restores_it(
    operator: boto3.Session, undo: Undo
) -> None:
    kms, function = operator.client("kms"), names.ORDER_WORKER_FUNCTION
    config = operator.client("lambda").get_function_configuration(FunctionName=function)
    key, role = config["KMSKeyArn"], config["Role"]
    # the one Lambda made when the function was created (the sandbox's name for it)
    lambda_grant = [("lambda-environment-variables", ["Decrypt"])]
    assert _role_grants(kms, key, role) == lambda_grant
    before = world_snapshot(operator)
    cases: tuple[tuple[str, str, list[tuple[str, list[str]]], list[str]], ...] = (
        ("disabled", "Disabled", lambda_grant, ["DisableKey", "EnableKey"]),
        (
            "pending-deletion",
            "PendingDeletion",
            lambda_grant,
            ["ScheduleKeyDeletion", "CancelKeyDeletion", "EnableKey"],
        ),
        ("grant-revoked", "Enabled", [], ["RevokeGrant", "CreateGrant"]),
    )
    for state, after, grants_after, calls in cases:
        chaos = Chaos(operator, say=lambda _: None)
        undo(functools.partial(chaos.restore, KEY_DISABLE, function))
        saved = chaos.inject(KEY_DISABLE, function, state=state)
        assert (saved.prior["function"], saved.prior["key"], saved.prior["role"]) == (function, key, role)
        assert [(g["Name"], g["Operations"]) for g in saved.prior["grants"]] == lambda_grant
        assert kms.describe_key(KeyId=key)["KeyMetadata"]["KeyState"] == after
        assert _role_grants(kms, key, role) == grants_after
        chaos.inject(KEY_DISABLE, function, state=state)  # again: nothing more is changed
        assert chaos.restore(KEY_DISABLE, function) is True
        assert kms.describe_key(KeyId=key)["KeyMetadata"]["KeyState"] == "Enabled"
        assert _role_grants(kms, key, role) == lambda_grant
        assert [c.operation for c in chaos.calls if c.service == "kms"] == calls
    assert world_snapshot(operator) == before


def test_the_injector_refuses_a_function_whose_variables_use_lambda_s_own_key_or_a_key_not_enabled(
    operator: boto3.Session, undo: Undo
) -> None:
    chaos = Chaos(operator, say=lambda _: None)
    with pytest.raises(ChaosRefused, match="Lambda's own key"):
        chaos.inject(KEY_DISABLE, names.FUNCTION_NAME)
    kms, function = operator.client("kms"), names.ORDER_WORKER_FUNCTION
    key = operator.client("lambda").get_function_configuration(FunctionName=function)["KMSKeyArn"]
    kms.disable_key(KeyId=key)
    undo(lambda: kms.enable_key(KeyId=key))
    with pytest.raises(ChaosRefused, match="is Disabled, not Enabled"):
        chaos.inject(KEY_DISABLE, function)
    assert chaos.calls == []  # refused before anything changed (the ledger included)


def test_the_injector_refuses_a_state_it_does_not_know_and_leaves_the_key_and_its_ledger_alone(
    operator: boto3.Session, undo: Undo
) -> None:
    kms, function = operator.client("kms"), names.ORDER_WORKER_FUNCTION
    key = operator.client("lambda").get_function_configuration(FunctionName=function)["KMSKeyArn"]
    chaos = Chaos(operator, say=lambda _: None)
    undo(functools.partial(chaos.restore, KEY_DISABLE, function))
    with pytest.raises(
        ChaosRefused, match="'deleted' is not one of: disabled, pending-deletion, grant-revoked"
    ):
        chaos.inject(KEY_DISABLE, function, state="deleted")
    assert kms.describe_key(KeyId=key)["KeyMetadata"]["KeyState"] == "Enabled"
    assert [c.operation for c in chaos.calls if c.service == "kms"] == []
    assert chaos.ledger.load(function, KEY_DISABLE.name) is None
