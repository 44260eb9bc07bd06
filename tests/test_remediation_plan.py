"""The Resolver's steps on the sandbox: each allowlisted operation read afresh, applied and undone by the
inverse built from that read, the world checked by the operator's own reads (not the product's); and the
Critic's refusals, each on a step that differs from a passing one only in what the rule checks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore import xform_name

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.sandbox.world import World
from supervisor.diagnosis.cli_commands import build_command
from supervisor.permissions import PLAN_READ_ACTIONS
from supervisor.remediation.change_history import read_history
from supervisor.remediation.critic import review
from supervisor.remediation.operation import CREATED, function_name, undo_of
from supervisor.remediation.operations import BY_CALL, OPERATIONS
from supervisor.remediation.plan import ApiCall, DraftStep, plan_digest
from supervisor.remediation.resolver import resolve
from supervisor.schemas import Diagnosis, ToolResult, Trigger

LOGS_POLICY_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:policy/{names.LOGS_POLICY_NAME}"
NARROW = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/k"}],
}


def recorded(*settings: dict[str, Any]) -> ToolResult:
    """A get_recent_changes answer whose changes (before any trigger) set ``settings`` (API names), as
    CloudTrail summarises them (camelCase: ``timeout``, ``deadLetterConfig.targetArn``)."""

    def camel(value: Any) -> Any:
        if isinstance(value, dict):
            return {k[:1].lower() + k[1:]: camel(v) for k, v in value.items()}
        return value

    events = [
        {
            "event_name": "UpdateFunctionConfiguration20150331v2",
            "time": "2026-01-01T00:00:00+00:00",
            "summary": camel(s),
        }
        for s in settings
    ]
    return ToolResult(tool="get_recent_changes", arguments={}, result={"events": events})


def _diagnosis(
    *commands: str, affected: tuple[str, ...] = (), faults: tuple[str, ...] = ("timeout",)
) -> Diagnosis:
    return Diagnosis.model_validate(
        {
            "root_cause": "a change broke the function",
            "fault_types": list(faults),
            "affected_resources": list(affected),
            "severity": "high",
            "confidence": 0.9,
            "evidence": [
                {
                    "tool": "get_recent_logs",
                    "field": "f",
                    "value": "v",
                    "interpretation": "i",
                    "supports": None,
                }
            ],
            "remediation_plan": [
                {
                    "action": f"fix {n}",
                    "details": "d",
                    "evidence_basis": [0],
                    "risk_level": "low",
                    "requires_approval": True,
                    "command": command,
                }
                for n, command in enumerate(commands)
            ],
            "verification": {
                "pointers": [],
                "unsupported_fault_types": [],
                "refinement_turns": 0,
                "claimed_confidence": 0.9,
            },
        }
    )


def _apply(session: boto3.Session, call: ApiCall) -> None:
    getattr(session.client(call.service), xform_name(call.operation))(**call.params)


@dataclass(frozen=True)
class Case:
    service: str
    operation: str
    params: Callable[[boto3.Session, World], dict[str, Any]]  # read with the operator's session
    affected: tuple[str, ...]
    observe: Callable[[boto3.Session, World], object]  # the operator's own read of what the call changes


def _mapping(operator: boto3.Session) -> dict[str, Any]:
    mappings = operator.client("lambda").list_event_source_mappings(FunctionName=names.CLICK_FUNCTION)
    return dict(mappings["EventSourceMappings"][0])


def _inline(operator: boto3.Session, name: str) -> object:
    iam = operator.client("iam")
    try:
        return iam.get_role_policy(RoleName=names.ROLE_NAME, PolicyName=name)["PolicyDocument"]
    except iam.exceptions.NoSuchEntityException:
        return None


def _statements(operator: boto3.Session, function: str) -> dict[str, Any]:
    lambda_ = operator.client("lambda")
    try:
        policy = json.loads(lambda_.get_policy(FunctionName=function)["Policy"])
    except lambda_.exceptions.ResourceNotFoundException:
        return {}
    return {statement["Sid"]: statement for statement in policy["Statement"]}


def _key_arn(operator: boto3.Session) -> str:
    return str(operator.client("kms").describe_key(KeyId=names.ORDER_WORKER_KEY_ALIAS)["KeyMetadata"]["Arn"])


_PORT_8443 = {"IpProtocol": "tcp", "FromPort": 8443, "ToPort": 8443, "IpRanges": [{"CidrIp": "10.9.0.0/16"}]}


def _egress(operator: boto3.Session, world: World) -> object:
    groups = operator.client("ec2").describe_security_groups(GroupIds=[world.security_group_id])
    return sorted(
        json.dumps(rule, sort_keys=True) for rule in groups["SecurityGroups"][0]["IpPermissionsEgress"]
    )


def _acl_entries(operator: boto3.Session, world: World) -> object:
    acls = operator.client("ec2").describe_network_acls(NetworkAclIds=[world.network_acl_id])
    return sorted(json.dumps(entry, sort_keys=True) for entry in acls["NetworkAcls"][0]["Entries"])


def _routes(operator: boto3.Session, world: World) -> object:
    tables = operator.client("ec2").describe_route_tables(RouteTableIds=[world.route_table_id])
    return sorted(json.dumps(route, sort_keys=True) for route in tables["RouteTables"][0]["Routes"])


def _alias(operator: boto3.Session) -> object:
    """The alias's version and routing: an undo that leaves an empty routing where there was none differs."""
    alias = operator.client("lambda").get_alias(FunctionName=names.ORDERS_FUNCTION, Name=names.ORDERS_ALIAS)
    return alias["FunctionVersion"], alias.get("RoutingConfig")


