"""Situations outside the drill that came back wrong (issue 42), staged as :mod:`tests.timeline_scenarios`
stages its own: the operator's plain API calls between phases of traffic, each outcome checked, every change
registered for an exact restore."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from chaos.drill import event_traffic
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from chaos.workload.sqs_poller import ACCESS_PROBLEM, OK, SqsPoller
from tests.fault_scenarios import (
    IAM_EVENTS_REGION,
    Undo,
    _buggy_orders_api,
    _deployed_package,
    _inline_policy,
    _put_inline_policy,
)
from tests.timeline_scenarios import IAM_QUIET_SECONDS, Stage, Staged, expect, healthy

T = TypeVar("T")

SETTINGS_EVENT = "UpdateFunctionConfiguration20150331v2"
ALIAS_EVENT = "UpdateAlias20150331"
DECIMAL_ERROR = "Object of type Decimal is not JSON serializable"
INTAKE_ORDER = "misses-0001"  # the one order these situations store, deleted by their restore
MISSPELLED_BUCKET = f"{names.INPUT_BUCKET}x"  # no such bucket in the account
WORKER_ORDER = "misses-0002"  # the order receive_denied_managed_grant sends, deleted by its restore
CONSUMER_POLICY = "orders-queue-consumer"  # the customer managed policy that takes over order-worker's grant
DENY_POLICY = "no-receive"  # the inline policy whose Deny is the trigger
MISSING_KEY = "incoming/orders-9999.json"  # no such object in the input bucket


def _environment(stage: Stage, undo: Undo, **changed: str | None) -> None:
    """One UpdateFunctionConfiguration of the stage's function: each variable set, or removed when None;
    the restore puts the whole environment back."""
    lambda_, name = stage.operator.client("lambda"), stage.function
    earlier = lambda_.get_function_configuration(FunctionName=name)["Environment"]["Variables"]
    later = {k: v for k, v in (earlier | changed).items() if v is not None}

    def put(variables: dict[str, str]) -> None:
        lambda_.update_function_configuration(FunctionName=name, Environment={"Variables": variables})

    stage.call(SETTINGS_EVENT, lambda: put(later))
    undo(lambda: put(earlier))


def put_back_then_new(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """data-processor's timeout cut below what its batches need and put back; then, a moment later,
    INPUT_BUCKET removed from its environment."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    lambda_, name = stage.operator.client("lambda"), names.FUNCTION_NAME
    timeout = lambda_.get_function_configuration(FunctionName=name)["Timeout"]

    def set_timeout(seconds: int) -> None:
        lambda_.update_function_configuration(FunctionName=name, Timeout=seconds)

    slow = [names.input_event(0, work_seconds=1.5), names.input_event(1, work_seconds=1.5)]
    healthy(stage, slow)
    stage.call(SETTINGS_EVENT, lambda: set_timeout(1))
    undo(lambda: set_timeout(timeout))
    expect(stage.invoke("timeout cut", slow), {"timed_out": 2}, "Sandbox.Timedout", "timed out after 1.00")
    stage.call(SETTINGS_EVENT, lambda: set_timeout(timeout))
    _environment(stage, undo, INPUT_BUCKET=None)
    expect(stage.invoke("variable removed", slow), {"failed": 2}, "KeyError", "INPUT_BUCKET")
    return stage.finish(slow[0], timeout=timeout)


