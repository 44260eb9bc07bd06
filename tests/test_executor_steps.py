"""The executor's steps on the sandbox: applied only on the state the plan read, recorded with their request
ids, and undone in reverse order back to the state each found; the world is checked with the operator's own
reads, never with the executor's."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from executor.steps import AppliedCall, StepRefused, apply_steps, undo_steps
from supervisor.diagnosis.cli_commands import build_command
from supervisor.remediation.change_history import read_history
from supervisor.remediation.critic import review
from supervisor.remediation.plan import ApiCall, Plan, PlanStep, Recovery
from supervisor.remediation.resolver import resolve
from tests.test_remediation_plan import CASES, _diagnosis, recorded

TIMEOUT = {"FunctionName": names.FUNCTION_NAME, "Timeout": 9}
RESERVED = {"FunctionName": names.FUNCTION_NAME, "ReservedConcurrentExecutions": 4}


def _writer(sandbox: Sandbox) -> Any:
    """The executor's own identity: it applies plans."""
    return sandbox.session(names.EXECUTOR).client


def _world(operator: boto3.Session) -> dict[str, Any]:
    lambda_ = operator.client("lambda")
    config = lambda_.get_function_configuration(FunctionName=names.FUNCTION_NAME)
    reserved = lambda_.get_function_concurrency(FunctionName=names.FUNCTION_NAME)
    return {"Timeout": config["Timeout"], "Reserved": reserved.get("ReservedConcurrentExecutions")}


@pytest.fixture
def original(operator: boto3.Session) -> Iterator[dict[str, Any]]:
    """The function's timeout and reservation before the test, put back by the operator after it."""
    before = _world(operator)
    yield before
    lambda_ = operator.client("lambda")
    lambda_.update_function_configuration(FunctionName=names.FUNCTION_NAME, Timeout=before["Timeout"])
    if before["Reserved"] is None:
        lambda_.delete_function_concurrency(FunctionName=names.FUNCTION_NAME)


def _plan(sandbox: Sandbox, *calls: tuple[str, dict[str, Any]]) -> Plan:
    commands = [
        build_command("lambda", operation, params, region=sandbox.region) for operation, params in calls
    ]
    draft = resolve(_diagnosis(*commands), final=True, read=sandbox.session(names.SUPERVISOR).client)
    assert draft.unplanned == []
    history = read_history(_diagnosis(), [recorded(*(params for _, params in calls))], names.FUNCTION_NAME)
    reviewed = review(
        draft.steps,
        _diagnosis(),
        incident_id="i-1",
        function=names.FUNCTION_NAME,
        recovery_seconds=60,
        history=history,
    )
    assert reviewed.plan is not None, reviewed.refusals
    return reviewed.plan


def test_the_steps_are_applied_in_order_and_undone_back_to_the_world_they_found(
    sandbox: Sandbox, operator: boto3.Session, original: dict[str, Any]
) -> None:
    plan = _plan(sandbox, ("UpdateFunctionConfiguration", TIMEOUT), ("PutFunctionConcurrency", RESERVED))
    told: list[AppliedCall] = []
    reader = sandbox.session(names.SUPERVISOR).client
    done = apply_steps(plan, read=reader, write=_writer(sandbox), applied=told.append)
    assert told == done
    assert [record.call.operation for record in done] == [
        "UpdateFunctionConfiguration",
        "PutFunctionConcurrency",
    ]
    assert all(record.request_id for record in done)
    assert _world(operator) == {"Timeout": 9, "Reserved": 4}
    assert undo_steps(plan, done, read=reader, write=_writer(sandbox)) == []
    assert _world(operator) == original


def test_a_world_that_moved_since_the_plan_stops_the_step_before_its_call(
    sandbox: Sandbox, operator: boto3.Session, original: dict[str, Any]
) -> None:
    plan = _plan(sandbox, ("UpdateFunctionConfiguration", TIMEOUT), ("PutFunctionConcurrency", RESERVED))
    operator.client("lambda").put_function_concurrency(  # someone reserves concurrency meanwhile
        FunctionName=names.FUNCTION_NAME, ReservedConcurrentExecutions=2
    )
    told: list[AppliedCall] = []
    reader = sandbox.session(names.SUPERVISOR).client
    with pytest.raises(StepRefused) as refused:
        apply_steps(plan, read=reader, write=_writer(sandbox), applied=told.append)
    assert refused.value.step == 2
    assert "the world moved since the plan: ReservedConcurrentExecutions None → 2" in str(refused.value)
    assert [record.step for record in told] == [1]  # the first step ran; the second never did
    assert _world(operator) == {"Timeout": 9, "Reserved": 2}
    assert undo_steps(plan, told, read=reader, write=_writer(sandbox)) == []
    assert _world(operator) == {"Timeout": original["Timeout"], "Reserved": 2}  # the other change is theirs