CASES = {
    "alias moved": Case(
        "lambda",
        "UpdateAlias",
        lambda _s, _w: {
            "FunctionName": names.ORDERS_FUNCTION,
            "Name": names.ORDERS_ALIAS,
            "FunctionVersion": "$LATEST",
        },
        (),
        lambda s, w: _alias(s),
    ),
    "settings": Case(
        "lambda",
        "UpdateFunctionConfiguration",
        lambda _s, _w: {"FunctionName": names.FUNCTION_NAME, "Timeout": 7, "MemorySize": 384},
        (),
        lambda s, w: {
            k: v
            for k, v in s.client("lambda")
            .get_function_configuration(FunctionName=names.FUNCTION_NAME)
            .items()
            if k in ("Timeout", "MemorySize")
        },
    ),
    "concurrency reserved": Case(
        "lambda",
        "PutFunctionConcurrency",
        lambda _s, _w: {"FunctionName": names.FUNCTION_NAME, "ReservedConcurrentExecutions": 5},
        (),
        lambda s, w: (
            s.client("lambda")
            .get_function_concurrency(FunctionName=names.FUNCTION_NAME)
            .get("ReservedConcurrentExecutions")
        ),
    ),
    "inline policy replaced": Case(
        "iam",
        "PutRolePolicy",
        lambda _s, _w: {
            "RoleName": names.ROLE_NAME,
            "PolicyName": names.INLINE_POLICY_NAME,
            "PolicyDocument": json.dumps(NARROW),
        },
        (names.ROLE_NAME,),
        lambda s, w: _inline(s, names.INLINE_POLICY_NAME),
    ),
    "inline policy added": Case(
        "iam",
        "PutRolePolicy",
        lambda _s, _w: {
            "RoleName": names.ROLE_NAME,
            "PolicyName": "remediation-test",
            "PolicyDocument": json.dumps(NARROW),
        },
        (names.ROLE_NAME,),
        lambda s, w: _inline(s, "remediation-test"),
    ),
    "mapping's retries": Case(
        "lambda",
        "UpdateEventSourceMapping",
        lambda s, w: {
            "UUID": _mapping(s)["UUID"],
            "MaximumRetryAttempts": 2,
            "BisectBatchOnFunctionError": True,
        },
        (),
        lambda s, w: {k: _mapping(s).get(k) for k in ("MaximumRetryAttempts", "BisectBatchOnFunctionError")},
    ),
    "dead-letter queue changed": Case(
        "lambda",
        "UpdateFunctionConfiguration",
        lambda _s, w: {
            "FunctionName": names.ORDER_NOTIFIER_FUNCTION,
            "DeadLetterConfig": {"TargetArn": w.orders_dlq_arn},
        },
        (),
        lambda s, w: (
            s.client("lambda")
            .get_function_configuration(FunctionName=names.ORDER_NOTIFIER_FUNCTION)
            .get("DeadLetterConfig")
        ),
    ),
    "statement added": Case(
        "lambda",
        "AddPermission",
        lambda _s, _w: {
            "FunctionName": names.FUNCTION_NAME,
            "StatementId": "remediation-test",
            "Action": "lambda:InvokeFunction",
            "Principal": "sns.amazonaws.com",
            "SourceArn": f"arn:aws:sns:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:remediation-test",
        },
        (),
        lambda s, w: _statements(s, names.FUNCTION_NAME).get("remediation-test"),
    ),
    "key disabled": Case(
        "kms",
        "DisableKey",
        lambda s, w: {"KeyId": _key_arn(s)},
        (),
        lambda s, w: s.client("kms").describe_key(KeyId=_key_arn(s))["KeyMetadata"]["KeyState"],
    ),
    "egress authorized": Case(
        "ec2",
        "AuthorizeSecurityGroupEgress",
        lambda _s, w: {"GroupId": w.security_group_id, "IpPermissions": [_PORT_8443]},
        (),
        lambda s, w: _egress(s, w),
    ),
    "deny entry added": Case(
        "ec2",
        "CreateNetworkAclEntry",
        lambda _s, w: {
            "NetworkAclId": w.network_acl_id,
            "RuleNumber": 97,
            "Egress": True,
            "Protocol": "6",
            "RuleAction": "deny",
            "CidrBlock": "0.0.0.0/0",
            "PortRange": {"From": 443, "To": 443},
        },
        (),
        lambda s, w: _acl_entries(s, w),
    ),
    "route deleted": Case(
        "ec2",
        "DeleteRoute",
        lambda _s, w: {"RouteTableId": w.route_table_id, "DestinationCidrBlock": "0.0.0.0/0"},
        (),
        lambda s, w: _routes(s, w),
    ),
    "managed policy detached": Case(
        "iam",
        "DetachRolePolicy",
        lambda _s, _w: {"RoleName": names.ROLE_NAME, "PolicyArn": LOGS_POLICY_ARN},
        (names.ROLE_NAME,),
        lambda s, w: sorted(
            p["PolicyArn"]
            for p in s.client("iam").list_attached_role_policies(RoleName=names.ROLE_NAME)["AttachedPolicies"]
        ),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_a_step_is_applied_on_its_precondition_and_its_inverse_puts_the_world_back(
    name: str, sandbox: Sandbox, operator: boto3.Session
) -> None:
    case = CASES[name]
    before, params = case.observe(operator, sandbox.world), case.params(operator, sandbox.world)
    command = build_command(case.service, case.operation, params, region=sandbox.region)
    draft = resolve(_diagnosis(command), final=True, read=sandbox.session(names.SUPERVISOR).client)
    assert draft.unplanned == []
    (step,) = draft.steps
    assert step.call.params == params
    executor = sandbox.session(names.EXECUTOR)  # the identity the executor applies plans as
    operation = BY_CALL[(case.service, case.operation)]
    assert not operation.done(params, step.precondition)
    try:
        _apply(executor, step.call)
        assert case.observe(operator, sandbox.world) != before, "the step changed nothing"
        if operation.fix:  # the state the call left is read as the fix in place
            assert operation.done(params, operation.read(executor.client, params))
    finally:
        _apply(executor, step.inverse)
    assert case.observe(operator, sandbox.world) == before
    undo = BY_CALL[(step.inverse.service, step.inverse.operation)]
    if undo.fix:  # an undo that is a fix itself: the state it left is read as that fix in place
        assert undo.done(step.inverse.params, undo.read(executor.client, step.inverse.params))


def test_every_allowlisted_operation_is_applied_or_undone_by_a_tested_case() -> None:
    """Each declaration's call or inverse runs on the sandbox above (a new one needs a case)."""
    inverses = {"UpdateAlias", "UpdateFunctionConfiguration", "DeleteFunctionConcurrency", "DeleteRolePolicy"}
    inverses |= {"AttachRolePolicy", "RemovePermission", "EnableKey", "RevokeSecurityGroupEgress"}
    inverses |= {"DeleteNetworkAclEntry", "CreateRoute"}
    # a mapping made again and deleted by its undo: tests/test_executor_steps.py
    inverses |= {"CreateEventSourceMapping", "DeleteEventSourceMapping"}
    covered = {case.operation for case in CASES.values()} | inverses
    assert {operation.name for operation in OPERATIONS} <= covered


@pytest.mark.parametrize(
    ("function", "sid"),
    [
        (names.ORDER_INTAKE_FUNCTION, names.ORDER_INTAKE_URL_INVOKE_STATEMENT),
        (names.ORDER_NOTIFIER_FUNCTION, names.ORDER_EVENTS_STATEMENT),
    ],
    ids=["function URL", "topic"],
)
def test_a_statement_taken_out_is_put_back_exactly_by_its_inverse(
    function: str, sid: str, sandbox: Sandbox, operator: boto3.Session
) -> None:
    """A statement read, removed and added back by the inverse built from the read is the same statement."""
    remove = BY_CALL[("lambda", "RemovePermission")]
    params = {"FunctionName": function, "StatementId": sid}
    state = remove.read(sandbox.session(names.SUPERVISOR).client, params)
    before = _statements(operator, function)[sid]
    operator.client("lambda").remove_permission(**params)
    assert sid not in _statements(operator, function)
    _apply(sandbox.session(names.EXECUTOR), remove.inverse(params, state))
    assert _statements(operator, function)[sid] == before


def _step(
    service: str, operation: str, params: dict[str, Any], state: dict[str, Any], undo: ApiCall
) -> DraftStep:
    return DraftStep(
        action="a",
        call=ApiCall(service=service, operation=operation, params=params),
        precondition=state,
        inverse=undo,
    )


_CONCURRENCY = {"FunctionName": names.FUNCTION_NAME}
_PUT_BACK = ApiCall(
    service="lambda",
    operation="PutFunctionConcurrency",
    params={"FunctionName": names.FUNCTION_NAME, "ReservedConcurrentExecutions": 0},
)


_QUEUE = f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:{names.ORDER_NOTIFIER_DLQ}"
_NO_DLQ = {"TargetArn": ""}


def _dlq_to(target: str) -> dict[str, Any]:
    return {"FunctionName": names.FUNCTION_NAME, "DeadLetterConfig": {"TargetArn": target}}


_DLQ_BACK = ApiCall(service="lambda", operation="UpdateFunctionConfiguration", params=_dlq_to(""))


def test_the_critic_passes_a_dead_letter_queue_put_back_where_the_diagnosis_names_it() -> None:
    step = _step(
        "lambda", "UpdateFunctionConfiguration", _dlq_to(_QUEUE), {"DeadLetterConfig": _NO_DLQ}, _DLQ_BACK
    )
    assert _reviewed(step, (_QUEUE,), recorded({"DeadLetterConfig": {"TargetArn": _QUEUE}})) == []
    elsewhere = f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:{names.ORDERS_DLQ}"
    assert _reviewed(step, (_QUEUE,), recorded({"DeadLetterConfig": {"TargetArn": elsewhere}})) == [
        f'it sets DeadLetterConfig to {{"TargetArn": "{_QUEUE}"}}, a value no change before the trigger '
        "shows: a fix puts back a recorded setting"
    ]


def _reviewed(
    step: DraftStep, affected: tuple[str, ...] = (), history: ToolResult | None = None
) -> list[str]:
    diagnosis = _diagnosis(affected=affected)
    result = review(
        [step],
        diagnosis,
        incident_id="i-1",
        function=names.FUNCTION_NAME,
        recovery_seconds=60,
        history=read_history(diagnosis, [history] if history else [], names.FUNCTION_NAME),
    )
    assert (result.plan is None) == bool(result.refusals)
    return [refusal.reason for refusal in result.refusals]


def test_the_critic_passes_a_reservation_removed_and_gives_it_the_allowlists_risk() -> None:
    step = _step(
        "lambda", "DeleteFunctionConcurrency", _CONCURRENCY, {"ReservedConcurrentExecutions": 0}, _PUT_BACK
    )
    result = review(
        [step], _diagnosis(), incident_id="i-1", function=names.FUNCTION_NAME, recovery_seconds=60
    )
    assert result.refusals == []
    assert result.plan is not None
    assert [s.risk for s in result.plan.steps] == ["low"]
    assert result.plan.recovery.kind == "invocations_succeed"
    assert result.plan.recovery.version is None  # the function runs what it ran: any version shows it


def test_an_alias_moved_back_is_recovered_only_by_the_version_it_points_to() -> None:
    params = {"FunctionName": names.ORDERS_FUNCTION, "Name": names.ORDERS_ALIAS, "FunctionVersion": "3"}
    undo = ApiCall(service="lambda", operation="UpdateAlias", params=params | {"FunctionVersion": "4"})
    step = _step("lambda", "UpdateAlias", params, {"FunctionVersion": "4", "RoutingConfig": None}, undo)
    result = review(
        [step], _diagnosis(), incident_id="i-1", function=names.ORDERS_FUNCTION, recovery_seconds=60
    )
    assert result.plan is not None, result.refusals
    assert result.plan.recovery.version == "3"


@pytest.mark.parametrize(
    ("step", "affected", "reason"),
    [
        (
            _step("lambda", "DeleteFunction", _CONCURRENCY, {}, _PUT_BACK),
            (),
            "lambda DeleteFunction is not on the allowlist of remediation operations",
        ),
        (
            _step(
                "lambda",
                "DeleteFunctionConcurrency",
                {"FunctionName": names.ORDERS_FUNCTION},
                {"ReservedConcurrentExecutions": 0},
                _PUT_BACK,
            ),
            (),
            f"it changes {names.ORDERS_FUNCTION}: neither the incident's function nor a resource the "
            "diagnosis verified",
        ),
        (
            _step(
                "lambda",
                "UpdateFunctionConfiguration",
                {"FunctionName": names.FUNCTION_NAME, "Environment": {"Variables": {"A": "b"}}},
                {},
                _PUT_BACK,
            ),
            (),
            "UpdateFunctionConfiguration may set only DeadLetterConfig, EphemeralStorage, FunctionName, "
            "Handler, MemorySize, Timeout, not Environment",
        ),
        (
            _step(
                "lambda",
                "DeleteFunctionConcurrency",
                _CONCURRENCY,
                {"ReservedConcurrentExecutions": None},
                _PUT_BACK,
            ),
            (),
            "the function reserves no concurrency: nothing to delete",
        ),
        (
            _step(
                "lambda",
                "UpdateFunctionConfiguration",
                {"FunctionName": names.FUNCTION_NAME, "Handler": "[REDACTED:email]"},
                {"Handler": "app.handler"},
                ApiCall(service="lambda", operation="UpdateFunctionConfiguration", params=_CONCURRENCY),
            ),
            (),
            "it quotes a redacted value's placeholder: it would set the placeholder, not the value",
        ),
        (
            _step(
                "lambda",
                "DeleteFunctionConcurrency",
                _CONCURRENCY,
                {"ReservedConcurrentExecutions": 0},
                ApiCall(service="lambda", operation="DeleteFunction", params=_CONCURRENCY),
            ),
            (),
            "its undo, lambda DeleteFunction, is not an allowlisted operation",
        ),
        (
            _step(
                "lambda",
                "DeleteFunctionConcurrency",
                _CONCURRENCY,
                {"ReservedConcurrentExecutions": 0},
                ApiCall(
                    service="lambda",
                    operation="DeleteFunctionConcurrency",
                    params={"FunctionName": names.ORDERS_FUNCTION},
                ),
            ),
            (names.ORDERS_FUNCTION,),
            f"its undo changes {names.ORDERS_FUNCTION}, which the step does not",
        ),
        (
            _step(
                "lambda",
                "UpdateFunctionConfiguration",
                _dlq_to(_QUEUE),
                {"DeadLetterConfig": _NO_DLQ},
                _DLQ_BACK,
            ),
            (),
            f"it changes {_QUEUE}: neither the incident's function nor a resource the diagnosis verified",
        ),
        (
            _step(
                "lambda",
                "UpdateFunctionConfiguration",
                _dlq_to(""),
                {"DeadLetterConfig": {"TargetArn": _QUEUE}},
                _DLQ_BACK,
            ),
            (_QUEUE,),
            "a fix puts a dead-letter queue back (its TargetArn), never removes one or sets more",
        ),
    ],
    ids=[
        "not allowlisted",
        "another function",
        "environment",
        "nothing to do",
        "placeholder",
        "undo",
        "undo elsewhere",
        "dead-letter queue not verified",
        "dead-letter queue removed",
    ],
)
def test_the_critic_refuses(step: DraftStep, affected: tuple[str, ...], reason: str) -> None:
    assert _reviewed(step, affected) == [reason]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::b/k"}, "the document allows *"),
        ({"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::b/k"}, "the document allows s3:*"),
        (
            {"Effect": "Allow", "Action": ["iam:PassRole"], "Resource": "arn:aws:iam::1:role/r"},
            "the document allows iam:PassRole",
        ),
        (
            {"Effect": "Allow", "Action": "sts:Assume*", "Resource": "arn:aws:iam::1:role/r"},
            "the document allows sts:Assume*",
        ),
        (
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"},
            "the document allows its actions on every resource (*)",
        ),
        (
            {"Effect": "Allow", "NotAction": "s3:GetObject", "Resource": "arn:aws:s3:::b/k"},
            "an Allow with NotAction or NotResource grants everything it does not name",
        ),
    ],
    ids=["everything", "a service", "pass role", "sts wildcard", "every resource", "not action"],
)
def test_the_critic_refuses_a_policy_wider_than_one_action_on_named_resources(
    document: dict[str, Any], reason: str
) -> None:
    names_ = {"RoleName": names.ROLE_NAME, "PolicyName": "p"}
    undo = ApiCall(service="iam", operation="DeleteRolePolicy", params=names_)
    wide = {"Version": "2012-10-17", "Statement": [document]}
    step = _step(
        "iam", "PutRolePolicy", {**names_, "PolicyDocument": json.dumps(wide)}, {"PolicyDocument": None}, undo
    )
    assert _reviewed(step, (names.ROLE_NAME,)) == [reason]
    narrow = {**names_, "PolicyDocument": json.dumps(NARROW)}
    assert (
        _reviewed(_step("iam", "PutRolePolicy", narrow, {"PolicyDocument": None}, undo), (names.ROLE_NAME,))
        == []
    )


