"""REST APIs in the sandbox (chaos/workload/api_gateway.py, sources in its docstring): orders-rest-api's
stage answers through its Lambda proxy integration on orders-api:live as API Gateway does: the route and
the function's resource policy decide before the function runs, an answer that is not a proxy response is a
502 although the function succeeded, a slow function a 504, and each request leaves its execution log
lines and its AWS/ApiGateway metrics."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from chaos.faults.chaos import Chaos
from chaos.faults.deploy import DEPLOY_BAD_CODE
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.api_gateway import (
    INVALID_PERMISSIONS,
    LOG_GROUP_PREFIX,
    MALFORMED,
    TIMED_OUT,
    ApiResponse,
    RestApis,
    invoke_allowed,
    proxy_response_problem,
)
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.contract.event_sources import EventSourcesResponse, GetEventSourcesArgs, PolicyStatement
from mcp_server.settings import ServerSettings
from mcp_server.tools.api_callers import route_allowed
from mcp_server.tools.event_sources import event_sources
from supervisor.incident.signals import parse_record
from tests.conftest import Undo
from tests.test_async_invocation import _lambda_metric, _metric
from tests.tool_support import call_tool

ORDERS, STAGE = names.ORDERS_FUNCTION, names.ORDERS_API_STAGE
ORDER = "api-0001"
SOURCE = "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/POST/orders"


@pytest.fixture
def apis(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> Iterator[tuple[RestApis, list[Invocation]]]:
    """API Gateway, and every invocation the runtime makes meanwhile; CloudWatch reset first."""
    sandbox.reset_cloudwatch()
    seen: list[Invocation] = []
    runtime.observers.append(seen.append)
    yield RestApis(runtime, sandbox.session(names.APIGATEWAY_SERVICE)), seen
    runtime.observers.remove(seen.append)


@pytest.fixture
def order_deleted(operator: boto3.Session, undo: Undo) -> None:
    table = operator.client("dynamodb")
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": ORDER}}))


@pytest.fixture
def chaos(operator: boto3.Session, undo: Undo) -> Chaos:
    injector = Chaos(operator, say=lambda _: None)
    undo(lambda: injector.restore(DEPLOY_BAD_CODE, ORDERS))
    return injector


def _post(sandbox: Sandbox, apis: RestApis) -> ApiResponse:
    body = json.dumps({"order_id": ORDER, "amount": 12, "customer": "c-0001"})
    return apis.request(sandbox.world.orders_rest_api_id, STAGE, "POST", "/orders", body)


def _log(operator: boto3.Session, sandbox: Sandbox, response: ApiResponse) -> list[str]:
    """The execution log lines of one request, without their ``(<request id>) `` prefix."""
    request_id = response.headers["x-amzn-RequestId"]
    events = operator.client("logs").filter_log_events(
        logGroupName=f"{LOG_GROUP_PREFIX}{sandbox.world.orders_rest_api_id}/{STAGE}"
    )["events"]
    prefix = f"({request_id}) "
    return [e["message"].removeprefix(prefix) for e in events if e["message"].startswith(prefix)]


def _api_metric(sandbox: Sandbox, metric: str) -> float:
    return _metric(sandbox, "AWS/ApiGateway", metric, ("ApiName", names.ORDERS_REST_API))


def _set_stage(
    operator: boto3.Session, undo: Undo, sandbox: Sandbox, path: str, value: str, was: str
) -> None:
    apigateway, api_id = operator.client("apigateway"), sandbox.world.orders_rest_api_id

    def patch(to: str) -> None:
        apigateway.update_stage(
            restApiId=api_id, stageName=STAGE, patchOperations=[{"op": "replace", "path": path, "value": to}]
        )

    patch(value)
    undo(lambda: patch(was))


def _post_integration(operator: boto3.Session, sandbox: Sandbox) -> tuple[Any, str, str]:
    apigateway, api_id = operator.client("apigateway"), sandbox.world.orders_rest_api_id
    [orders] = [r for r in apigateway.get_resources(restApiId=api_id)["items"] if r["path"] == "/orders"]
    return apigateway, api_id, orders["id"]


def test_a_request_is_answered_by_the_function_behind_the_route(
    sandbox: Sandbox, operator: boto3.Session, apis: tuple[RestApis, list[Invocation]], order_deleted: None
) -> None:
    api, seen = apis
    created = _post(sandbox, api)
    assert (created.status, json.loads(created.body)) == (201, {"order_id": ORDER})
    read = api.request(sandbox.world.orders_rest_api_id, STAGE, "GET", f"/orders/{ORDER}")
    assert (read.status, json.loads(read.body)["customer"]) == (200, "c-0001")  # by its path parameter
    assert [(i.function_name, i.qualifier, i.status) for i in seen] == [
        (ORDERS, names.ORDERS_ALIAS, "succeeded")
    ] * 2
    assert seen[0].request_id == created.headers["x-amzn-RequestId"]
    lines = _log(operator, sandbox, created)
    assert lines[0] == f"Starting execution for request: {seen[0].request_id}"
    assert lines[-1] == "Method completed with status: 201"
    assert (_api_metric(sandbox, "Count"), _api_metric(sandbox, "5XXError")) == (2.0, 0.0)


def test_a_request_no_route_serves_is_refused_before_any_invocation(
    sandbox: Sandbox, apis: tuple[RestApis, list[Invocation]]
) -> None:
    api, seen = apis
    for method, path in (("DELETE", "/orders"), ("GET", "/customers"), ("GET", "/orders/a/b")):
        refused = api.request(sandbox.world.orders_rest_api_id, STAGE, method, path)
        assert (refused.status, json.loads(refused.body)) == (
            403,
            {"message": "Missing Authentication Token"},
        )
    assert seen == []
    assert (_api_metric(sandbox, "4XXError"), _api_metric(sandbox, "5XXError")) == (3.0, 0.0)


def test_an_answer_that_is_not_a_proxy_response_is_a_502_while_the_function_succeeds(
    sandbox: Sandbox,
    operator: boto3.Session,
    apis: tuple[RestApis, list[Invocation]],
    chaos: Chaos,
    order_deleted: None,
) -> None:
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="malformed-response")
    api, seen = apis
    answered = _post(sandbox, api)
    assert (answered.status, json.loads(answered.body)) == (502, {"message": "Internal server error"})
    [invocation] = seen
    assert invocation.status == "succeeded"  # the work was done: Lambda's own metrics see no error
    assert invocation.result["body"] == {"order_id": ORDER}
    lines = _log(operator, sandbox, answered)
    assert MALFORMED in lines
    assert lines[-1] == "Method completed with status: 502"
    assert _api_metric(sandbox, "5XXError") == 1.0
    assert _lambda_metric(sandbox, ORDERS, "Errors") == 0.0


def test_a_function_error_is_a_502_with_the_function_s_error(
    sandbox: Sandbox,
    operator: boto3.Session,
    apis: tuple[RestApis, list[Invocation]],
    chaos: Chaos,
) -> None:
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="exception")
    api, seen = apis
    answered = _post(sandbox, api)
    assert answered.status == 502
    [invocation] = seen
    lines = _log(operator, sandbox, answered)
    assert (
        f"Lambda execution failed with status 200 due to customer function error: {invocation.error}. "
        f"Lambda request id: {invocation.request_id}"
    ) in lines
    assert MALFORMED not in lines


def test_the_integration_timeout_answers_504_however_long_the_function_may_run(
    sandbox: Sandbox,
    operator: boto3.Session,
    apis: tuple[RestApis, list[Invocation]],
    chaos: Chaos,
    undo: Undo,
) -> None:
    """The slow build sleeps past the function's own timeout (seconds): far past a 50 ms integration
    timeout, whatever the machine's pace."""
    apigateway, api_id, resource = _post_integration(operator, sandbox)
    integration = apigateway.get_integration(restApiId=api_id, resourceId=resource, httpMethod="POST")
    assert integration["timeoutInMillis"] == 29_000

    def timeout(ms: int) -> None:
        apigateway.update_integration(
            restApiId=api_id,
            resourceId=resource,
            httpMethod="POST",
            patchOperations=[{"op": "replace", "path": "/timeoutInMillis", "value": str(ms)}],
        )

    timeout(50)
    undo(lambda: timeout(29_000))
    changed = apigateway.get_integration(restApiId=api_id, resourceId=resource, httpMethod="POST")
    assert {**integration, "timeoutInMillis": 50} == {
        **changed,
        "ResponseMetadata": integration["ResponseMetadata"],
    }
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="slow")
    api, seen = apis
    answered = _post(sandbox, api)
    assert (answered.status, json.loads(answered.body)) == (504, {"message": "Endpoint request timed out"})
    assert seen[0].duration_ms > 50
    assert TIMED_OUT in _log(operator, sandbox, answered)


