"""Drill v2 injectors on the sandbox: IAM narrowing, explicit deny and permissions boundary; network blocks
by security group, network ACL and route. Each is injected as the operator on data-processor, observed
through the runtime and the MCP tools, and restored exactly (role, boundary, managed policies, ACL
entries, routes and security group rules compared before and after)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from chaos.aws_actions import on_each_action
from chaos.faults.chaos import Chaos, Fault
from chaos.faults.errors import ChaosError, ChaosRefused
from chaos.faults.iam import (
    BOUNDARY_POLICY_PREFIX,
    DENY_POLICY_NAME,
    IAM_BOUNDARY,
    IAM_DENY,
    IAM_NARROW,
    IAM_REVOKE,
    IAM_TOUCH,
)
from chaos.faults.network import BLOCK_EGRESS, BLOCK_NACL, BLOCK_ROUTE, NETWORK_BLOCK
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.snapshot import world_snapshot
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.contract import GetIAMStateArgs, GetNetworkStateArgs
from mcp_server.settings import ServerSettings
from mcp_server.tools.iam import iam_state
from mcp_server.tools.network import network_state
from supervisor.diagnosis.iam_policy import evaluate_role
from tests.conftest import Undo
from tests.tool_support import call_tool

FN = names.FUNCTION_NAME
ELSEWHERE = "arn:aws:s3:::chaos-elsewhere/*"
OBJECT = f"arn:aws:s3:::{names.INPUT_BUCKET}/{names.INPUT_KEYS[0]}"
BOUNDARY_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:policy/{BOUNDARY_POLICY_PREFIX}{names.ROLE_NAME}"
READS = ("Get", "List", "Describe")
State = Callable[[], str]

CASES: dict[str, tuple[Fault, dict[str, Any]]] = {
    "iam-narrow": (IAM_NARROW, {"to_resource": ELSEWHERE}),
    "iam-deny": (IAM_DENY, {"action": "s3:GetObject"}),
    "iam-boundary": (IAM_BOUNDARY, {"exclude": "s3:GetObject"}),
    "network-sg": (NETWORK_BLOCK["sg"], {}),
    "network-nacl": (NETWORK_BLOCK["nacl"], {}),
    "network-route": (NETWORK_BLOCK["route"], {}),
}


@pytest.fixture(scope="module")
def operator(sandbox: Sandbox) -> boto3.Session:
    """One operator session for the module: its clients are made once."""
    return sandbox.session(names.OPERATOR)


@pytest.fixture(scope="module")
def runtime(sandbox: Sandbox) -> Iterator[LocalLambdaRuntime]:
    """The runtime for the whole module (conftest's is per test): fewer cold starts."""
    with LocalLambdaRuntime(sandbox.session(names.LAMBDA_SERVICE)) as rt:
        yield rt


@pytest.fixture(scope="module")
def state(operator: boto3.Session) -> Callable[[], str]:
    """The world snapshot: it covers the role's boundary, the account's managed policies, the network ACL
    entries and the route tables these faults change."""
    return lambda: world_snapshot(operator)


@pytest.fixture(scope="module")
def clients(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))


def _iam(clients: AwsClients) -> dict[str, Any]:
    response = call_tool(clients, iam_state, GetIAMStateArgs(lambda_name=FN))
    dumped: dict[str, Any] = response.model_dump(mode="json")
    return dumped


def _egress_reasons(clients: AwsClients) -> str:
    response = call_tool(clients, network_state, GetNetworkStateArgs(lambda_name=FN))
    assert response.https_egress_allowed is False
    (apis,) = [v for v in response.egress if v.destination == "aws-apis"]
    assert apis.allowed is False
    return " ".join(apis.reasons)


def _s3_denied(runtime: LocalLambdaRuntime) -> None:
    failed = runtime.invoke(FN, names.input_event())
    assert failed.status == "failed"
    assert "AccessDenied" in str(failed.error)