def test_a_provisional_diagnosis_gets_no_steps(sandbox: Sandbox) -> None:
    command = build_command("lambda", "DeleteFunctionConcurrency", _CONCURRENCY, region=sandbox.region)
    draft = resolve(_diagnosis(command), final=False, read=sandbox.session(names.SUPERVISOR).client)
    assert draft.steps == []
    assert draft.unplanned == ["the diagnosis is provisional: its change history may still lack the trigger"]


def test_the_digest_binds_every_parameter_and_precondition() -> None:
    step = _step(
        "lambda", "DeleteFunctionConcurrency", _CONCURRENCY, {"ReservedConcurrentExecutions": 0}, _PUT_BACK
    )
    plan = review(
        [step], _diagnosis(), incident_id="i-1", function=names.FUNCTION_NAME, recovery_seconds=60
    ).plan
    assert plan is not None
    document = plan.model_dump(mode="json")
    assert plan.digest == plan_digest(json.loads(json.dumps(document)))
    # The same digest from the test's own reading of "SHA-256 of the canonical JSON", keys in any order.
    reordered = json.loads(json.dumps(document, sort_keys=True))
    canonical = json.dumps(reordered, sort_keys=True, separators=(",", ":")).encode()
    assert plan.digest == "sha256:" + hashlib.sha256(canonical).hexdigest()
    document["steps"][0]["precondition"]["ReservedConcurrentExecutions"] = 1
    assert plan_digest(document) != plan.digest
    document = plan.model_dump(mode="json")
    document["steps"][0]["inverse"]["params"]["ReservedConcurrentExecutions"] = 1
    assert plan_digest(document) != plan.digest


