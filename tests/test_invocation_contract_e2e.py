"""An answer the REST API in front of a function cannot use (issue 45), end to end: orders-api's live alias
moved by the operator's own boto3 calls to a build whose body is an object (orders POSTed to orders-rest-api
answered 502), or to one that takes longer than the integration waits (answered 504), while the function
succeeds; then diagnosed by the `rules` model over MCP: invocation_contract, the alias move its trigger, and
the alias pointed back, applied as a person approving it would, lets the next order through. The same when
the operator lowers the integration's timeout below the function's work: the UpdateIntegration is the
trigger and the timeout the API's history shows before it is put back; and the same for an HTTP API the
operator puts in front of the alias, whose only sign is its access log's 503 beside a route that waits less
than the function runs. A function that answers correctly behind the API is not blamed."""

from __future__ import annotations

import functools
import io
import json
import urllib.request
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from chaos.drill.event_traffic import DRILL_ORDER
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.api_gateway import DEFAULT_TIMEOUT_MS, RestApis
from chaos.workload.http_apis import HttpApis
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from tests.fault_scenarios import RestoreSteps, Undo
from tests.http_api_stage import STAGE as HTTP_STAGE
from tests.http_api_stage import http_api
from tests.timeline_cases import diagnosed, own_world, restored_exactly
from tests.timeline_scenarios import Situation, Stage, Staged, deploy, world

sandbox, mcp_server_url, before = own_world("invocation-contract")

ORDERS, ALIAS = names.ORDERS_FUNCTION, names.ORDERS_ALIAS
# A build that forgot json.dumps: its body is an object, which a Lambda proxy integration cannot use.
OBJECT_BODY = "def handler(event, context):\n    return {'statusCode': 201, 'body': {'order_id': 'o-1'}}\n"
# A release that waits 4 s for a downstream: within orders-api's own 5 s, past the 3 s the API waits.
SLOW_RELEASE = "    time.sleep(4)  # release 2: waits for a downstream\n"
INTEGRATION_MS = 3_000
# A release that waits 1 s, answered behind the default 29 s until the integration is cut to 300 ms.
STEADY_RELEASE = "    time.sleep(1)  # release 2: waits for a downstream\n"
LOWERED_MS = 300


def _package(source: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("orders_api.py", source)
    return buffer.getvalue()


def _poster(sandbox: Sandbox, runtime: LocalLambdaRuntime) -> Callable[[], int]:
    apis = RestApis(runtime, sandbox.session(names.APIGATEWAY_SERVICE))
    body, api_id = json.dumps({"order_id": DRILL_ORDER}), sandbox.world.orders_rest_api_id
    return lambda: apis.request(api_id, names.ORDERS_API_STAGE, "POST", "/orders", body).status


def object_body_deployed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Two orders answered 201; a build whose body is an object uploaded, published and the live alias
    moved to it; two more, each answered 502 while the function succeeds."""
    stage = Stage(sandbox, runtime, ORDERS, ALIAS)
    lambda_, table = stage.operator.client("lambda"), stage.operator.client("dynamodb")
    post = _poster(sandbox, runtime)
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}}))
    location = lambda_.get_function(FunctionName=ORDERS)["Code"]["Location"]
    with urllib.request.urlopen(location, timeout=10) as fetched:  # noqa: S310 - the sandbox's own URL
        original = fetched.read()

    orders = functools.partial(_orders, stage, runtime, post)
    orders("answered", 2, 201)
    stage.call(
        "UpdateFunctionCode20150331v2",
        lambda: lambda_.update_function_code(FunctionName=ORDERS, ZipFile=_package(OBJECT_BODY)),
    )
    undo(lambda: lambda_.update_function_code(FunctionName=ORDERS, ZipFile=original))
    published = stage.call("PublishVersion20150331", lambda: lambda_.publish_version(FunctionName=ORDERS))
    version = published["Version"]
    undo(lambda: lambda_.delete_function(FunctionName=ORDERS, Qualifier=version))
    previous = lambda_.get_alias(FunctionName=ORDERS, Name=ALIAS)["FunctionVersion"]
    stage.call(
        "UpdateAlias20150331",
        lambda: lambda_.update_alias(FunctionName=ORDERS, Name=ALIAS, FunctionVersion=version),
    )
    undo(lambda: lambda_.update_alias(FunctionName=ORDERS, Name=ALIAS, FunctionVersion=previous))
    orders("refused by the API", 2, 502)

    return stage.finish(None, works=functools.partial(_answers, post, table), previous=previous)


def _orders(
    stage: Stage, runtime: LocalLambdaRuntime, post: Callable[[], int], phase: str, count: int, status: int
) -> None:
    """One phase of ``count`` orders POSTed to the API, each answered ``status`` while the function
    succeeds."""

    def run() -> list[Invocation]:
        seen: list[Invocation] = []
        runtime.observers.append(seen.append)
        try:
            answers = [post() for _ in range(count)]
        finally:
            runtime.observers.remove(seen.append)
        assert answers == [status] * count, (phase, answers)
        assert [i.status for i in seen] == ["succeeded"] * count, (phase, seen)
        return seen

    stage.traffic(phase, run)


def _integration_timeout(apigateway: Any, api_id: str, milliseconds: int) -> None:
    """POST /orders's integration put again with this timeoutInMillis, and the stage deployed."""
    resource = next(r for r in apigateway.get_resources(restApiId=api_id)["items"] if r["path"] == "/orders")
    where = {"restApiId": api_id, "resourceId": resource["id"], "httpMethod": "POST"}
    integration = apigateway.get_integration(**where)
    apigateway.put_integration(
        **where,
        type=integration["type"],
        uri=integration["uri"],
        integrationHttpMethod="POST",  # Lambda's Invoke, as the world's integration
        timeoutInMillis=milliseconds,
    )
    apigateway.create_deployment(restApiId=api_id, stageName=names.ORDERS_API_STAGE)


def slow_release_deployed(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """POST /orders's integration set to wait 3 s (before any traffic); two orders answered 201, then release
    2, which takes 4 s, published and the live alias moved to it; two more answered 504 while the function
    succeeds."""
    apigateway, api_id = (
        sandbox.session(names.OPERATOR).client("apigateway"),
        sandbox.world.orders_rest_api_id,
    )
    _integration_timeout(apigateway, api_id, INTEGRATION_MS)
    undo(lambda: _integration_timeout(apigateway, api_id, DEFAULT_TIMEOUT_MS))
    post = _poster(sandbox, runtime)
    stage, before, _ = deploy(sandbox, runtime, undo, SLOW_RELEASE)
    table = stage.operator.client("dynamodb")
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}}))
    _orders(stage, runtime, post, "timed out by the API", 2, 504)
    return stage.finish(None, works=functools.partial(_answers, post, table), previous=before)


