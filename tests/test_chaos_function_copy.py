"""``function-copy`` on the sandbox: data-processor's code deployed as a new function whose new role was
never granted what the code calls; the copy fails the way Lambda fails it, its alarms are the ones every
watched function has, and restore leaves nothing of it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import boto3
import pytest

from chaos.faults.chaos import Chaos
from chaos.faults.errors import ChaosRefused
from chaos.faults.function_copy import FUNCTION_COPY, LOG_ACTIONS, LOGS_POLICY, copy_names
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.runtime import LocalLambdaRuntime
from deploy.alarms import function_alarms
from tests.chaos_support import Recorder
from tests.conftest import Undo

FN = names.FUNCTION_NAME
COPY, COPY_ROLE = copy_names(FN)
LOG_GROUP = f"/aws/lambda/{COPY}"


@pytest.fixture(scope="module")
def operator(sandbox: Sandbox) -> boto3.Session:
    return sandbox.session(names.OPERATOR)


@pytest.fixture
def state(operator: boto3.Session) -> Callable[[], str]:
    return lambda: world_snapshot(operator)


@pytest.fixture
def runtime(sandbox: Sandbox) -> Iterator[LocalLambdaRuntime]:
    with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE)) as rt:
        yield rt


def test_copy_creates_an_ungranted_function_last_and_restore_leaves_nothing(
    sandbox: Sandbox, operator: boto3.Session, state: Callable[[], str], runtime: LocalLambdaRuntime
) -> None:
    before = state()
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    printed: list[str] = []
    planned = Chaos(session, dry_run=True, say=printed.append)
    planned.inject(FUNCTION_COPY, FN)
    assert recorder.changes == []
    assert names.INPUT_BUCKET not in "\n".join(printed)  # environment values are never printed

    lines: list[str] = []
    chaos = Chaos(operator, say=lines.append)
    try:
        chaos.inject(FUNCTION_COPY, FN)
        assert [(c.service, c.operation) for c in chaos.calls] == [
            ("ssm", "PutParameter"),
            ("iam", "CreateRole"),
            ("iam", "PutRolePolicy"),
            ("logs", "CreateLogGroup"),
            *[("cloudwatch", "PutMetricAlarm")] * 3,
            ("lambda", "CreateFunction"),  # last: the change a diagnosis must name
        ]
        assert [c.operation for c in planned.calls] == [c.operation for c in chaos.calls]
        assert names.INPUT_BUCKET not in "\n".join(lines)
        _the_copy_is_as_described(sandbox, operator)
        failed = runtime.invoke(COPY, names.input_event())
        assert (failed.status, "AccessDenied" in str(failed.error)) == ("failed", True)
    finally:
        assert chaos.restore(FUNCTION_COPY, FN) is True
    assert state() == before  # the snapshot names every role, alarm and log group
    assert chaos.ledger.load(FN, FUNCTION_COPY.name) is None


def _the_copy_is_as_described(sandbox: Sandbox, operator: boto3.Session) -> None:
    lambda_, iam = operator.client("lambda"), operator.client("iam")
    source = lambda_.get_function_configuration(FunctionName=FN)
    copy = lambda_.get_function_configuration(FunctionName=COPY)
    kept = ("Runtime", "Handler", "Timeout", "MemorySize", "Environment", "CodeSha256")
    assert {k: copy[k] for k in kept} == {k: source[k] for k in kept}
    assert copy["Role"] == f"arn:aws:iam::{names.ACCOUNT_ID}:role/{COPY_ROLE}"
    assert not (copy.get("VpcConfig") or {}).get("SubnetIds")
    assert iam.list_role_policies(RoleName=COPY_ROLE)["PolicyNames"] == [LOGS_POLICY]
    assert iam.list_attached_role_policies(RoleName=COPY_ROLE)["AttachedPolicies"] == []
    document = iam.get_role_policy(RoleName=COPY_ROLE, PolicyName=LOGS_POLICY)["PolicyDocument"]
    assert document["Statement"] == [{"Effect": "Allow", "Action": list(LOG_ACTIONS), "Resource": "*"}]
    trust = iam.get_role(RoleName=names.ROLE_NAME)["Role"]["AssumeRolePolicyDocument"]
    assert iam.get_role(RoleName=COPY_ROLE)["Role"]["AssumeRolePolicyDocument"] == trust
    wanted = function_alarms(COPY, LOG_GROUP, sandbox.world.topic_arn)
    alarms = operator.client("cloudwatch").describe_alarms(AlarmNamePrefix=f"{COPY}-")["MetricAlarms"]
    assert sorted((a["AlarmName"], tuple(a["AlarmActions"])) for a in alarms) == sorted(
        (a["AlarmName"], tuple(a["AlarmActions"])) for a in wanted
    )


def test_copy_refuses_when_part_of_it_exists_and_changes_nothing(
    operator: boto3.Session, state: Callable[[], str], undo: Undo
) -> None:
    iam = operator.client("iam")
    trust = {"Version": "2012-10-17", "Statement": []}
    iam.create_role(RoleName=COPY_ROLE, AssumeRolePolicyDocument=json.dumps(trust))
    undo(lambda: iam.delete_role(RoleName=COPY_ROLE))
    before = state()
    chaos = Chaos(operator, say=lambda _: None)
    with pytest.raises(ChaosRefused, match=f"role {COPY_ROLE} exist"):
        chaos.inject(FUNCTION_COPY, FN)
    assert chaos.calls == []
    assert chaos.ledger.all(FN) == []
    assert state() == before


def test_copy_restore_without_inject_changes_nothing(
    operator: boto3.Session, state: Callable[[], str]
) -> None:
    before = state()
    chaos = Chaos(operator, say=lambda _: None)
    assert chaos.restore(FUNCTION_COPY, FN) is False
    assert chaos.calls == []
    assert state() == before