def test_the_reads_a_plan_takes_are_read_only_and_the_supervisor_may_take_no_other_step(
    sandbox: Sandbox,
) -> None:
    """The supervisor's identity gains the plan's reads, and still cannot write what a plan would."""
    assert PLAN_READ_ACTIONS
    assert all(action.split(":")[1].startswith(("Get", "List", "Describe")) for action in PLAN_READ_ACTIONS)
    lambda_ = sandbox.session(names.SUPERVISOR).client("lambda")
    with pytest.raises(lambda_.exceptions.ClientError, match="AccessDenied"):
        lambda_.delete_function_concurrency(FunctionName=names.FUNCTION_NAME)


_KEY = f"arn:aws:kms:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
_KEY_UNDO = ApiCall(service="kms", operation="DisableKey", params={"KeyId": _KEY})
_INVOKE = {"FunctionName": names.FUNCTION_NAME, "StatementId": "s", "Action": "lambda:InvokeFunction"}
_REMOVE = ApiCall(service="lambda", operation="RemovePermission", params={**_CONCURRENCY, "StatementId": "s"})


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (
            _step("kms", "EnableKey", {"KeyId": _KEY}, {"KeyState": "Enabled"}, _KEY_UNDO),
            f"key {_KEY} is Enabled, not Disabled: enabling it is not the fix",
        ),
        (
            _step("kms", "DisableKey", {"KeyId": _KEY}, {"KeyState": "Enabled"}, _KEY_UNDO),
            "DisableKey is on the allowlist only to undo a fix, never as a fix",
        ),
        (
            _step("lambda", "AddPermission", {**_INVOKE, "Principal": "*"}, {"Statement": None}, _REMOVE),
            "the statement would let anyone invoke the function, by any path",
        ),
        (
            _step(
                "lambda",
                "AddPermission",
                {**_INVOKE, "Action": "lambda:UpdateFunctionCode", "Principal": "sns.amazonaws.com"},
                {"Statement": None},
                _REMOVE,
            ),
            "a fix lets a caller invoke the function, not lambda:UpdateFunctionCode",
        ),
    ],
    ids=["key not disabled", "disable", "anyone", "not invoke"],
)
def test_the_critic_refuses_what_opens_the_function_or_touches_a_key_wrongly(
    step: DraftStep, reason: str
) -> None:
    assert _reviewed(step, (_KEY,)) == [reason]