def timeout_lowered(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Release 2, which takes 1 s, on the live alias; two orders answered 201; then POST /orders's
    integration timeout cut to 300 ms with UpdateIntegration and the stage deployed; two more answered 504
    while the function succeeds."""
    stage, _, _ = deploy(sandbox, runtime, undo, STEADY_RELEASE)
    apigateway, api_id = stage.operator.client("apigateway"), sandbox.world.orders_rest_api_id
    table = stage.operator.client("dynamodb")
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}}))
    post = _poster(sandbox, runtime)
    _orders(stage, runtime, post, "answered", 2, 201)
    resource = next(r for r in apigateway.get_resources(restApiId=api_id)["items"] if r["path"] == "/orders")
    where = {"restApiId": api_id, "resourceId": resource["id"], "httpMethod": "POST"}

    def timeout(ms: int) -> Any:
        patch = [{"op": "replace", "path": "/timeoutInMillis", "value": str(ms)}]
        return apigateway.update_integration(**where, patchOperations=patch)

    stage.call("UpdateIntegration", lambda: timeout(LOWERED_MS))
    undo(lambda: timeout(DEFAULT_TIMEOUT_MS))
    stage.call(
        "CreateDeployment",
        lambda: apigateway.create_deployment(restApiId=api_id, stageName=names.ORDERS_API_STAGE),
    )
    _orders(stage, runtime, post, "timed out by the API", 2, 504)
    return stage.finish(None, works=functools.partial(_answers, post, table), where=where)


async def test_an_integration_timeout_cut_below_the_work_is_put_back(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(timeout_lowered, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["invocation_contract"], case.why
    case.assert_trigger(case.staged.change("UpdateIntegration"))
    restore = [{"op": "replace", "path": "/timeoutInMillis", "value": str(DEFAULT_TIMEOUT_MS)}]
    case.apply_first_command(
        "apigateway update-integration",
        "UpdateIntegration",
        case.staged.detail["where"] | {"patchOperations": restore},
    )
    restored_exactly(case, steps, before)


HTTP_SET_MS = 10_000  # what the operator tuned the HTTP API's integration to when it was put up


def http_timeout_lowered(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """Release 2, which takes 1 s, on the live alias; an HTTP API put in front of it by the operator, its
    integration tuned to wait 10 s; two orders answered 201; then its timeout cut to 300 ms with the
    apigatewayv2 UpdateIntegration; two more answered 503 while the function succeeds (an HTTP API writes no
    execution log: only its access log's status and the function's own durations show it)."""
    stage, _, _ = deploy(sandbox, runtime, undo, STEADY_RELEASE)
    lambda_, table = stage.operator.client("lambda"), stage.operator.client("dynamodb")
    live = str(lambda_.get_alias(FunctionName=ORDERS, Name=ALIAS)["AliasArn"])
    api = http_api(stage.operator, undo, live, call=stage.call)
    v2 = stage.operator.client("apigatewayv2")

    def timeout(ms: int) -> Any:
        return v2.update_integration(ApiId=api.api_id, IntegrationId=api.integration_id, TimeoutInMillis=ms)

    stage.call("UpdateIntegration", lambda: timeout(HTTP_SET_MS))
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}}))
    apis, body = (
        HttpApis(runtime, sandbox.session(names.APIGATEWAY_SERVICE)),
        json.dumps({"order_id": DRILL_ORDER}),
    )

    def post() -> int:
        return apis.request(api.api_id, HTTP_STAGE, "POST", "/orders", body).status

    _orders(stage, runtime, post, "answered", 2, 201)
    stage.call("UpdateIntegration", lambda: timeout(LOWERED_MS))
    _orders(stage, runtime, post, "timed out by the API", 2, 503)
    return stage.finish(None, works=functools.partial(_answers, post, table), api=api)


async def test_an_http_api_integration_timeout_cut_below_the_work_is_put_back(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(http_timeout_lowered, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["invocation_contract"], case.why
    case.assert_trigger(case.staged.changes[-1])
    assert case.staged.changes[-1].event_name == "UpdateIntegration"
    api = case.staged.detail["api"]
    case.apply_first_command(
        "apigatewayv2 update-integration",
        "UpdateIntegration",
        {"ApiId": api.api_id, "IntegrationId": api.integration_id, "TimeoutInMillis": HTTP_SET_MS},
    )
    steps.restore()  # the API gone again: the probe cannot be asked after the restore
    assert world(sandbox) == before


def _answers(post: Callable[[], int], table: Any) -> str | None:
    """Whether an order POSTed to the API is answered 201 (the order it stored deleted again)."""
    status = post()
    table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}})
    return None if status == 201 else f"the API answered {status}"


@pytest.mark.parametrize("situation", [object_body_deployed, slow_release_deployed])
async def test_an_answer_the_api_cannot_use_is_invocation_contract_and_the_alias_pointed_back(
    situation: Situation,
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(situation, sandbox, mcp_server_url, runtime, steps)
    assert case.diagnosis.fault_types == ["invocation_contract"], case.why
    case.assert_trigger(case.staged.changes[-1])  # the first answer the API refused comes after it
    previous = case.staged.detail["previous"]
    case.apply_first_command(
        "lambda update-alias",
        "UpdateAlias",
        {"FunctionName": ORDERS, "Name": ALIAS, "FunctionVersion": previous},
    )
    restored_exactly(case, steps, before)


def orders_answered(sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo) -> Staged:
    """The healthy look-alike: orders-api answers every order behind the API; an unrelated failure (a
    direct invocation with an order id that does not exist, answered 404 by the function itself) is the
    only thing to investigate."""
    stage = Stage(sandbox, runtime, ORDERS, ALIAS)
    table = stage.operator.client("dynamodb")
    post = _poster(sandbox, runtime)
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": DRILL_ORDER}}))
    stage.traffic("answered", lambda: [_posted(runtime, post) for _ in range(3)])
    stage.invoke("read", [names.order_request("missing-order")])
    return stage.finish(None, works=functools.partial(_answers, post, table))


def _posted(runtime: LocalLambdaRuntime, post: Callable[[], int]) -> Invocation:
    seen: list[Invocation] = []
    runtime.observers.append(seen.append)
    try:
        assert post() == 201
    finally:
        runtime.observers.remove(seen.append)
    return seen[0]


async def test_a_function_that_answers_the_api_correctly_is_not_blamed(
    sandbox: Sandbox,
    mcp_server_url: str,
    runtime: LocalLambdaRuntime,
    before: dict[str, Any],
    steps: RestoreSteps,
) -> None:
    case = await diagnosed(orders_answered, sandbox, mcp_server_url, runtime, steps)
    assert "invocation_contract" not in case.diagnosis.fault_types, case.why
    restored_exactly(case, steps, before)