def test_a_step_the_world_already_holds_is_not_called_and_not_undone(
    sandbox: Sandbox, operator: boto3.Session, original: dict[str, Any]
) -> None:
    """Someone applied the second step's fix by hand after the plan (4 reserved, as it sets): the first is
    applied, the second found in place and never called (its write would be in CloudTrail), and the undo
    takes back only what the executor applied."""
    plan = _plan(sandbox, ("UpdateFunctionConfiguration", TIMEOUT), ("PutFunctionConcurrency", RESERVED))
    operator.client("lambda").put_function_concurrency(**RESERVED)
    told: list[AppliedCall] = []
    found: list[int] = []
    reader = sandbox.session(names.SUPERVISOR).client
    called: list[str] = []

    def write(service: str) -> Any:  # the executor's identity, each request it sends noted
        client = _writer(sandbox)(service)
        client.meta.events.register("before-call", lambda model, **_: called.append(model.name))
        return client

    done = apply_steps(plan, read=reader, write=write, applied=told.append, in_place=found.append)
    assert ([record.step for record in done], found, called) == ([1], [2], ["UpdateFunctionConfiguration"])
    assert done == told
    assert undo_steps(plan, done, read=reader, write=_writer(sandbox)) == []
    assert _world(operator) == {"Timeout": original["Timeout"], "Reserved": 4}  # the hand fix is theirs


def test_a_step_off_the_allowlist_is_never_called(sandbox: Sandbox, operator: boto3.Session) -> None:
    plan = _plan(sandbox, ("UpdateFunctionConfiguration", TIMEOUT))
    forged = plan.model_copy(
        update={
            "steps": (
                plan.steps[0].model_copy(
                    update={
                        "call": ApiCall(
                            service="lambda",
                            operation="DeleteFunction",
                            params={"FunctionName": names.FUNCTION_NAME},
                        )
                    }
                ),
            )
        }
    )
    with pytest.raises(StepRefused, match="lambda DeleteFunction is not an allowlisted operation"):
        apply_steps(forged, read=operator.client, write=_writer(sandbox), applied=lambda _: None)
    operator.client("lambda").get_function(FunctionName=names.FUNCTION_NAME)  # still there


def test_an_undo_that_cannot_put_the_state_back_says_what_is_left(
    sandbox: Sandbox, operator: boto3.Session, original: dict[str, Any]
) -> None:
    plan = _plan(sandbox, ("UpdateFunctionConfiguration", TIMEOUT))
    reader = sandbox.session(names.SUPERVISOR).client
    done = apply_steps(plan, read=reader, write=_writer(sandbox), applied=lambda _: None)
    denied = sandbox.session(names.SUPERVISOR).client  # the supervisor may not write: the undo is refused
    left = undo_steps(plan, done, read=reader, write=denied)
    assert len(left) == 1
    assert left[0].startswith("step 1: UpdateFunctionConfiguration failed: An error occurred (AccessDenied")
    assert _world(operator)["Timeout"] == 9


@pytest.mark.parametrize(
    "name",
    [
        "alias moved",
        "egress authorized",
        "inline policy added",
        "statement added",
        "deny entry added",
        "route deleted",
    ],
)
def test_the_executor_finds_its_own_undo_complete_for_each_kind_of_step(
    name: str, sandbox: Sandbox, operator: boto3.Session
) -> None:
    """The executor's own check after an undo (its read, revision ids aside) agrees with the operator's: no
    step it put back exactly is reported as left over."""
    case = CASES[name]
    before, params = case.observe(operator, sandbox.world), case.params(operator, sandbox.world)
    reader = sandbox.session(names.SUPERVISOR).client
    draft = resolve(
        _diagnosis(build_command(case.service, case.operation, params, region=sandbox.region)),
        final=True,
        read=reader,
    )
    (step,) = draft.steps
    plan = Plan(
        incident_id="i-1",
        function=names.FUNCTION_NAME,
        steps=(PlanStep(**step.model_dump(), risk="high"),),
        recovery=Recovery(kind="invocations_succeed", function=names.FUNCTION_NAME, within_seconds=60),
    )
    done = apply_steps(plan, read=reader, write=_writer(sandbox), applied=lambda _: None)
    assert case.observe(operator, sandbox.world) != before
    assert undo_steps(plan, done, read=reader, write=_writer(sandbox)) == []
    assert case.observe(operator, sandbox.world) == before