def _narrowed(sandbox: Sandbox, runtime: LocalLambdaRuntime, clients: AwsClients) -> None:
    _s3_denied(runtime)
    seen = _iam(clients)
    statements = seen["inline_policies"][names.INLINE_POLICY_NAME]["Statement"]
    assert {s["Sid"]: s["Resource"] for s in statements} == {
        "ReadInputObjects": ELSEWHERE,
        "ListInputBucket": ELSEWHERE,
    }
    assert evaluate_role(seen, "s3:GetObject", OBJECT).decision == "implicit_deny"


def _denied(sandbox: Sandbox, runtime: LocalLambdaRuntime, clients: AwsClients) -> None:
    _s3_denied(runtime)
    seen = _iam(clients)
    assert seen["inline_policies"][DENY_POLICY_NAME]["Statement"] == [
        {"Sid": "ChaosDeny", "Effect": "Deny", "Action": "s3:GetObject", "Resource": "*"}
    ]
    assert evaluate_role(seen, "s3:GetObject", OBJECT).decision == "denied"


def _bounded(sandbox: Sandbox, runtime: LocalLambdaRuntime, clients: AwsClients) -> None:
    seen = _iam(clients)
    assert seen["permissions_boundary"]["arn"] == BOUNDARY_ARN
    assert seen["permissions_boundary"]["document"]["Statement"][1]["Action"] == "s3:GetObject"
    assert evaluate_role(seen, "s3:GetObject", OBJECT).decision == "boundary_excludes"
    _s3_denied(runtime)  # enforced by the sandbox (moto_fixes fix 5)


def _blocked_by(
    reason: Callable[[Sandbox], str],
) -> Callable[[Sandbox, LocalLambdaRuntime, AwsClients], None]:
    def observe(sandbox: Sandbox, runtime: LocalLambdaRuntime, clients: AwsClients) -> None:
        assert runtime.invoke(FN, names.input_event()).status == "timed_out"
        assert reason(sandbox) in _egress_reasons(clients)

    return observe


OBSERVE: dict[str, Callable[[Sandbox, LocalLambdaRuntime, AwsClients], None]] = {
    "iam-narrow": _narrowed,
    "iam-deny": _denied,
    "iam-boundary": _bounded,
    "network-sg": _blocked_by(lambda s: f"security groups {s.world.security_group_id} allows tcp/443"),
    "network-nacl": _blocked_by(lambda s: f"network ACL {s.world.network_acl_id} outbound rule 99 (deny"),
    "network-route": _blocked_by(lambda s: f"route table {s.world.route_table_id}"),
}


def _recorded(session: boto3.Session) -> list[str]:
    actions: list[str] = []
    on_each_action(session, actions.append)
    return actions


def _changes(actions: list[str]) -> list[str]:
    return [a for a in actions if not a.split(":", 1)[1].startswith(READS)]


def _shown(call: Any) -> tuple[str, str, dict[str, Any]]:
    drop = {"Value"} if call.operation == "PutParameter" else set()  # holds the save time
    return call.service, call.operation, {k: v for k, v in call.params.items() if k not in drop}


@pytest.mark.parametrize("case", list(CASES))
def test_dry_run_then_inject_observe_and_restore_exactly(
    sandbox: Sandbox,
    operator: boto3.Session,
    state: State,
    runtime: LocalLambdaRuntime,
    clients: AwsClients,
    case: str,
) -> None:
    fault, params = CASES[case]
    before = state()
    session = sandbox.session(names.OPERATOR)
    actions = _recorded(session)
    printed: list[str] = []
    planned = Chaos(session, dry_run=True, say=printed.append)
    planned.inject(fault, FN, **params)
    assert _changes(actions) == []
    assert len([line for line in printed if "would call" in line]) == len(planned.calls) > 1
    assert planned.ledger.load(FN, fault.name) is None

    chaos = Chaos(operator, say=lambda _: None)
    try:
        saved = chaos.inject(fault, FN, **params)
        assert [_shown(c) for c in chaos.calls] == [_shown(c) for c in planned.calls]
        assert chaos.calls[0].operation == "PutParameter"  # the prior state is saved before any change
        assert chaos.ledger.load(FN, fault.name) == saved
        assert state() != before
        OBSERVE[case](sandbox, runtime, clients)
    finally:
        assert chaos.restore(fault, FN) is True
    assert state() == before
    assert chaos.ledger.load(FN, fault.name) is None
    assert runtime.invoke(FN, names.input_event()).status == "succeeded"