def rollback_to_buggy(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """orders-api's release 2 (a JSON encoding that fails on a found order) published, release 3 (the code
    as deployed) published and served; then the alias moved from 3 back to 2."""
    name, alias = names.ORDERS_FUNCTION, names.ORDERS_ALIAS
    stage = Stage(sandbox, runtime, name, alias)
    lambda_ = stage.operator.client("lambda")
    served = lambda_.get_alias(FunctionName=name, Name=alias)["FunctionVersion"]
    original = _deployed_package(sandbox, name)

    def release(package: bytes, description: str) -> str:
        stage.call(
            "UpdateFunctionCode20150331v2",
            lambda: lambda_.update_function_code(FunctionName=name, ZipFile=package),
        )
        version: str = stage.call(
            "PublishVersion20150331",
            lambda: lambda_.publish_version(FunctionName=name, Description=description),
        )["Version"]
        undo(lambda: lambda_.delete_function(FunctionName=name, Qualifier=version))
        return version

    def point(version: str) -> None:
        stage.call(
            ALIAS_EVENT, lambda: lambda_.update_alias(FunctionName=name, Name=alias, FunctionVersion=version)
        )

    undo(lambda: lambda_.update_function_code(FunctionName=name, ZipFile=original))
    buggy = release(_buggy_orders_api(original), "release 2")
    fixed = release(original, "release 3")
    point(fixed)
    undo(lambda: lambda_.update_alias(FunctionName=name, Name=alias, FunctionVersion=served))
    assert {i.version for i in healthy(stage, [names.order_request(), names.order_request()])} == {fixed}
    point(buggy)
    failing = stage.invoke("after the rollback", [names.order_request(), names.order_request()])
    expect(failing, {"failed": 2}, "TypeError", DECIMAL_ERROR)
    assert {i.version for i in failing} == {buggy}
    return stage.finish(names.order_request(), buggy=buggy, fixed=fixed)


def truncated_bodies(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """order-intake (Node.js) sent orders, some with their JSON body cut short, between ordinary ones;
    nothing changed. The runtime's SyntaxError is the input's, not the code's."""
    stage = Stage(sandbox, runtime, names.ORDER_INTAKE_FUNCTION, None)
    table = stage.operator.client("dynamodb")
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": INTAKE_ORDER}}))
    order = names.order_submission(order_id=INTAKE_ORDER)
    cut = order | {"body": str(order["body"])[:12]}
    healthy(stage, [order, order])
    mixed = stage.invoke("mixed", [cut, order, cut, order, cut])
    assert [i.status for i in mixed] == ["failed", "succeeded", "failed", "succeeded", "failed"]
    expect(mixed, {"failed": 3, "succeeded": 2}, "SyntaxError", "JSON")
    return stage.finish(order)


def unreported_errors(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """data-processor logging JSON at SystemLogLevel WARN (Lambda writes no start or report record), then
    INPUT_BUCKET removed: only the runtime's error records, with their request ids, show the failures."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    lambda_, name = stage.operator.client("lambda"), names.FUNCTION_NAME
    configuration = lambda_.get_function_configuration(FunctionName=name)
    logging = configuration["LoggingConfig"]
    quiet = {"LogFormat": "JSON", "SystemLogLevel": "WARN", "ApplicationLogLevel": "INFO"}
    stage.call(
        SETTINGS_EVENT, lambda: lambda_.update_function_configuration(FunctionName=name, LoggingConfig=quiet)
    )
    undo(lambda: lambda_.update_function_configuration(FunctionName=name, LoggingConfig=logging))
    healthy(stage, [names.input_event(0), names.input_event(1)])
    _environment(stage, undo, INPUT_BUCKET=None)
    failing = stage.invoke("variable removed", [names.input_event(0), names.input_event(1)])
    expect(failing, {"failed": 2}, "KeyError", "INPUT_BUCKET")
    return stage.finish(names.input_event(0))


def misspelled_bucket(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Its role's policy written again unchanged (a decoy: the role changed on paper), then data-processor's
    INPUT_BUCKET set to a misspelling of its bucket, one no one owns: S3 answers the role's GetObject with
    AccessDenied, as it does for a bucket the caller may not list. No success read bounds the search."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    policy = _inline_policy(sandbox)
    stage.call("PutRolePolicy", lambda: _put_inline_policy(sandbox, policy), IAM_EVENTS_REGION)
    _environment(stage, undo, INPUT_BUCKET=MISSPELLED_BUCKET)
    failing = stage.invoke("after the change", [names.input_event(0), names.input_event(1)])
    expect(failing, {"failed": 2}, "AccessDenied", "Access Denied")
    return stage.finish(names.input_event(0))


def one_missing_object(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """data-processor processes batches that exist, then one request names a batch that does not (S3
    answers NoSuchKey); nothing changed, and no request follows it."""
    stage = Stage(sandbox, runtime, names.FUNCTION_NAME, None)
    time.sleep(IAM_QUIET_SECONDS)  # whatever changed before the stage (the world's build) is well past
    healthy(stage, [names.input_event(0), names.input_event(1), names.input_event(2), names.input_event(0)])
    failing = stage.invoke("one bad request", [{"key": MISSING_KEY}])
    expect(failing, {"failed": 1}, "NoSuchKey", "The specified key does not exist")
    return stage.finish(names.input_event(0))


def receive_denied_managed_grant(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """order-worker's queue grant moved from its inline policy to a customer managed policy (the sandbox
    has no AWS managed policies: docs/sandbox.md); orders
    processed; then an inline Deny on sqs:ReceiveMessage added to its role: Lambda's poller is refused and
    orders-queue backs up. ``detail["poll"]`` polls order-worker's mapping once, as Lambda does."""
    stage = Stage(sandbox, runtime, names.ORDER_WORKER_FUNCTION, None)
    iam, sqs = stage.operator.client("iam"), stage.operator.client("sqs")
    role, inline = names.ORDER_WORKER_ROLE, f"{names.ORDER_WORKER_FUNCTION}-access"
    table = stage.operator.client("dynamodb")
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": WORKER_ORDER}}))
    undo(lambda: event_traffic.empty(stage.operator))
    document = iam.get_role_policy(RoleName=role, PolicyName=inline)["PolicyDocument"]
    consume = [s for s in document["Statement"] if s.get("Sid") == "ConsumeOrdersQueue"]
    assert len(consume) == 1, document

    def iam_call(event_name: str, action: Callable[[], T]) -> T:
        return stage.call(event_name, action, IAM_EVENTS_REGION)

    def put(name: str, statements: list[dict[str, Any]]) -> None:
        iam.put_role_policy(
            RoleName=role, PolicyName=name, PolicyDocument=json.dumps(document | {"Statement": statements})
        )

    grant = json.dumps(document | {"Statement": consume})
    created = iam_call(
        "CreatePolicy", lambda: iam.create_policy(PolicyName=CONSUMER_POLICY, PolicyDocument=grant)
    )
    arn = created["Policy"]["Arn"]
    undo(lambda: iam.delete_policy(PolicyArn=arn))
    iam_call("AttachRolePolicy", lambda: iam.attach_role_policy(RoleName=role, PolicyArn=arn))
    undo(lambda: iam.detach_role_policy(RoleName=role, PolicyArn=arn))
    iam_call("PutRolePolicy", lambda: put(inline, [s for s in document["Statement"] if s not in consume]))
    undo(lambda: put(inline, document["Statement"]))
    url = sqs.get_queue_url(QueueName=names.ORDERS_QUEUE)["QueueUrl"]
    queue = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    poller = SqsPoller(runtime, sandbox.session(names.LAMBDA_SERVICE))

    def poll() -> str | None:
        mapped = f":function:{names.ORDER_WORKER_FUNCTION}"
        outcomes = [o for o in poller.poll_once() if o.function_arn.endswith(mapped)]
        assert len(outcomes) == 1, outcomes
        return outcomes[0].result

    def orders(phase: str, count: int, result: str) -> None:
        for _ in range(count):
            sqs.send_message(QueueUrl=url, MessageBody=names.order_message(order_id=WORKER_ORDER))
        stage.traffic(phase, lambda: [] if poll() == result else pytest.fail(f"{phase}: not {result}"))

    time.sleep(IAM_QUIET_SECONDS)  # the grant's moves well before the last success: no candidates
    orders("healthy", 2, OK)
    assert event_traffic.waiting(stage.operator) == 0
    deny = {"Effect": "Deny", "Action": "sqs:ReceiveMessage", "Resource": queue}
    iam_call("PutRolePolicy", lambda: put(DENY_POLICY, [deny]))
    undo(lambda: _delete_inline(iam, role, DENY_POLICY))  # the fix a test applies may have deleted it
    orders("receive denied", 3, ACCESS_PROBLEM)
    assert event_traffic.waiting(stage.operator) == 3

    def drains() -> str | None:
        """A new order is processed and orders-queue empties (the three waiting orders with it)."""
        sqs.send_message(QueueUrl=url, MessageBody=names.order_message(order_id=WORKER_ORDER))
        result, left = poll(), event_traffic.waiting(stage.operator)
        table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": WORKER_ORDER}})
        return None if (result, left) == (OK, 0) else f"polled: {result}; {left} message(s) left in the queue"

    return stage.finish(None, works=drains)


def _delete_inline(iam: Any, role: str, policy: str) -> None:
    if policy in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        iam.delete_role_policy(RoleName=role, PolicyName=policy)