def test_a_key_enabled_again_passes_as_a_high_risk_step_and_a_scoped_statement_too() -> None:
    enable = _step("kms", "EnableKey", {"KeyId": _KEY}, {"KeyState": "Disabled"}, _KEY_UNDO)
    url = {**_INVOKE, "Principal": "*", "InvokedViaFunctionUrl": True}
    statement = _step("lambda", "AddPermission", url, {"Statement": None}, _REMOVE)
    result = review(
        [enable, statement],
        _diagnosis(affected=(_KEY,)),
        incident_id="i-1",
        function=names.FUNCTION_NAME,
        recovery_seconds=60,
    )
    assert result.refusals == []
    assert result.plan is not None
    assert [step.risk for step in result.plan.steps] == ["high", "high"]


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("data-processor", "data-processor"),
        ("data-processor:live", "data-processor"),
        (f"{names.ACCOUNT_ID}:function:data-processor", "data-processor"),
        (
            f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:data-processor:7",
            "data-processor",
        ),
        (_KEY, _KEY),
        (
            f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:orders-queue",
            f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:orders-queue",
        ),
    ],
)
def test_a_function_is_named_from_any_form_and_another_arn_is_kept_whole(value: str, name: str) -> None:
    assert function_name(value) == name


_GROUP = {"GroupId": "sg-1"}
_ACL = {"NetworkAclId": "acl-1", "RuleNumber": 99, "Egress": True}
_TABLE = {"RouteTableId": "rtb-1", "DestinationCidrBlock": "0.0.0.0/0"}
_HTTPS = {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (
            _step(
                "ec2",
                "AuthorizeSecurityGroupEgress",
                {**_GROUP, "IpPermissions": [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]},
                {"IpPermissionsEgress": []},
                ApiCall(service="ec2", operation="RevokeSecurityGroupEgress", params=_GROUP),
            ),
            "the rule would allow every protocol and port: a fix puts back one port range",
        ),
        (
            _step(
                "ec2",
                "AuthorizeSecurityGroupEgress",
                {**_GROUP, "IpPermissions": [_HTTPS]},
                {"IpPermissionsEgress": [_HTTPS]},
                ApiCall(service="ec2", operation="RevokeSecurityGroupEgress", params=_GROUP),
            ),
            "sg-1 already allows part of it: its undo would take away what was there",
        ),
        (
            _step(
                "ec2",
                "DeleteNetworkAclEntry",
                _ACL,
                {"Entry": {"RuleAction": "allow", "Protocol": "6", "CidrBlock": "0.0.0.0/0"}},
                ApiCall(service="ec2", operation="CreateNetworkAclEntry", params=_ACL),
            ),
            "rule 99 allows: deleting it would block, not fix",
        ),
        (
            _step(
                "ec2",
                "CreateRoute",
                {**_TABLE, "NatGatewayId": "nat-1", "GatewayId": "igw-1"},
                {"Route": None},
                ApiCall(service="ec2", operation="DeleteRoute", params=_TABLE),
            ),
            "a route put back names exactly one target",
        ),
    ],
    ids=["every protocol", "already there", "an allow entry", "two targets"],
)
def test_the_critic_refuses_a_network_step_wider_than_what_was_taken(step: DraftStep, reason: str) -> None:
    assert _reviewed(step, ("sg-1", "acl-1", "rtb-1")) == [reason]