def test_iam_touch_records_a_policy_change_that_changes_no_permission(
    sandbox: Sandbox, operator: boto3.Session, state: State, runtime: LocalLambdaRuntime
) -> None:
    """The role's inline policy is put again as it is: CloudTrail records the operator's PutRolePolicy,
    the world is as it was, and the function still succeeds."""
    before = state()
    session = sandbox.session(names.OPERATOR)
    actions = _recorded(session)
    planned = Chaos(session, dry_run=True, say=lambda _: None)
    planned.inject(IAM_TOUCH, FN)
    assert _changes(actions) == []

    chaos = Chaos(operator, say=lambda _: None)
    since = datetime.now(UTC)
    try:
        saved = chaos.inject(IAM_TOUCH, FN)
        assert [_shown(c) for c in chaos.calls] == [_shown(c) for c in planned.calls]
        assert [c.operation for c in chaos.calls] == ["PutParameter", "PutRolePolicy"]
        assert chaos.calls[1].params["PolicyName"] == names.INLINE_POLICY_NAME
        assert list(saved.prior["policies"]) == [names.INLINE_POLICY_NAME]
        assert state() == before  # nothing granted or denied anew
        assert runtime.invoke(FN, names.input_event()).status == "succeeded"
        recorded = operator.client("cloudtrail", region_name="us-east-1").lookup_events(
            LookupAttributes=[{"AttributeKey": "EventName", "AttributeValue": "PutRolePolicy"}],
            StartTime=since,
        )["Events"]
        assert [(e["Username"], e["Resources"][0]["ResourceName"]) for e in recorded][:1] == [
            (names.OPERATOR, names.ROLE_NAME)
        ]
    finally:
        assert chaos.restore(IAM_TOUCH, FN) is True
    assert state() == before
    assert chaos.ledger.load(FN, IAM_TOUCH.name) is None


def test_the_tag_guard_and_restore_without_inject(
    sandbox: Sandbox, operator: boto3.Session, state: State, undo: Undo
) -> None:
    faults = [IAM_NARROW, IAM_DENY, IAM_BOUNDARY, IAM_TOUCH, BLOCK_NACL, BLOCK_ROUTE]
    session = sandbox.session(names.OPERATOR)
    actions = _recorded(session)
    untouched = state()
    for fault in faults:
        assert Chaos(session, say=lambda _: None).restore(fault, FN) is False
    assert state() == untouched

    lambda_ = operator.client("lambda")
    key, value = names.CHAOS_TAG
    lambda_.untag_resource(Resource=sandbox.world.function_arn, TagKeys=[key])
    undo(lambda: lambda_.tag_resource(Resource=sandbox.world.function_arn, Tags={key: value}))
    before = state()
    for fault, params in [*((f, p) for f, p in CASES.values() if f in faults), (IAM_TOUCH, {})]:
        with pytest.raises(ChaosRefused, match="chaos-allowed=true"):
            Chaos(session, say=lambda _: None).inject(fault, FN, **params)
    assert _changes(actions) == []
    assert state() == before


