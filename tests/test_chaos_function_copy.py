"""``function-copy`` on the sandbox: data-processor's (Python) and order-intake's (Node.js) code deployed as a
new function whose new role was never granted what the code calls; the copy fails the way Lambda fails it,
its alarms are the ones every watched function has, and restore leaves nothing of it."""

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
# Each source, its own role, the event it serves, and the operation its copy is denied.
SOURCES = {
    FN: (names.ROLE_NAME, names.input_event(), "when calling the GetObject operation"),
    names.ORDER_INTAKE_FUNCTION: (
        names.ORDER_INTAKE_ROLE,
        names.order_submission(order_id="chaos-copy-test"),
        "is not authorized to perform: dynamodb:PutItem",
    ),
}


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


@pytest.mark.parametrize("source", list(SOURCES))
def test_copy_creates_an_ungranted_function_last_and_restore_leaves_nothing(
    sandbox: Sandbox,
    operator: boto3.Session,
    state: Callable[[], str],
    runtime: LocalLambdaRuntime,
    source: str,
) -> None:
    role, event, denied = SOURCES[source]
    copy, _ = copy_names(source)
    before = state()
    session = sandbox.session(names.OPERATOR)
    recorder = Recorder(session)
    printed: list[str] = []
    planned = Chaos(session, dry_run=True, say=printed.append)
    planned.inject(FUNCTION_COPY, source)
    assert recorder.changes == []
    assert names.INPUT_BUCKET not in "\n".join(printed)  # environment values are never printed

    lines: list[str] = []
    chaos = Chaos(operator, say=lines.append)
    try:
        chaos.inject(FUNCTION_COPY, source)
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
        _the_copy_is_as_described(sandbox, operator, source, role)
        failed = runtime.invoke(copy, event)
        assert (failed.status, failed.error_type) == (
            "failed",
            "AccessDenied" if source == FN else "AccessDeniedException",
        )
        assert denied in str(failed.error)
    finally:
        assert chaos.restore(FUNCTION_COPY, source) is True
    assert state() == before  # the snapshot names every role, alarm and log group
    assert chaos.ledger.load(source, FUNCTION_COPY.name) is None


def _the_copy_is_as_described(sandbox: Sandbox, operator: boto3.Session, name: str, role: str) -> None:
    lambda_, iam = operator.client("lambda"), operator.client("iam")
    copy_name, copy_role = copy_names(name)
    source = lambda_.get_function_configuration(FunctionName=name)
    copy = lambda_.get_function_configuration(FunctionName=copy_name)
    kept = ("Runtime", "Handler", "Timeout", "MemorySize", "Environment", "CodeSha256")
    assert {k: copy[k] for k in kept} == {k: source[k] for k in kept}
    assert copy["Role"] == f"arn:aws:iam::{names.ACCOUNT_ID}:role/{copy_role}"
    assert not (copy.get("VpcConfig") or {}).get("SubnetIds")
    assert iam.list_role_policies(RoleName=copy_role)["PolicyNames"] == [LOGS_POLICY]
    assert iam.list_attached_role_policies(RoleName=copy_role)["AttachedPolicies"] == []
    document = iam.get_role_policy(RoleName=copy_role, PolicyName=LOGS_POLICY)["PolicyDocument"]
    assert document["Statement"] == [{"Effect": "Allow", "Action": list(LOG_ACTIONS), "Resource": "*"}]
    trust = iam.get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]
    assert iam.get_role(RoleName=copy_role)["Role"]["AssumeRolePolicyDocument"] == trust
    wanted = function_alarms(copy_name, f"/aws/lambda/{copy_name}", sandbox.world.topic_arn)
    alarms = operator.client("cloudwatch").describe_alarms(AlarmNamePrefix=f"{copy_name}-")["MetricAlarms"]
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
