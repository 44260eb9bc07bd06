"""Function URLs in the sandbox (chaos/workload/function_urls.py, sources in its docstring): order-intake's
public URL answers as Lambda's does, its resource policy decides before the function runs, and every
request counts in the URL metrics its alarms watch; and get_event_sources reads the URL, judges with its
own code whether anonymous callers may use it, and counts how they fared."""

from __future__ import annotations

import json

import boto3
import pytest

from chaos.faults.invoke_paths import add_permission_params
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.function_urls import FunctionUrls
from chaos.workload.runtime import Invocation
from mcp_server.aws import AwsClients
from mcp_server.contract.event_sources import EventSourcesResponse, GetEventSourcesArgs, PolicyStatement
from mcp_server.settings import ServerSettings
from mcp_server.tools.event_sources import event_sources, url_allowed
from tests.conftest import Undo
from tests.test_async_invocation import _lambda_metric
from tests.tool_support import call_tool

INTAKE = names.ORDER_INTAKE_FUNCTION
ORDER = "url-0001"


@pytest.fixture
def order_deleted(operator: boto3.Session, undo: Undo) -> None:
    table = operator.client("dynamodb")
    undo(lambda: table.delete_item(TableName=names.ORDERS_TABLE, Key={"order_id": {"S": ORDER}}))


def _body() -> str:
    return str(names.order_submission(order_id=ORDER)["body"])


def without(operator: boto3.Session, undo: Undo, statement_id: str, function: str = INTAKE) -> None:
    """The statement removed from the function's policy, and written back exactly afterwards."""
    lambda_ = operator.client("lambda")
    policy = json.loads(lambda_.get_policy(FunctionName=function)["Policy"])
    [statement] = [s for s in policy["Statement"] if s["Sid"] == statement_id]
    lambda_.remove_permission(FunctionName=function, StatementId=statement_id)
    undo(lambda: lambda_.add_permission(FunctionName=function, **add_permission_params(statement)))


def test_the_url_statements_are_written_as_lambda_writes_them(operator: boto3.Session) -> None:
    """AddPermission's FunctionUrlAuthType and InvokedViaFunctionUrl become conditions (moto keeps them as
    keys of the statement: extensions/lambda_urls.py)."""
    policy = json.loads(operator.client("lambda").get_policy(FunctionName=INTAKE)["Policy"])
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    url, invoke = by_sid[names.ORDER_INTAKE_URL_STATEMENT], by_sid[names.ORDER_INTAKE_URL_INVOKE_STATEMENT]
    assert (url["Principal"], url["Action"]) == ("*", "lambda:InvokeFunctionUrl")
    assert url["Condition"] == {"StringEquals": {"lambda:FunctionUrlAuthType": "NONE"}}
    assert (invoke["Principal"], invoke["Action"]) == ("*", "lambda:InvokeFunction")
    assert invoke["Condition"] == {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}
    assert "FunctionUrlAuthType" not in url
    assert "InvokedViaFunctionUrl" not in invoke


def test_a_request_the_policy_allows_runs_the_function_and_its_response_is_the_answer(
    sandbox: Sandbox, urls: tuple[FunctionUrls, list[Invocation]], order_deleted: None
) -> None:
    front_door, seen = urls
    response = front_door.request(sandbox.world.order_intake_url + "orders", "POST", _body())
    assert (response.status, json.loads(response.body)) == (201, {"order_id": ORDER})
    [invocation] = seen
    assert invocation.status == "succeeded"
    assert _lambda_metric(sandbox, INTAKE, "UrlRequestCount") == 1
    assert _lambda_metric(sandbox, INTAKE, "Url4xxCount") == 0
    assert _lambda_metric(sandbox, INTAKE, "Invocations") == 1


@pytest.mark.parametrize(
    "removed", [names.ORDER_INTAKE_URL_STATEMENT, names.ORDER_INTAKE_URL_INVOKE_STATEMENT]
)
def test_without_either_statement_the_url_answers_403_and_the_function_never_runs(
    sandbox: Sandbox,
    operator: boto3.Session,
    undo: Undo,
    urls: tuple[FunctionUrls, list[Invocation]],
    removed: str,
) -> None:
    front_door, seen = urls
    without(operator, undo, removed)
    response = front_door.request(sandbox.world.order_intake_url, "POST", _body())
    assert (response.status, json.loads(response.body)) == (403, {"Message": "Forbidden"})
    assert seen == []
    assert _lambda_metric(sandbox, INTAKE, "Url4xxCount") == 1
    assert _lambda_metric(sandbox, INTAKE, "Invocations") == 0  # no invocation, so Errors sees nothing