def test_iam_deny_and_boundary_refuse_a_name_already_taken(
    operator: boto3.Session, state: State, undo: Undo
) -> None:
    iam = operator.client("iam")
    iam.put_role_policy(
        RoleName=names.ROLE_NAME,
        PolicyName=DENY_POLICY_NAME,
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "*"}],
            }
        ),
    )
    undo(lambda: iam.delete_role_policy(RoleName=names.ROLE_NAME, PolicyName=DENY_POLICY_NAME))
    iam.create_policy(
        PolicyName=f"{BOUNDARY_POLICY_PREFIX}{names.ROLE_NAME}",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        ),
    )
    undo(lambda: iam.delete_policy(PolicyArn=BOUNDARY_ARN))
    before = state()
    chaos = Chaos(operator, say=lambda _: None)
    with pytest.raises(ChaosRefused, match=f"already has an inline policy named {DENY_POLICY_NAME}"):
        chaos.inject(IAM_DENY, FN, action="s3:GetObject")
    with pytest.raises(ChaosRefused, match=f"{BOUNDARY_ARN} exists already"):
        chaos.inject(IAM_BOUNDARY, FN, exclude="s3:GetObject")
    assert chaos.calls == []
    assert chaos.ledger.all(FN) == []
    assert state() == before


def test_boundary_restore_puts_back_the_previous_one_and_deletes_every_version(
    operator: boto3.Session, state: State, undo: Undo
) -> None:
    iam = operator.client("iam")
    previous = iam.create_policy(
        PolicyName="previous-boundary",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        ),
    )["Policy"]["Arn"]
    undo(lambda: iam.delete_policy(PolicyArn=previous))
    iam.put_role_permissions_boundary(RoleName=names.ROLE_NAME, PermissionsBoundary=previous)
    undo(lambda: iam.delete_role_permissions_boundary(RoleName=names.ROLE_NAME))
    before = state()

    chaos = Chaos(operator, say=lambda _: None)
    try:
        assert chaos.inject(IAM_BOUNDARY, FN, exclude="s3:GetObject").prior["boundary"] == previous
        again = chaos.inject(IAM_BOUNDARY, FN, exclude="s3:ListBucket")  # a second version replaces the first
        assert again.prior["boundary"] == previous
        role = iam.get_role(RoleName=names.ROLE_NAME)["Role"]
        assert role["PermissionsBoundary"]["PermissionsBoundaryArn"] == BOUNDARY_ARN
        version = iam.get_policy(PolicyArn=BOUNDARY_ARN)["Policy"]["DefaultVersionId"]
        document = iam.get_policy_version(PolicyArn=BOUNDARY_ARN, VersionId=version)["PolicyVersion"]
        assert document["Document"]["Statement"][1]["Action"] == "s3:ListBucket"
    finally:
        assert chaos.restore(IAM_BOUNDARY, FN) is True
    assert state() == before


def test_invalid_parameters_change_nothing_and_restore_clears_the_saved_state(
    operator: boto3.Session, state: State
) -> None:
    before = state()
    chaos = Chaos(operator, say=lambda _: None)
    for fault, params, message in [
        (IAM_NARROW, {"to_resource": "*"}, "to_resource must be an ARN"),
        (IAM_DENY, {"action": "GetObject"}, "action must be an IAM action"),
        (IAM_BOUNDARY, {"exclude": "s3 GetObject"}, "exclude must be an IAM action"),
    ]:
        with pytest.raises(ChaosError, match=message):
            chaos.inject(fault, FN, **params)
        assert [c.operation for c in chaos.calls] == ["PutParameter"]
        assert chaos.restore(fault, FN) is True
        assert state() == before
        chaos.calls.clear()


def test_network_block_maps_via_to_its_faults() -> None:
    assert NETWORK_BLOCK == {"sg": BLOCK_EGRESS, "nacl": BLOCK_NACL, "route": BLOCK_ROUTE}
    assert len({f.name for f in NETWORK_BLOCK.values()}) == 3  # each way has its own saved state


# --- any action, on any function: revoke, narrow, deny and boundary on a DynamoDB grant --------------------