def test_the_api_s_5xx_alarm_opens_an_incident_on_the_function_behind_it(
    sandbox: Sandbox,
    apis: tuple[RestApis, list[Invocation]],
    chaos: Chaos,
    alarm_events: Callable[..., list[dict[str, Any]]],
    order_deleted: None,
) -> None:
    """The function succeeds, so only the API's alarm (deploy/alarms.api_alarms) sees the failure; it names
    orders-api through the Invocations it reads beside the API's 5XXError."""
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="malformed-response")
    api, _ = apis
    assert _post(sandbox, api).status == 502
    sandbox.evaluate_alarms()
    events = alarm_events(wait_seconds=2)
    signals = [parse_record(e["Records"][0], now=datetime.now(UTC)) for e in events]
    assert [(s.function_name, s.error_type) for s in signals] == [(ORDERS, "ApiGateway5XXError")]
    assert signals[0].detail.startswith(f"{names.ORDERS_REST_API}-5xxerror: Threshold Crossed")


def _sources(sandbox: Sandbox, function: str = ORDERS) -> EventSourcesResponse:
    aws = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    answer: EventSourcesResponse = call_tool(aws, event_sources, GetEventSourcesArgs(lambda_name=function))
    return answer


def test_the_event_sources_tool_reads_the_api_in_front_and_what_its_execution_log_recorded(
    sandbox: Sandbox,
    apis: tuple[RestApis, list[Invocation]],
    chaos: Chaos,
    order_deleted: None,
) -> None:
    api, _ = apis
    _post(sandbox, api)
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="malformed-response")
    failed = _post(sandbox, api)
    [stage] = _sources(sandbox).apis or []
    assert (stage.api_id, stage.api_name, stage.stage, stage.logging_level) == (
        sandbox.world.orders_rest_api_id,
        names.ORDERS_REST_API,
        STAGE,
        "INFO",
    )
    assert sorted((r.route, r.qualifier, r.timeout_ms, r.invoke_allowed) for r in stage.routes) == [
        ("GET /orders/{order_id}", names.ORDERS_ALIAS, 29_000, True),
        ("POST /orders", names.ORDERS_ALIAS, 29_000, True),
    ]
    assert (stage.requests, stage.client_errors, stage.server_errors) == (2.0, 0.0, 1.0)
    # the newest failure last (the stage's log holds the other tests' failures too)
    assert stage.execution_errors[-1].message == f"({failed.headers['x-amzn-RequestId']}) {MALFORMED}"