def test_a_step_that_sets_what_the_trigger_set_is_refused() -> None:
    """The alias was moved to the bad version 2 (the trigger), then on to 3: rolling it "back" to 2 would
    set what the trigger set, and is refused; back to 1, the version before the trigger, passes."""
    moved = "2026-11-30T10:00:00+00:00"
    trigger = Trigger(event_name="UpdateAlias20150331", identity=None, time=moved, evidence=[0])
    diagnosis = _diagnosis(affected=(names.ORDERS_FUNCTION,)).model_copy(update={"trigger": trigger})
    summary = {"functionName": names.ORDERS_FUNCTION, "name": "live", "functionVersion": "2"}
    other = {"event_name": "UpdateAlias20150331", "time": "2026-11-30T10:05:00+00:00", "summary": {}}
    changes = ToolResult(
        tool="get_recent_changes",
        arguments={"lambda_name": names.ORDERS_FUNCTION},
        result={"events": [other, {"event_name": "UpdateAlias20150331", "time": moved, "summary": summary}]},
    )
    values = read_history(diagnosis, [changes], names.ORDERS_FUNCTION)
    assert (values.operation, values.values) == ("UpdateAlias", {"functionversion": "2"})  # names: which

    def rollback(version: str) -> DraftStep:
        alias = {"FunctionName": names.ORDERS_FUNCTION, "Name": "live"}
        return DraftStep(
            action=f"Point live back at version {version}",
            call=ApiCall(
                service="lambda", operation="UpdateAlias", params=alias | {"FunctionVersion": version}
            ),
            precondition={"FunctionVersion": "3", "RoutingConfig": None, "RevisionId": "r-3"},
            inverse=ApiCall(
                service="lambda", operation="UpdateAlias", params=alias | {"FunctionVersion": "3"}
            ),
        )

    refused, passed = (
        review(
            [rollback(v)],
            diagnosis,
            incident_id="i",
            function=names.ORDERS_FUNCTION,
            recovery_seconds=60,
            history=values,
        )
        for v in ("2", "1")
    )
    assert [r.reason for r in refused.refusals] == [
        "it sets FunctionVersion to '2', what the trigger itself set: a fix puts back the state from before "
        "the trigger"
    ]
    assert passed.plan is not None, passed.refusals
    assert (
        read_history(diagnosis.model_copy(update={"trigger": None}), [changes], names.ORDERS_FUNCTION).values
        == {}
    )
    # Another operation on the same key (a route deleted, then created again) is the trigger's undo.
    recreated = ApiCall(service="lambda", operation="CreateAlias", params={"FunctionVersion": "2"})
    assert values.set_again(recreated) is None