@dataclass(frozen=True)
class ActionCase:
    """An IAM fault on one action of ``function``'s role, and the denial its invocation then meets."""

    fault: Fault
    params: dict[str, Any]
    function: str
    event: dict[str, Any]
    qualifier: str | None
    denied: str  # the action the denial names
    # iam-revoke: the inline policy it changes, and its statement while injected (None: the policy deleted)
    policy: tuple[str, dict[str, Any] | None] | None = None


ORDERS_TABLE_ARN = f"arn:aws:dynamodb:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:table/{names.ORDERS_TABLE}"
OTHER_TABLE_ARN = f"arn:aws:dynamodb:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:table/chaos-elsewhere"
ORDERS_POLICY = f"{names.ORDERS_FUNCTION}-access"
GET = {"action": "dynamodb:GetItem"}
INTAKE, INTAKE_ORDER = names.ORDER_INTAKE_FUNCTION, "chaos-iam-test"
SUBMIT = names.order_submission(order_id=INTAKE_ORDER)
PUT = {"action": "dynamodb:PutItem"}
ACTION_CASES: dict[str, ActionCase] = {
    "revoke-orders-get": ActionCase(
        IAM_REVOKE,
        GET,
        names.ORDERS_FUNCTION,
        names.order_request(),
        names.ORDERS_ALIAS,
        "dynamodb:GetItem",
        (
            ORDERS_POLICY,
            {
                "Sid": "ReadWriteOrders",
                "Effect": "Allow",
                "Action": "dynamodb:PutItem",
                "Resource": ORDERS_TABLE_ARN,
            },
        ),
    ),
    "narrow-orders-get": ActionCase(
        IAM_NARROW,
        GET | {"to_resource": OTHER_TABLE_ARN},
        names.ORDERS_FUNCTION,
        names.order_request(),
        names.ORDERS_ALIAS,
        "dynamodb:GetItem",
    ),
    "deny-orders-get": ActionCase(
        IAM_DENY, GET, names.ORDERS_FUNCTION, names.order_request(), names.ORDERS_ALIAS, "dynamodb:GetItem"
    ),
    "boundary-orders-get": ActionCase(
        IAM_BOUNDARY,
        {"exclude": "dynamodb:GetItem"},
        names.ORDERS_FUNCTION,
        names.order_request(),
        names.ORDERS_ALIAS,
        "dynamodb:GetItem",
    ),
    # order-intake (Node.js, SDK v3): its one grant, dynamodb:PutItem on the orders table
    "revoke-intake-put": ActionCase(
        IAM_REVOKE, PUT, INTAKE, SUBMIT, None, "dynamodb:PutItem", (f"{INTAKE}-access", None)
    ),
    "narrow-intake-put": ActionCase(
        IAM_NARROW, PUT | {"to_resource": OTHER_TABLE_ARN}, INTAKE, SUBMIT, None, "dynamodb:PutItem"
    ),
    "deny-intake-put": ActionCase(IAM_DENY, PUT, INTAKE, SUBMIT, None, "dynamodb:PutItem"),
    "boundary-intake-put": ActionCase(
        IAM_BOUNDARY, {"exclude": "dynamodb:PutItem"}, INTAKE, SUBMIT, None, "dynamodb:PutItem"
    ),
}