def test_the_newest_failures_of_a_busy_execution_log_are_the_ones_read(
    sandbox: Sandbox,
    operator: boto3.Session,
    undo: Undo,
    apis: tuple[RestApis, list[Invocation]],
    chaos: Chaos,
    order_deleted: None,
) -> None:
    """Four hundred older failures in the window: read oldest first, the tool would stop among them."""
    logs, group = operator.client("logs"), f"{LOG_GROUP_PREFIX}{sandbox.world.orders_rest_api_id}/{STAGE}"
    stream = f"older-{uuid.uuid4().hex[:8]}"
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    undo(lambda: logs.delete_log_stream(logGroupName=group, logStreamName=stream))
    older = int(datetime.now(UTC).timestamp() * 1000) - 5 * 60_000
    events = [{"timestamp": older + n, "message": f"(older-{n}) {MALFORMED}"} for n in range(400)]
    logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=events)
    api, _ = apis
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="malformed-response")
    failed = _post(sandbox, api)
    [stage] = _sources(sandbox).apis or []
    assert stage.execution_errors[-1].message == f"({failed.headers['x-amzn-RequestId']}) {MALFORMED}"


def test_a_function_no_api_calls_has_no_apis_in_its_answer(sandbox: Sandbox) -> None:
    answer = _sources(sandbox, names.FUNCTION_NAME)
    assert answer.apis is None
    assert "apis" not in answer.model_dump(exclude_none=True)