def test_a_mapping_made_again_takes_only_the_settings_it_was_created_with() -> None:
    """The mapping's creation before the trigger (its CloudTrail summary) records its settings: made again
    with them, the step passes at low risk, its undo the deletion of whatever mapping the call creates;
    with a batch size no change recorded, or from a source the diagnosis did not verify, it is refused."""
    queue = f"arn:aws:sqs:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:{names.ORDERS_QUEUE}"
    created = {"eventSourceArn": queue, "functionName": names.ORDER_WORKER_FUNCTION, "batchSize": 5}
    changes = ToolResult(
        tool="get_recent_changes",
        arguments={"lambda_name": names.ORDER_WORKER_FUNCTION},
        result={
            "events": [
                {
                    "event_name": "CreateEventSourceMapping20150331",
                    "time": "2026-01-01T00:00:00Z",
                    "summary": created,
                }
            ]
        },
    )
    diagnosis = _diagnosis(affected=(names.ORDER_WORKER_FUNCTION, queue))
    history = read_history(diagnosis, [changes], names.ORDER_WORKER_FUNCTION)
    unmapped = {"FunctionName": names.ORDER_WORKER_FUNCTION, "EventSourceArn": queue, "UUID": None}
    operation = BY_CALL[("lambda", "CreateEventSourceMapping")]

    def again(batch: int, source: str = queue) -> DraftStep:
        params = {"EventSourceArn": source, "FunctionName": names.ORDER_WORKER_FUNCTION, "BatchSize": batch}
        state = unmapped | {"EventSourceArn": source}
        return _step("lambda", "CreateEventSourceMapping", params, state, operation.inverse(params, state))

    def reviewed(step: DraftStep) -> Any:
        return review(
            [step],
            diagnosis,
            incident_id="i",
            function=names.ORDER_WORKER_FUNCTION,
            recovery_seconds=60,
            history=history,
        )

    passed = reviewed(again(5))
    assert passed.plan is not None, passed.refusals
    (step,) = passed.plan.steps
    assert (step.risk, step.inverse.operation, step.inverse.params) == (
        "low",
        "DeleteEventSourceMapping",
        {"UUID": CREATED},
    )
    assert undo_of(step.inverse, {"UUID": "new-uuid"}).params == {"UUID": "new-uuid"}
    assert [r.reason for r in reviewed(again(100)).refusals] == [
        "it sets BatchSize to 100, a value no change before the trigger shows: "
        "a fix puts back a recorded setting"
    ]
    other = queue.replace(names.ORDERS_QUEUE, "other-queue")
    assert [r.reason for r in reviewed(again(5, other)).refusals] == [
        f"it changes {other}: neither the incident's function nor a resource the diagnosis verified"
    ]