def test_a_function_error_is_502_and_an_unknown_url_404(
    sandbox: Sandbox, urls: tuple[FunctionUrls, list[Invocation]]
) -> None:
    front_door, seen = urls
    cut = front_door.request(sandbox.world.order_intake_url, "POST", _body()[:12])  # JSON.parse throws
    assert (cut.status, json.loads(cut.body)) == (502, {"Message": "Internal Server Error"})
    assert [i.status for i in seen] == ["failed"]
    assert _lambda_metric(sandbox, INTAKE, "Url5xxCount") == 1
    unknown = sandbox.world.order_intake_url.replace("://", "://nothing-here-")
    assert front_door.request(unknown).status == 404


def event_sources_of(sandbox: Sandbox, function: str = INTAKE) -> EventSourcesResponse:
    """get_event_sources' answer for ``function``, read as the MCP server's identity."""
    aws = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    answer: EventSourcesResponse = call_tool(aws, event_sources, GetEventSourcesArgs(lambda_name=function))
    return answer


def test_the_event_sources_tool_reads_the_url_who_may_call_it_and_how_its_callers_fared(
    sandbox: Sandbox,
    operator: boto3.Session,
    undo: Undo,
    urls: tuple[FunctionUrls, list[Invocation]],
    order_deleted: None,
) -> None:
    front_door, _ = urls
    url = sandbox.world.order_intake_url
    assert front_door.request(url, "POST", _body()).status == 201
    answer = event_sources_of(sandbox)
    assert answer.function_url is not None
    assert (answer.function_url.FunctionUrl, answer.function_url.AuthType) == (url, "NONE")
    assert answer.function_url.invoke_allowed is True
    assert (answer.function_url.requests, answer.function_url.client_errors) == (1, 0)
    by_sid = {s.Sid: s for s in answer.policy_statements}
    assert by_sid[names.ORDER_INTAKE_URL_STATEMENT].FunctionUrlAuthType == "NONE"
    assert by_sid[names.ORDER_INTAKE_URL_INVOKE_STATEMENT].InvokedViaFunctionUrl == "true"
    assert answer.gaps == []

    without(operator, undo, names.ORDER_INTAKE_URL_INVOKE_STATEMENT)
    assert front_door.request(url, "POST", _body()).status == 403
    refused = event_sources_of(sandbox).function_url
    assert refused is not None
    assert refused.invoke_allowed is False
    assert (refused.requests, refused.client_errors) == (2, 1)


def test_a_function_without_a_url_has_none_to_show(sandbox: Sandbox) -> None:
    aws = AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))
    answer = call_tool(aws, event_sources, GetEventSourcesArgs(lambda_name=names.FUNCTION_NAME))
    assert answer.function_url is None
    assert "function_url" not in answer.model_dump(exclude_none=True)


def _statement(sid: str, action: str, effect: str = "Allow", **condition: str) -> PolicyStatement:
    return PolicyStatement(Sid=sid, Effect=effect, Principal="*", Action=action, **condition)


PUBLIC = [
    _statement("url", "lambda:InvokeFunctionUrl", FunctionUrlAuthType="NONE"),
    _statement("invoke", "lambda:InvokeFunction", InvokedViaFunctionUrl="true"),
]


@pytest.mark.parametrize(
    ("statements", "allowed"),
    [
        (PUBLIC, True),
        (PUBLIC[:1], False),  # a URL made since October 2025 needs lambda:InvokeFunction too
        (PUBLIC[1:], False),
        ([*PUBLIC, _statement("deny", "lambda:InvokeFunctionUrl", "Deny")], False),
        ([PUBLIC[0], _statement("invoke", "lambda:InvokeFunction", InvokedViaFunctionUrl="false")], False),
        ([PUBLIC[0], _statement("any", "lambda:*")], True),  # no condition: it applies to URL callers too
        ([PUBLIC[0], PUBLIC[1].model_copy(update={"Principal": "123456789012"})], False),  # not everyone
        ([PUBLIC[0], PUBLIC[1].model_copy(update={"SourceArn": "arn:aws:sns:*"})], False),
    ],
)
def test_the_tool_s_own_reading_of_who_may_call_a_public_url(
    statements: list[PolicyStatement], allowed: bool
) -> None:
    assert url_allowed(statements) is allowed
