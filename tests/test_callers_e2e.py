"""The callers of issue 45, end to end.

A caller the function's resource policy no longer lets in: the statement that lets anonymous callers invoke
order-intake through its public function URL, or the one that lets orders-rest-api invoke orders-api:live,
removed by the operator's own boto3 call, orders sent and refused before the function runs, then diagnosed
by the `rules` model over MCP: permission_loss, the removal its trigger, and the statement added back,
applied as a person approving it would, lets the next order through. The same for the statement that lets
another account's user call report-builder's AWS_IAM URL, its requests signed; for an HTTP API the operator
puts in front of a new function, whose statement is then removed; and its healthy look-alike, a function
answering through its HTTP API beside a second API nobody calls, whose statement is gone.

A stream whose bad record blocks its shard: clicks on both shards of the clickstream, then a record that is
not a click on the first; Lambda's poller (the sandbox's) retries its batch forever while the second shard
goes on: bad_input with no trigger, the stream's record age as its impact, and the mapping's retry limit
with bisection, applied, lets the first shard move on. The same on a DynamoDB table's stream read by a Python
or a Node.js function, whose one shard stalls with no success beside it: the same error on every retry after
successes, nothing changed since."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from chaos.drill.event_traffic import DRILL_ORDER
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.api_gateway import RestApis
from chaos.workload.function_urls import FunctionUrls, signed_headers
from chaos.workload.http_apis import HttpApis
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from chaos.workload.stream_poller import StreamPoller
from tests.fault_scenarios import RestoreSteps, Undo
from tests.http_api_stage import STAGE as HTTP_STAGE
from tests.http_api_stage import HttpApi, http_api
from tests.stream_stage import TABLE_STREAM_READS, table_with_stream
from tests.timeline_cases import diagnosed, own_world, restored_exactly
from tests.timeline_scenarios import (
    IAM_QUIET_SECONDS,
    Situation,
    Stage,
    Staged,
    allowed,
    create_function,
    new_role,
    world,
)

sandbox, mcp_server_url, before = own_world("callers")

INTAKE, STATEMENT = names.ORDER_INTAKE_FUNCTION, names.ORDER_INTAKE_URL_INVOKE_STATEMENT
ORDERS, ALIAS, API_STATEMENT = names.ORDERS_FUNCTION, names.ORDERS_ALIAS, names.ORDERS_API_STATEMENT
REPORT = names.REPORT_FUNCTION
READER_ARN = f"arn:aws:iam::{names.SECOND_ACCOUNT_ID}:user/{names.REPORT_READER}"


def url_statement_removed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Two orders through the URL, answered 201; the InvokeFunction statement removed; two more, each
    answered 403 with no invocation."""
    stage = Stage(sandbox, runtime, INTAKE, None)
    lambda_, table = stage.operator.client("lambda"), stage.operator.client("dynamodb")
    urls = FunctionUrls(runtime, sandbox.session(names.LAMBDA_SERVICE))
    url, body = sandbox.world.order_intake_url, str(names.order_submission(order_id=DRILL_ORDER)["body"])
    undo(lambda: _forget_order(table))
    policy = json.loads(lambda_.get_policy(FunctionName=INTAKE)["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == STATEMENT]

    def post(phase: str, count: int, status: int) -> None:
        def run() -> list[Invocation]:
            answers, seen = _sent(runtime, lambda: urls.request(url, "POST", body).status, count)
            assert answers == [status] * count, (phase, answers)
            return seen

        stage.traffic(phase, run)

    time.sleep(IAM_QUIET_SECONDS)  # the world's making well before the last success
    post("accepted", 2, 201)
    stage.call(
        "RemovePermission20150331v2",
        lambda: lambda_.remove_permission(FunctionName=INTAKE, StatementId=STATEMENT),
    )
    undo(lambda: _written_again(lambda_, INTAKE, STATEMENT, Principal="*", InvokedViaFunctionUrl=True))
    post("refused", 2, 403)

    def answers() -> str | None:
        status = urls.request(url, "POST", body).status
        _forget_order(table)
        return None if status == 201 else f"the URL answered {status}"

    return stage.finish(None, works=answers, statement=statement)


def _forget_order(table: Any) -> None:
    """The order a request stored deleted again: the world is left as the test found it."""
    table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}})


