"""HTTP APIs in the sandbox (chaos/workload/http_apis.py, sources in its docstring) and as the event-sources
tool reads them: an HTTP API put in front of orders-api:live (tests/http_api_stage.py) answers through its
route and Lambda proxy integration; the alias's policy decides before the function runs (500, and the access
log's integrationErrorMessage says why); an integration timeout shorter than the work is a 503 while the
function finishes; payload 2.0 takes JSON without a statusCode as a 200's body, 1.0 wants the proxy shape,
and a body that is not text is a 500 on either; each request leaves one access log line and its
AWS/ApiGateway metrics under ApiId."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from chaos.faults.chaos import Chaos
from chaos.faults.deploy import DEPLOY_BAD_CODE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.api_gateway import ApiResponse
from chaos.workload.http_apis import NO_PERMISSION, HttpApis, proxy_answer, render
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.contract.changes import ChangeEventDetail, GetRecentChangesArgs, RecentChangesResponse
from mcp_server.contract.event_sources import EventSourcesResponse, GetEventSourcesArgs
from mcp_server.settings import ServerSettings
from mcp_server.tools.changes import recent_changes
from mcp_server.tools.event_sources import event_sources
from mcp_server.tools.http_api_callers import failure_pattern, invoked, line_status
from tests.conftest import Undo
from tests.http_api_stage import STAGE, HttpApi, http_api
from tests.test_async_invocation import _metric
from tests.tool_support import call_tool

ORDERS = names.ORDERS_FUNCTION
ORDER = "http-0001"


@pytest.fixture
def apis(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> Iterator[tuple[HttpApis, list[Invocation]]]:
    sandbox.reset_cloudwatch()
    seen: list[Invocation] = []
    runtime.observers.append(seen.append)
    yield HttpApis(runtime, sandbox.session(names.APIGATEWAY_SERVICE)), seen
    runtime.observers.remove(seen.append)


def _live(operator: boto3.Session) -> str:
    alias = operator.client("lambda").get_alias(FunctionName=ORDERS, Name=names.ORDERS_ALIAS)
    return str(alias["AliasArn"])


@pytest.fixture
def api(operator: boto3.Session, undo: Undo) -> HttpApi:
    table = operator.client("dynamodb")
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": ORDER}}))
    return http_api(operator, undo, _live(operator))


@pytest.fixture
def chaos(operator: boto3.Session, undo: Undo) -> Chaos:
    injector = Chaos(operator, say=lambda _: None)
    undo(lambda: injector.restore(DEPLOY_BAD_CODE, ORDERS))
    return injector


def _post(apis: HttpApis, api: HttpApi) -> ApiResponse:
    return apis.request(
        api.api_id, STAGE, "POST", "/orders", json.dumps({"order_id": ORDER, "customer": "c-0003"})
    )


def _access_log(operator: boto3.Session, api: HttpApi) -> list[dict[str, Any]]:
    events = operator.client("logs").filter_log_events(logGroupName=api.log_group)["events"]
    return [json.loads(e["message"]) for e in sorted(events, key=lambda e: e["timestamp"])]


def _sources(sandbox: Sandbox) -> EventSourcesResponse:
    aws = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    answer: EventSourcesResponse = call_tool(aws, event_sources, GetEventSourcesArgs(lambda_name=ORDERS))
    return answer


def _http_stage(answer: EventSourcesResponse, api: HttpApi) -> Any:
    [stage] = [s for s in answer.apis or [] if s.api_id == api.api_id]
    return stage


def test_a_request_is_answered_through_its_route_and_logged_once(
    sandbox: Sandbox, operator: boto3.Session, apis: tuple[HttpApis, list[Invocation]], api: HttpApi
) -> None:
    client, seen = apis
    created = _post(client, api)
    assert (created.status, json.loads(created.body)) == (201, {"order_id": ORDER})
    read = client.request(api.api_id, STAGE, "GET", f"/orders/{ORDER}")
    assert (read.status, json.loads(read.body)["customer"]) == (200, "c-0003")  # by its path parameter
    assert [(i.function_name, i.qualifier, i.status) for i in seen] == [
        (ORDERS, names.ORDERS_ALIAS, "succeeded")
    ] * 2
    lines = _access_log(operator, api)
    assert [(line["routeKey"], line["status"], line["integrationErrorMessage"]) for line in lines] == [
        ("POST /orders", "201", "-"),
        ("GET /orders/{order_id}", "200", "-"),
    ]
    assert lines[0]["requestId"] == created.headers["apigw-requestid"]
    dimension = ("ApiId", api.api_id)
    assert (
        _metric(sandbox, "AWS/ApiGateway", "Count", dimension),
        _metric(sandbox, "AWS/ApiGateway", "5xx", dimension),
    ) == (2.0, 0.0)


def test_no_route_and_no_stage_are_404_before_any_invocation(
    apis: tuple[HttpApis, list[Invocation]], api: HttpApi
) -> None:
    client, seen = apis
    assert client.request(api.api_id, STAGE, "DELETE", "/orders").status == 404
    assert client.request(api.api_id, "nope", "POST", "/orders").status == 404
    assert seen == []


def test_without_the_statement_the_api_answers_500_and_its_access_log_says_why(
    sandbox: Sandbox, operator: boto3.Session, apis: tuple[HttpApis, list[Invocation]], api: HttpApi
) -> None:
    operator.client("lambda").remove_permission(
        FunctionName=ORDERS, Qualifier=names.ORDERS_ALIAS, StatementId=api.statement_id
    )
    client, seen = apis
    refused = _post(client, api)
    assert (refused.status, json.loads(refused.body)) == (500, {"message": "Internal Server Error"})
    assert seen == []
    [line] = _access_log(operator, api)
    assert (line["status"], line["integrationErrorMessage"], line["integrationStatus"]) == (
        "500",
        NO_PERMISSION,
        "-",
    )
    stage = _http_stage(_sources(sandbox), api)
    assert (stage.protocol, stage.stage, stage.logging_level, stage.server_errors) == (
        "HTTP",
        STAGE,
        "ACCESS",
        1.0,
    )
    assert sorted((r.route, r.qualifier, r.timeout_ms, r.invoke_allowed) for r in stage.routes) == [
        ("GET /orders/{order_id}", names.ORDERS_ALIAS, 30_000, False),
        ("POST /orders", names.ORDERS_ALIAS, 30_000, False),
    ]
    assert json.loads(stage.execution_errors[-1].message)["integrationErrorMessage"] == NO_PERMISSION
    assert stage.execution_errors[-1].status == 500  # read from the line's "status" field
    assert stage.api_source_arn == api.source_arn


def test_an_integration_timeout_shorter_than_the_work_is_a_503_while_the_function_finishes(
    sandbox: Sandbox,
    operator: boto3.Session,
    apis: tuple[HttpApis, list[Invocation]],
    api: HttpApi,
    chaos: Chaos,
) -> None:
    v2 = operator.client("apigatewayv2")
    v2.update_integration(ApiId=api.api_id, IntegrationId=api.integration_id, TimeoutInMillis=50)
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="slow")
    client, seen = apis
    answered = _post(client, api)
    assert (answered.status, json.loads(answered.body)) == (503, {"message": "Service Unavailable"})
    [invocation] = seen
    assert invocation.duration_ms > 50
    assert _access_log(operator, api)[-1]["status"] == "503"
    stage = _http_stage(_sources(sandbox), api)
    assert [(line.status, json.loads(line.message)["status"]) for line in stage.execution_errors] == [
        (503, "503")
    ]
    assert {r.timeout_ms for r in stage.routes} == {50}


def test_a_change_to_the_http_api_in_front_is_found_and_one_to_an_api_in_front_of_another_function_is_not(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo, api: HttpApi
) -> None:
    """get_recent_changes searches API Gateway's events for the APIs that route to the function: its REST API
    and the HTTP API, each by the id its request names."""
    processor = operator.client("lambda").get_function(FunctionName=names.FUNCTION_NAME)["Configuration"]
    elsewhere = http_api(operator, undo, processor["FunctionArn"])
    v2 = operator.client("apigatewayv2")
    before = datetime.now(UTC)
    for changed in (api, elsewhere):
        v2.update_integration(
            ApiId=changed.api_id, IntegrationId=changed.integration_id, TimeoutInMillis=5000
        )
    aws = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    args = GetRecentChangesArgs(lambda_name=ORDERS, hours=1, detail=True)
    answer: RecentChangesResponse = call_tool(aws, recent_changes, args)
    label = f"REST API {sandbox.world.orders_rest_api_id} and HTTP API {api.api_id}"
    assert label in answer.searched
    found = [
        event
        for event in answer.events
        if isinstance(event, ChangeEventDetail)
        and event.event_name == "UpdateIntegration"
        and datetime.fromisoformat(event.time) >= before
    ]
    assert [(e.matched, e.summary["apiId"], e.summary["timeoutInMillis"]) for e in found] == [
        ([label], api.api_id, 5000)
    ]


@pytest.mark.parametrize("payload", ["1.0", "2.0"])
def test_an_answer_whose_body_is_not_text_is_a_500_on_either_payload_format(
    operator: boto3.Session, undo: Undo, apis: tuple[HttpApis, list[Invocation]], chaos: Chaos, payload: str
) -> None:
    """The build answers the order it reads with its statusCode, and the body as an object (orders-api
    reads a 2.0 event's path parameter as it reads a 1.0 event's)."""
    table = operator.client("dynamodb")
    table.put_item(TableName=names.ORDERS_TABLE, Item={"order_id": {"S": ORDER}, "customer": {"S": "c-0004"}})
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": ORDER}}))
    api = http_api(operator, undo, _live(operator), payload=payload)
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="malformed-response")
    client, seen = apis
    answered = client.request(api.api_id, STAGE, "GET", f"/orders/{ORDER}")
    [invocation] = seen
    assert invocation.status == "succeeded"
    assert invocation.result["body"] == {"order_id": ORDER, "customer": "c-0004"}
    assert (answered.status, json.loads(answered.body)) == (500, {"message": "Internal Server Error"})


@pytest.mark.parametrize(
    ("result", "version", "status", "body"),
    [
        ({"statusCode": 201, "body": "{}"}, "1.0", 201, "{}"),
        ({"statusCode": 201, "body": "{}"}, "2.0", 201, "{}"),
        ({"order_id": "o1"}, "1.0", 500, '{"message": "Internal Server Error"}'),
        ({"order_id": "o1"}, "2.0", 200, '{"order_id": "o1"}'),  # any JSON without a statusCode: the body
        ("done", "2.0", 200, '"done"'),
        ({"statusCode": 201, "body": {"order_id": "o1"}}, "2.0", 500, '{"message": "Internal Server Error"}'),
    ],
)
def test_how_each_payload_format_reads_an_answer(result: Any, version: str, status: int, body: str) -> None:
    assert (proxy_answer(result, version).status, proxy_answer(result, version).body) == (status, body)


def test_a_stage_without_access_logging_leaves_a_gap(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo
) -> None:
    api = http_api(operator, undo, _live(operator), log_format=None)
    answer = _sources(sandbox)
    stage = _http_stage(answer, api)
    assert (stage.logging_level, stage.execution_errors) == ("OFF", [])
    assert any(
        g.source == f"stage {STAGE} of HTTP API {api.name}" and "access logging is off" in g.meaning
        for g in answer.gaps
    )


def test_the_access_log_variables_are_replaced_and_unknown_ones_are_a_dash() -> None:
    line = render(
        '$context.requestId $context.status "$context.integration.error" $context.nope',
        {"requestId": "r1", "status": 503, "integration.error": None},
    )
    assert line == 'r1 503 "-" -'


@pytest.mark.parametrize(
    ("log_format", "pattern"),
    [
        ('{"requestId":"$context.requestId","status":"$context.status"}', '{ $.status = "5*" }'),
        ('{"requestId":"$context.requestId","code":$context.status}', "{ $.code >= 500 }"),
        ("$context.requestId $context.status", None),
        ('{"requestId":"$context.requestId"}', None),
    ],
)
def test_which_access_logs_show_the_failed_requests(log_format: str, pattern: str | None) -> None:
    assert failure_pattern(log_format) == pattern


@pytest.mark.parametrize(
    ("message", "status"),
    [
        ('{"requestId":"r1","code":"503"}', 503),
        ('{"requestId":"r1","code":504}', 504),
        ('{"requestId":"r1","code":"-"}', None),  # a request API Gateway answered no status to
        ('{"requestId":"r1"}', None),
        ("r1 503", None),  # not JSON
        ('["r1", 503]', None),
    ],
)
def test_the_status_of_an_access_log_line(message: str, status: int | None) -> None:
    assert line_status(message, "code") == status


def test_which_integration_uris_invoke_the_function() -> None:
    function = "arn:aws:lambda:us-east-1:123456789012:function:orders-api"
    assert invoked(function, function) == (True, None)
    assert invoked(f"{function}:live", function) == (True, "live")
    path = f"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/{function}:live/invocations"
    assert invoked(path, function) == (True, "live")
    assert invoked(f"{function}-v2", function) == (False, None)
    assert invoked("https://example.com/orders", function) == (False, None)