def test_without_the_api_s_statement_the_function_is_never_invoked(
    sandbox: Sandbox, operator: boto3.Session, apis: tuple[RestApis, list[Invocation]], undo: Undo
) -> None:
    lambda_ = operator.client("lambda")
    qualified = {"FunctionName": ORDERS, "Qualifier": names.ORDERS_ALIAS}
    policy = json.loads(lambda_.get_policy(**qualified)["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == names.ORDERS_API_STATEMENT]
    lambda_.remove_permission(**qualified, StatementId=names.ORDERS_API_STATEMENT)
    undo(
        lambda: lambda_.add_permission(
            **qualified,
            StatementId=names.ORDERS_API_STATEMENT,
            Action="lambda:InvokeFunction",
            Principal="apigateway.amazonaws.com",
            SourceArn=statement["Condition"]["ArnLike"]["AWS:SourceArn"],
        )
    )
    api, seen = apis
    refused = _post(sandbox, api)
    assert (refused.status, json.loads(refused.body)) == (500, {"message": "Internal server error"})
    assert seen == []
    assert INVALID_PERMISSIONS in _log(operator, sandbox, refused)
    [stage] = _sources(sandbox).apis or []
    assert [r.invoke_allowed for r in stage.routes] == [False, False]  # the tool's own reading of the policy
    assert stage.execution_errors[-1].message.endswith(INVALID_PERMISSIONS)


def test_the_stage_s_logging_level_decides_which_lines_are_written(
    sandbox: Sandbox,
    operator: boto3.Session,
    apis: tuple[RestApis, list[Invocation]],
    chaos: Chaos,
    undo: Undo,
) -> None:
    chaos.inject(DEPLOY_BAD_CODE, ORDERS, kind="malformed-response")
    api, _ = apis
    _set_stage(operator, undo, sandbox, "/*/*/logging/loglevel", "ERROR", "INFO")
    failed = _post(sandbox, api)
    assert _log(operator, sandbox, failed) == [MALFORMED, "Method completed with status: 502"]
    _set_stage(operator, undo, sandbox, "/*/*/logging/loglevel", "OFF", "INFO")
    assert _log(operator, sandbox, _post(sandbox, api)) == []
    answer = _sources(sandbox)
    assert [s.logging_level for s in answer.apis or []] == ["OFF"]
    assert any(
        g.source == f"stage {STAGE} of REST API {names.ORDERS_REST_API}"
        and "execution logging is off" in g.meaning
        for g in answer.gaps
    )


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"statusCode": 201, "headers": {"a": "b"}, "body": "{}"}, None),
        ({"statusCode": 204}, None),
        ({"statusCode": 201, "body": {"order_id": "x"}}, "body is dict, not a string"),
        ({"statusCode": 201, "body": "{}", "status": "ok"}, "unexpected keys ['status']"),
        ({"statusCode": "201", "body": "{}"}, "statusCode '201' is not an HTTP status"),
        ({"statusCode": 201, "headers": {"a": {"b": 1}}}, "headers is not an object of strings"),
        ([201, "{}"], "the function returned list, not an object"),
        (None, "the function returned NoneType, not an object"),
    ],
)
def test_what_makes_a_proxy_response(result: Any, problem: str | None) -> None:
    assert proxy_response_problem(result) == problem


def _policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Statement": list(statements)}


def _statement(
    effect: str = "Allow", source: str = "arn:aws:execute-api:us-east-1:123456789012:abc123/*", **extra: Any
) -> dict[str, Any]:
    return {
        "Effect": effect,
        "Principal": {"Service": "apigateway.amazonaws.com"},
        "Action": "lambda:InvokeFunction",
        "Condition": {"ArnLike": {"AWS:SourceArn": source}},
        **extra,
    }


def test_which_statements_let_api_gateway_invoke() -> None:
    assert invoke_allowed(_policy(_statement()), SOURCE)
    assert invoke_allowed(
        _policy(_statement(source="arn:aws:execute-api:us-east-1:123456789012:abc123/*/POST/orders")), SOURCE
    )
    assert not invoke_allowed(
        _policy(_statement(source="arn:aws:execute-api:us-east-1:123456789012:other/*")), SOURCE
    )
    assert not invoke_allowed(
        _policy(_statement(source="arn:aws:execute-api:us-east-1:123456789012:abc123/*/GET/*")), SOURCE
    )
    assert not invoke_allowed(_policy(_statement(), _statement("Deny")), SOURCE)
    assert not invoke_allowed(_policy(_statement(Principal={"Service": "sns.amazonaws.com"})), SOURCE)
    assert not invoke_allowed(_policy(_statement(Action="lambda:GetFunction")), SOURCE)
    assert not invoke_allowed(None, SOURCE)