def test_a_mapping_made_again_is_deleted_by_its_undo_whatever_uuid_it_got(
    sandbox: Sandbox, operator: boto3.Session
) -> None:
    """A queue of the test's own that order-worker's role may read (for the test's length): the plan maps
    it to order-worker, disabled so that nothing is polled; the undo deletes the mapping the call created,
    by the UUID read after the call, and the queue reads unmapped again. order-worker's own mapping, which
    other tests of this sandbox know by its UUID, is never touched."""
    sqs, iam = operator.client("sqs"), operator.client("iam")
    url = sqs.create_queue(QueueName=f"mapping-test-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    queue = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    consume = {
        "Effect": "Allow",
        "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
    }
    iam.put_role_policy(
        RoleName=names.ORDER_WORKER_ROLE,
        PolicyName="mapping-test",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [consume | {"Resource": queue}]}),
    )
    try:
        params = {"EventSourceArn": queue, "FunctionName": names.ORDER_WORKER_FUNCTION, "Enabled": False}
        command = build_command("lambda", "CreateEventSourceMapping", params, region=sandbox.region)
        reader = sandbox.session(names.SUPERVISOR).client
        (step,) = resolve(_diagnosis(command), final=True, read=reader).steps
        unmapped = {"FunctionName": names.ORDER_WORKER_FUNCTION, "EventSourceArn": queue, "UUID": None}
        assert step.precondition == unmapped
        plan = Plan(
            incident_id="i-1",
            function=names.ORDER_WORKER_FUNCTION,
            steps=(PlanStep(**step.model_dump(), risk="low"),),
            recovery=Recovery(kind="records_flow", function=names.ORDER_WORKER_FUNCTION, within_seconds=60),
        )
        (done,) = apply_steps(plan, read=reader, write=_writer(sandbox), applied=lambda _: None)
        assert _mapped(operator, queue) == [done.after["UUID"]] != [None]
        assert undo_steps(plan, [done], read=reader, write=_writer(sandbox)) == []
        assert _mapped(operator, queue) == []
    finally:
        for mapping in _mapped(operator, queue):  # the test failed with one left
            operator.client("lambda").delete_event_source_mapping(UUID=mapping)
        iam.delete_role_policy(RoleName=names.ORDER_WORKER_ROLE, PolicyName="mapping-test")
        sqs.delete_queue(QueueUrl=url)


def _mapped(operator: boto3.Session, queue: str) -> list[str]:
    """The operator's own read: the live mappings from ``queue`` to order-worker."""
    found = operator.client("lambda").list_event_source_mappings(
        EventSourceArn=queue, FunctionName=names.ORDER_WORKER_FUNCTION
    )
    return [m["UUID"] for m in found["EventSourceMappings"] if m.get("State") != "Deleting"]


def test_two_steps_on_one_function_each_find_the_revision_the_one_before_left(
    sandbox: Sandbox, operator: boto3.Session, original: dict[str, Any]
) -> None:
    """Both steps read the function's configuration, whose RevisionId every write changes: the second step
    expects the revision the first one's call left, not the one the plan read, and is applied."""
    memory = operator.client("lambda").get_function_configuration(FunctionName=names.FUNCTION_NAME)[
        "MemorySize"
    ]
    resized = {"FunctionName": names.FUNCTION_NAME, "MemorySize": memory + 128}
    plan = _plan(sandbox, ("UpdateFunctionConfiguration", TIMEOUT), ("UpdateFunctionConfiguration", resized))
    reader = sandbox.session(names.SUPERVISOR).client
    done = apply_steps(plan, read=reader, write=_writer(sandbox), applied=lambda _: None)
    assert [record.step for record in done] == [1, 2]
    assert (
        done[1].before["RevisionId"]
        == done[0].after["RevisionId"]
        != plan.steps[1].precondition["RevisionId"]
    )
    config = operator.client("lambda").get_function_configuration(FunctionName=names.FUNCTION_NAME)
    assert (config["Timeout"], config["MemorySize"]) == (9, memory + 128)
    assert undo_steps(plan, done, read=reader, write=_writer(sandbox)) == []
    config = operator.client("lambda").get_function_configuration(FunctionName=names.FUNCTION_NAME)
    assert (config["Timeout"], config["MemorySize"]) == (original["Timeout"], memory)