def _sent(
    runtime: LocalLambdaRuntime, send: Callable[[], int], count: int
) -> tuple[list[int], list[Invocation]]:
    """``count`` requests sent: the status of each answer, and the invocations they led to."""
    seen: list[Invocation] = []
    runtime.observers.append(seen.append)
    try:
        answers = [send() for _ in range(count)]
    finally:
        runtime.observers.remove(seen.append)
    return answers, seen


def _written_again(lambda_: Any, function: str, sid: str, **statement: Any) -> None:
    """The function's statement ``sid`` added back, unless a fix already did (a staged removal's undo)."""
    present = json.loads(lambda_.get_policy(FunctionName=function)["Policy"])["Statement"]
    if not any(s["Sid"] == sid for s in present):
        action = "lambda:InvokeFunctionUrl" if "FunctionUrlAuthType" in statement else "lambda:InvokeFunction"
        lambda_.add_permission(FunctionName=function, StatementId=sid, Action=action, **statement)


async def test_a_url_caller_refused_by_the_policy_is_permission_loss_and_the_statement_added_back(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    situation: Callable[[Sandbox, LocalLambdaRuntime, Undo], Staged] = url_statement_removed
    case = await diagnosed(situation, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["permission_loss"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    case.apply_first_command(
        "lambda add-permission",
        "AddPermission",
        {
            "FunctionName": INTAKE,
            "StatementId": STATEMENT,
            "Action": "lambda:InvokeFunction",
            "Principal": "*",
            "InvokedViaFunctionUrl": True,
        },
    )
    restored_exactly(case, steps, before)


def signed_caller_removed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Two reports GET through report-builder's AWS_IAM URL, signed by report-reader (another account),
    answered 200; the statement that lets report-reader invoke it through the URL removed; two more, each
    answered 403 with no invocation (report-reader's own policy still grants both actions)."""
    stage = Stage(sandbox, runtime, REPORT, None)
    lambda_, s3 = stage.operator.client("lambda"), stage.operator.client("s3")
    urls, reader = sandbox.function_urls(runtime), sandbox.session(names.REPORT_READER)
    url = sandbox.world.report_builder_url
    policy = json.loads(lambda_.get_policy(FunctionName=REPORT)["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == names.REPORT_URL_STATEMENT]
    stored: list[Invocation] = []
    undo(lambda: _forget_reports(s3, stored))

    def signed_get() -> int:  # signed anew each time, as an SDK does
        return urls.request(url, "GET", None, signed_headers(reader, url, "GET", None)).status

    def get(count: int) -> tuple[list[int], list[Invocation]]:
        answers, seen = _sent(runtime, signed_get, count)
        stored.extend(seen)
        return answers, seen

    def traffic(phase: str, status: int) -> None:
        def run() -> list[Invocation]:
            answers, seen = get(2)
            assert answers == [status] * 2, (phase, answers)
            return seen

        stage.traffic(phase, run)

    time.sleep(IAM_QUIET_SECONDS)
    traffic("answered", 200)
    stage.call(
        "RemovePermission20150331v2",
        lambda: lambda_.remove_permission(FunctionName=REPORT, StatementId=names.REPORT_URL_STATEMENT),
    )
    undo(
        lambda: _written_again(
            lambda_, REPORT, names.REPORT_URL_STATEMENT, Principal=READER_ARN, FunctionUrlAuthType="AWS_IAM"
        )
    )
    traffic("refused", 403)

    def answers() -> str | None:
        [status], _ = get(1)
        return None if status == 200 else f"the URL answered {status}"

    return stage.finish(None, works=answers, statement=statement)


def _forget_reports(s3: Any, made: list[Invocation]) -> None:
    for invocation in made:
        s3.delete_object(Bucket=names.REPORT_BUCKET, Key=f"reports/{invocation.request_id}.json")


async def test_a_signed_caller_the_policy_no_longer_names_is_permission_loss_and_its_statement_written_again(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    """The statement comes back as the AddPermission the change history holds wrote it: the principal, an
    ARN of another account, is read from there, not assumed."""
    case = await diagnosed(signed_caller_removed, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["permission_loss"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    case.apply_first_command(
        "lambda add-permission",
        "AddPermission",
        {
            "FunctionName": REPORT,
            "StatementId": names.REPORT_URL_STATEMENT,
            "Action": "lambda:InvokeFunctionUrl",
            "Principal": READER_ARN,
            "FunctionUrlAuthType": "AWS_IAM",
        },
    )
    restored_exactly(case, steps, before)


def api_statement_removed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Two orders POSTed to orders-rest-api, answered 201; the alias's statement for the API removed; two
    more, each answered 500 with no invocation."""
    stage = Stage(sandbox, runtime, ORDERS, ALIAS)
    lambda_, table = stage.operator.client("lambda"), stage.operator.client("dynamodb")
    apis = RestApis(runtime, sandbox.session(names.APIGATEWAY_SERVICE))
    api_id, body = sandbox.world.orders_rest_api_id, json.dumps({"order_id": DRILL_ORDER})
    qualified = {"FunctionName": ORDERS, "Qualifier": ALIAS}
    undo(lambda: _forget_order(table))
    policy = json.loads(lambda_.get_policy(**qualified)["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == API_STATEMENT]

    def post(phase: str, count: int, status: int, invoked: int) -> None:
        def run() -> list[Invocation]:
            seen: list[Invocation] = []
            runtime.observers.append(seen.append)
            try:
                answers = [
                    apis.request(api_id, names.ORDERS_API_STAGE, "POST", "/orders", body).status
                    for _ in range(count)
                ]
            finally:
                runtime.observers.remove(seen.append)
            assert (answers, len(seen)) == ([status] * count, invoked), (phase, answers, seen)
            return seen

        stage.traffic(phase, run)

    time.sleep(IAM_QUIET_SECONDS)
    post("answered", 2, 201, 2)
    stage.call(
        "RemovePermission20150331v2",
        lambda: lambda_.remove_permission(**qualified, StatementId=API_STATEMENT),
    )

    def added_back() -> None:
        present = json.loads(lambda_.get_policy(**qualified)["Policy"])["Statement"]
        if not any(s["Sid"] == API_STATEMENT for s in present):
            lambda_.add_permission(
                **qualified,
                StatementId=API_STATEMENT,
                Action="lambda:InvokeFunction",
                Principal="apigateway.amazonaws.com",
                SourceArn=statement["Condition"]["ArnLike"]["AWS:SourceArn"],
            )

    undo(added_back)
    post("refused", 2, 500, 0)

    def answers() -> str | None:
        status = apis.request(api_id, names.ORDERS_API_STAGE, "POST", "/orders", body).status
        _forget_order(table)
        return None if status == 201 else f"the API answered {status}"

    return stage.finish(None, works=answers, statement=statement)


async def test_an_api_refused_by_the_alias_policy_is_permission_loss_and_the_statement_added_back(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(api_statement_removed, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["permission_loss"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    source = case.staged.detail["statement"]["Condition"]["ArnLike"]["AWS:SourceArn"]
    # the console's statement: every route of the API
    assert source.startswith("arn:aws:execute-api:")
    assert source.endswith(f":{names.ACCOUNT_ID}:{sandbox.world.orders_rest_api_id}/*")
    case.apply_first_command(
        "lambda add-permission",
        "AddPermission",
        {
            "FunctionName": ORDERS,
            "Qualifier": ALIAS,
            "StatementId": API_STATEMENT,
            "Action": "lambda:InvokeFunction",
            "Principal": "apigateway.amazonaws.com",
            "SourceArn": source,
        },
    )
    restored_exactly(case, steps, before)


HTTP_FUNCTION = "orders-http-handler"
HTTP_HANDLER = """\
import json


def handler(event, context):
    if event["httpMethod"] == "GET":
        return {"statusCode": 404, "body": json.dumps({"message": "no such order"})}
    return {"statusCode": 201, "body": json.dumps({"accepted": json.loads(event["body"])["order_id"]})}
"""


def _http_function(stage: Stage, undo: Undo) -> str:
    """The stage's new function, answering orders: its ARN."""
    role = new_role(
        stage, undo, f"{HTTP_FUNCTION}-role", "logs", [allowed(["logs:CreateLogStream", "logs:PutLogEvents"])]
    )
    create_function(stage, undo, role, HTTP_HANDLER, quiet=False)
    return str(
        stage.operator.client("lambda").get_function_configuration(FunctionName=HTTP_FUNCTION)["FunctionArn"]
    )


def _requests(
    stage: Stage,
    apis: HttpApis,
    api: HttpApi,
    phase: str,
    method: str,
    path: str,
    statuses: list[int],
    invoked: int,
) -> None:
    """One phase of requests to the API's stage: each answered with its status, ``invoked`` invocations."""
    body = json.dumps({"order_id": DRILL_ORDER}) if method == "POST" else None

    def run() -> list[Invocation]:
        seen: list[Invocation] = []
        stage.runtime.observers.append(seen.append)
        try:
            answers = [apis.request(api.api_id, HTTP_STAGE, method, path, body).status for _ in statuses]
        finally:
            stage.runtime.observers.remove(seen.append)
        assert (answers, len(seen)) == (statuses, invoked), (phase, answers, seen)
        return seen

    stage.traffic(phase, run)


def http_api_statement_removed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """A new function and an HTTP API in front of it (payload 1.0, a JSON access log), made by the operator;
    two orders answered 201; the function's statement for the API removed; two more, each answered 500 with
    no invocation. The function is its own, so that no other test's change to a policy is in its history."""
    stage = Stage(sandbox, runtime, HTTP_FUNCTION, None)
    api = http_api(stage.operator, undo, _http_function(stage, undo), call=stage.call)
    apis = HttpApis(runtime, sandbox.session(names.APIGATEWAY_SERVICE))
    time.sleep(IAM_QUIET_SECONDS)  # what the operator made, well before the first order
    _requests(stage, apis, api, "answered", "POST", "/orders", [201, 201], 2)
    lambda_ = stage.operator.client("lambda")
    stage.call(
        "RemovePermission20150331v2",
        lambda: lambda_.remove_permission(FunctionName=HTTP_FUNCTION, StatementId=api.statement_id),
    )
    _requests(stage, apis, api, "refused", "POST", "/orders", [500, 500], 0)

    def answers() -> str | None:
        status = apis.request(api.api_id, HTTP_STAGE, "POST", "/orders", json.dumps({"order_id": "o"})).status
        return None if status == 201 else f"the HTTP API answered {status}"

    return stage.finish(None, works=answers, api=api)


async def test_an_http_api_refused_by_the_function_policy_is_permission_loss_and_the_statement_added_back(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(http_api_statement_removed, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["permission_loss"], case.why
    case.assert_trigger(case.staged.changes[-1], failed=False)
    api = case.staged.detail["api"]
    case.apply_first_command(
        "lambda add-permission",
        "AddPermission",
        {
            "FunctionName": HTTP_FUNCTION,
            "StatementId": api.statement_id,
            "Action": "lambda:InvokeFunction",
            "Principal": "apigateway.amazonaws.com",
            "SourceArn": api.source_arn,
        },
    )
    steps.restore()  # the function and its API gone again: the probe cannot be asked after the restore
    assert world(sandbox) == before


def http_api_answered(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """The healthy look-alike: the new function answers every order through its HTTP API and answers 404 for
    an order it does not have (its own answer: the stage counts 4XX); a second HTTP API in front of it, whose
    statement the operator removed, is called by no one (its routes refused, its stage with no 5XX)."""
    stage = Stage(sandbox, runtime, HTTP_FUNCTION, None)
    arn = _http_function(stage, undo)
    api, unused = (http_api(stage.operator, undo, arn, call=stage.call) for _ in range(2))
    lambda_ = stage.operator.client("lambda")
    stage.call(
        "RemovePermission20150331v2",
        lambda: lambda_.remove_permission(FunctionName=HTTP_FUNCTION, StatementId=unused.statement_id),
    )
    apis = HttpApis(runtime, sandbox.session(names.APIGATEWAY_SERVICE))
    time.sleep(IAM_QUIET_SECONDS)
    _requests(stage, apis, api, "answered", "POST", "/orders", [201, 201, 201], 3)
    _requests(stage, apis, api, "not found", "GET", "/orders/missing", [404], 1)
    return stage.finish(None, works=lambda: None, api=api)


async def test_a_function_answering_through_its_http_api_is_not_blamed_for_an_api_nobody_calls(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(http_api_answered, sandbox, mcp_server_url, runtime, steps)
    assert "permission_loss" not in case.diagnosis.fault_types, case.why
    steps.restore()
    assert world(sandbox) == before


CLICKS = names.CLICK_FUNCTION
SHARD_KEYS = ("0", str(2**127 + 1))  # explicit hash keys in the clickstream's first and second shard
STALL_ROUNDS, ROUND_SECONDS = 3, 1.5  # the first shard's records wait 4.5 s at least: past its 3 s timeout


def poison_on_the_stream(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Two clicks on each shard, counted; a record that is not a click (and a click) on the first shard, then
    a click on the second each round: the first shard's batch fails every round, the second's succeed."""
    stage = Stage(sandbox, runtime, CLICKS, None)
    kinesis, lambda_ = stage.operator.client("kinesis"), stage.operator.client("lambda")
    poller = StreamPoller(runtime, sandbox.session(names.LAMBDA_SERVICE))
    mapping = sandbox.world.click_mapping_uuid
    undo(lambda: _stream_defaults(lambda_, mapping))

    def put(shard: int, data: str) -> None:
        kinesis.put_record(
            StreamName=names.CLICK_STREAM,
            Data=data.encode(),
            PartitionKey="p",
            ExplicitHashKey=SHARD_KEYS[shard],
        )

    def polled(rounds: int, before_each: Callable[[], None], pause: float = 0.0) -> list[Invocation]:
        return _polled(runtime, poller, rounds, before_each, pause)

    for shard in (0, 1):
        put(shard, names.click())
    counted = stage.traffic("counted", lambda: polled(1, lambda: None))
    assert [i.status for i in counted] == ["succeeded"] * 2, counted
    put(0, "not a click {")
    put(0, names.click())
    stalled = stage.traffic(
        "stalled", lambda: polled(STALL_ROUNDS, lambda: put(1, names.click("/cart")), ROUND_SECONDS)
    )
    assert sorted(i.status for i in stalled) == ["failed"] * STALL_ROUNDS + ["succeeded"] * STALL_ROUNDS

    def moves_on() -> str | None:
        put(0, names.click("/moved-on"))
        done = polled(12, lambda: None)
        pages = [p for i in done if isinstance(i.result, dict) for p in i.result.get("pages", {})]
        return (
            None if "/moved-on" in pages else f"the first shard is still stalled: {[i.status for i in done]}"
        )

    return stage.finish(None, works=moves_on)


def _polled(
    runtime: LocalLambdaRuntime,
    poller: StreamPoller,
    rounds: int,
    before_each: Callable[[], None],
    pause: float,
) -> list[Invocation]:
    """The invocations of ``rounds`` passes of Lambda's stream poller, each after ``before_each`` and
    ``pause`` seconds."""
    seen: list[Invocation] = []
    runtime.observers.append(seen.append)
    try:
        for _ in range(rounds):
            before_each()
            time.sleep(pause)
            poller.poll_once()
    finally:
        runtime.observers.remove(seen.append)
    return seen


def _stream_defaults(lambda_: Any, mapping: str) -> None:
    """The mapping as the world made it: retried forever, never bisected."""
    lambda_.update_event_source_mapping(
        UUID=mapping, MaximumRetryAttempts=-1, BisectBatchOnFunctionError=False
    )


async def test_a_bad_record_blocking_its_shard_is_bad_input_and_the_mapping_lets_the_shard_move_on(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(poison_on_the_stream, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["bad_input"], case.why
    assert case.diagnosis.trigger is None, case.why
    stream = sandbox.world.clickstream_arn
    ages = [f for f in case.diagnosis.impact if f.kind == "record_age_ms"]
    assert [f.resource for f in ages] == [stream], case.diagnosis.impact
    assert ages[0].value > 1000 * names.CLICK_TIMEOUT_SECONDS
    case.apply_first_command(
        "lambda update-event-source-mapping",
        "UpdateEventSourceMapping",
        {
            "UUID": sandbox.world.click_mapping_uuid,
            "MaximumRetryAttempts": 2,
            "BisectBatchOnFunctionError": True,
        },
    )
    restored_exactly(case, steps, before)


WATCHER, WATCHER_ROLE, WATCHED = "order-watcher", "order-watcher-role", "order-changes"
WATCHER_TIMEOUT_SECONDS = 3
# Reads each changed order's JSON payload from the table's stream: a payload cut short fails its batch.
WATCHERS = {
    "python3.12": """\
import json


def handler(event, context):
    totals = [json.loads(r["dynamodb"]["NewImage"]["payload"]["S"])["amount"] for r in event["Records"]]
    return {"seen": len(totals), "total": sum(totals)}
""",
    "nodejs22.x": """\
export const handler = async (event) => {
  const totals = event.Records.map((r) => JSON.parse(r.dynamodb.NewImage.payload.S).amount);
  return { seen: totals.length, total: totals.reduce((a, b) => a + b, 0) };
};
""",
}


def _table_stream_poison(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo, language: str) -> Staged:
    """A table whose stream (one shard) order-watcher (``language``) reads through a mapping made with
    Lambda's defaults; two orders counted; then an order whose payload is cut short, and another: the batch
    that holds the bad one fails every round, and every later order waits behind it."""
    stage = Stage(sandbox, runtime, WATCHER, None)
    dynamodb, lambda_ = stage.operator.client("dynamodb"), stage.operator.client("lambda")
    stream = stage.call("CreateTable", lambda: table_with_stream(stage.operator, undo, WATCHED))
    logs = ["logs:CreateLogStream", "logs:PutLogEvents"]
    role = new_role(stage, undo, WATCHER_ROLE, "watch", [allowed(logs), allowed(TABLE_STREAM_READS)])
    create_function(
        stage,
        undo,
        role,
        WATCHERS[language],
        quiet=False,
        runtime=language,
        Timeout=WATCHER_TIMEOUT_SECONDS,
        MemorySize=128,
    )
    mapping = stage.call(
        "CreateEventSourceMapping20150331",
        lambda: lambda_.create_event_source_mapping(
            FunctionName=WATCHER, EventSourceArn=stream, StartingPosition="TRIM_HORIZON"
        ),
    )["UUID"]
    undo(lambda: lambda_.delete_event_source_mapping(UUID=mapping))
    time.sleep(IAM_QUIET_SECONDS)  # well before the traffic: no lag lets the set-up be the cause
    poller = StreamPoller(runtime, sandbox.session(names.LAMBDA_SERVICE))
    count = iter(range(100))

    def put(payload: str) -> None:
        item = {"id": {"S": f"o-{next(count)}"}, "payload": {"S": payload}}
        dynamodb.put_item(TableName=WATCHED, Item=item)

    def polled(rounds: int, pause: float = 0.0) -> list[Invocation]:
        seen = _polled(runtime, poller, rounds, lambda: None, pause)
        return [i for i in seen if i.function_name == WATCHER]

    put('{"amount": 3}')
    put('{"amount": 4}')
    counted = stage.traffic("counted", lambda: polled(1))
    assert [i.status for i in counted] == ["succeeded"], counted
    put('{"amount": ')
    put('{"amount": 5}')
    stalled = stage.traffic("stalled", lambda: polled(STALL_ROUNDS, ROUND_SECONDS))
    assert [i.status for i in stalled] == ["failed"] * STALL_ROUNDS, stalled

    def moves_on() -> str | None:
        put('{"amount": 6}')
        done = polled(12)
        return None if any(i.status == "succeeded" for i in done) else f"still stalled: {done}"

    return stage.finish(None, works=moves_on, stream=stream, mapping=mapping)


def python_watcher_stalled(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    return _table_stream_poison(sandbox, runtime, undo, "python3.12")


def node_watcher_stalled(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    return _table_stream_poison(sandbox, runtime, undo, "nodejs22.x")


@pytest.mark.parametrize("situation", [python_watcher_stalled, node_watcher_stalled])
async def test_a_bad_record_blocking_a_table_stream_s_only_shard(
    situation: Situation,
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(situation, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["bad_input"], case.why
    assert case.diagnosis.trigger is None, case.why
    ages = [f for f in case.diagnosis.impact if f.kind == "record_age_ms"]
    assert [f.resource for f in ages] == [case.staged.detail["stream"]], case.diagnosis.impact
    assert ages[0].value > 1000 * WATCHER_TIMEOUT_SECONDS
    case.apply_first_command(
        "lambda update-event-source-mapping",
        "UpdateEventSourceMapping",
        {
            "UUID": case.staged.detail["mapping"],
            "MaximumRetryAttempts": 2,
            "BisectBatchOnFunctionError": True,
        },
    )
    restored_exactly(case, steps, before)