@pytest.mark.parametrize("case", list(ACTION_CASES))
def test_an_action_scoped_fault_denies_that_action_and_restores_exactly(
    sandbox: Sandbox,
    operator: boto3.Session,
    state: State,
    runtime: LocalLambdaRuntime,
    undo: Undo,
    case: str,
) -> None:
    c = ACTION_CASES[case]
    if c.function == INTAKE:  # its healthy invocation at the end writes an order
        key = {"order_id": {"S": INTAKE_ORDER}}
        undo(lambda: operator.client("dynamodb").delete_item(TableName=names.ORDERS_TABLE, Key=key))
    before = state()
    session = sandbox.session(names.OPERATOR)
    planned = Chaos(session, dry_run=True, say=lambda _: None)
    planned.inject(c.fault, c.function, **c.params)
    assert state() == before
    chaos = Chaos(operator, say=lambda _: None)
    try:
        chaos.inject(c.fault, c.function, **c.params)
        assert [_shown(call) for call in chaos.calls] == [_shown(call) for call in planned.calls]
        if c.policy is not None:
            role = operator.client("lambda").get_function_configuration(FunctionName=c.function)["Role"]
            names_left = operator.client("iam").list_role_policies(RoleName=role.rsplit("/", 1)[-1])
            policy, statement = c.policy
            if statement is None:
                assert policy not in names_left["PolicyNames"]
            else:
                document = operator.client("iam").get_role_policy(
                    RoleName=role.rsplit("/", 1)[-1], PolicyName=policy
                )
                assert document["PolicyDocument"]["Statement"] == [statement]
        failed = runtime.invoke(c.function, c.event, c.qualifier)
        assert failed.status == "failed", failed.error
        assert "AccessDeniedException" in str(failed.error)
        assert f"is not authorized to perform: {c.denied}" in str(failed.error)
    finally:
        assert chaos.restore(c.fault, c.function) is True
    assert state() == before
    assert chaos.ledger.load(c.function, c.fault.name) is None
    assert runtime.invoke(c.function, c.event, c.qualifier).status == "succeeded"


def test_revoke_and_narrow_refuse_an_action_nothing_grants_and_keep_no_state(
    operator: boto3.Session, state: State
) -> None:
    before = state()
    chaos = Chaos(operator, say=lambda _: None)
    for fault, params, said in [
        (
            IAM_REVOKE,
            {"action": "sqs:SendMessage"},
            "no inline Allow statement of role orders-api-role grants",
        ),
        (IAM_NARROW, {"action": "sqs:*", "to_resource": OTHER_TABLE_ARN}, "nothing to narrow"),
        (IAM_NARROW, {"to_resource": OTHER_TABLE_ARN}, "grants an s3: action"),
    ]:
        with pytest.raises(ChaosRefused, match=said):
            chaos.inject(fault, names.ORDERS_FUNCTION, **params)
        assert [c.operation for c in chaos.calls] == ["PutParameter", "DeleteParameter"]
        assert chaos.ledger.load(names.ORDERS_FUNCTION, fault.name) is None
        chaos.calls.clear()
    assert state() == before


def test_revoke_refuses_when_a_wider_grant_would_still_allow_the_action(
    operator: boto3.Session, state: State, undo: Undo
) -> None:
    iam = operator.client("iam")
    wide = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"}],
    }
    iam.put_role_policy(RoleName=names.ORDERS_ROLE, PolicyName="chaos-wide", PolicyDocument=json.dumps(wide))
    undo(lambda: iam.delete_role_policy(RoleName=names.ORDERS_ROLE, PolicyName="chaos-wide"))
    before = state()
    chaos = Chaos(operator, say=lambda _: None)
    with pytest.raises(ChaosRefused, match="'dynamodb:\\*' in policy chaos-wide would still grant it"):
        chaos.inject(IAM_REVOKE, names.ORDERS_FUNCTION, action="dynamodb:GetItem")
    assert [c.operation for c in chaos.calls] == ["PutParameter", "DeleteParameter"]
    assert state() == before


@pytest.mark.parametrize("via", list(NETWORK_BLOCK))
def test_network_faults_refuse_a_function_outside_a_vpc(
    operator: boto3.Session, state: State, via: str
) -> None:
    """order-intake runs outside any VPC: nothing of its network to break, nothing saved or changed."""
    before = state()
    chaos = Chaos(operator, say=lambda _: None)
    with pytest.raises(ChaosRefused, match="nothing to block: order-intake is not attached to a VPC"):
        chaos.inject(NETWORK_BLOCK[via], INTAKE)
    assert chaos.calls == []
    assert state() == before