def _api_statement(
    effect: str = "Allow",
    source: str | None = "arn:aws:execute-api:us-east-1:123456789012:abc123/*",
    **extra: Any,
) -> PolicyStatement:
    fields: dict[str, Any] = {
        "Sid": "s",
        "Effect": effect,
        "Principal": "apigateway.amazonaws.com",
        "Action": "lambda:InvokeFunction",
        "SourceArn": source,
    }
    return PolicyStatement(**(fields | extra))


def test_which_statements_the_tool_reads_as_letting_api_gateway_invoke() -> None:
    """The tool's own reading (mcp_server/tools/api_callers.py), on the same cases as the sandbox's."""
    assert route_allowed([_api_statement()], SOURCE)
    assert route_allowed([_api_statement(source=None)], SOURCE)
    assert not route_allowed(
        [_api_statement(source="arn:aws:execute-api:us-east-1:123456789012:other/*")], SOURCE
    )
    assert not route_allowed(
        [_api_statement(source="arn:aws:execute-api:us-east-1:123456789012:abc123/*/GET/*")], SOURCE
    )
    assert not route_allowed([_api_statement(), _api_statement("Deny")], SOURCE)
    assert not route_allowed([_api_statement(Principal="sns.amazonaws.com")], SOURCE)
    assert not route_allowed([_api_statement(Action="lambda:GetFunction")], SOURCE)
    assert not route_allowed([_api_statement(SourceAccount="999999999999")], SOURCE)
    assert not route_allowed([], SOURCE)


def test_a_redeployment_to_the_stage_keeps_its_settings_and_serves_the_new_deployment(
    sandbox: Sandbox,
    operator: boto3.Session,
    apis: tuple[RestApis, list[Invocation]],
    undo: Undo,
    order_deleted: None,
) -> None:
    """chaos/sandbox/extensions/rest_apis.py: the stage's logging, set with UpdateStage, outlives a
    CreateDeployment to it (moto's own made the stage anew, logging off)."""
    apigateway, api_id = operator.client("apigateway"), sandbox.world.orders_rest_api_id
    before = apigateway.get_stage(restApiId=api_id, stageName=STAGE)
    undo(
        lambda: apigateway.update_stage(
            restApiId=api_id,
            stageName=STAGE,
            patchOperations=[{"op": "replace", "path": "/deploymentId", "value": before["deploymentId"]}],
        )
    )
    deployment = apigateway.create_deployment(restApiId=api_id, stageName=STAGE, description="again")
    after = apigateway.get_stage(restApiId=api_id, stageName=STAGE)
    assert after["deploymentId"] == deployment["id"] != before["deploymentId"]
    assert after["methodSettings"] == before["methodSettings"]
    assert after["methodSettings"]["*/*"]["loggingLevel"] == "INFO"
    api, _ = apis
    assert _log(operator, sandbox, _post(sandbox, api))  # still logged


@pytest.mark.parametrize(
    ("path", "value", "refused"),
    [
        ("/timeoutInMillis", "49", "Invalid timeoutInMillis '49'"),
        ("/timeoutInMillis", "29001", "Invalid timeoutInMillis '29001'"),
        ("/timeoutInMillis", "soon", "Invalid timeoutInMillis 'soon'"),
        ("/type", "MOCK", "op 'replace' on path '/type'"),
    ],
)
def test_an_integration_update_api_gateway_refuses_changes_nothing(
    sandbox: Sandbox, operator: boto3.Session, path: str, value: str, refused: str
) -> None:
    """chaos/sandbox/extensions/rest_apis.py: a timeout outside 50 to 29,000 ms or a path it does not
    replace is a BadRequestException, and no operation of the request is applied."""
    apigateway, api_id, resource = _post_integration(operator, sandbox)
    before = apigateway.get_integration(restApiId=api_id, resourceId=resource, httpMethod="POST")
    operations = [
        {"op": "replace", "path": "/uri", "value": "arn:aws:apigateway:us-east-1:lambda:path/elsewhere"},
        {"op": "replace", "path": path, "value": value},
    ]
    with pytest.raises(apigateway.exceptions.BadRequestException, match=refused):
        apigateway.update_integration(
            restApiId=api_id, resourceId=resource, httpMethod="POST", patchOperations=operations
        )
    after = apigateway.get_integration(restApiId=api_id, resourceId=resource, httpMethod="POST")
    assert (after["uri"], after["timeoutInMillis"]) == (before["uri"], before["timeoutInMillis"])
