"""An HTTP API (API Gateway v2) put in front of a function as an operator would with boto3, and removed after
the test: ``POST /orders`` and ``GET /orders/{order_id}`` through one Lambda proxy integration, a stage whose
JSON access log goes to a log group of its own, and the statement that lets the API invoke the function for
every route, as the console writes it."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3

from tests.fault_scenarios import Undo

Call = Callable[[str, Callable[[], Any]], Any]  # (CloudTrail's event name, the call) → its result

STAGE = "prod"
ACCESS_LOG_FORMAT = (
    '{"requestId":"$context.requestId","routeKey":"$context.routeKey","status":"$context.status",'
    '"integrationStatus":"$context.integrationStatus",'
    '"integrationErrorMessage":"$context.integrationErrorMessage"}'
)


@dataclass(frozen=True)
class HttpApi:
    api_id: str
    name: str
    integration_id: str
    statement_id: str
    source_arn: str  # the statement's AWS:SourceArn: every route of the API
    log_group: str


def _made(name: str, action: Callable[[], Any]) -> Any:
    return action()


def http_api(
    operator: boto3.Session,
    undo: Undo,
    target_arn: str,
    *,
    payload: str = "1.0",
    log_format: str | None = ACCESS_LOG_FORMAT,
    call: Call = _made,
) -> HttpApi:
    """The API in front of ``target_arn`` (a function's ARN, qualified or not), made now and deleted by
    ``undo``; ``log_format`` None: no access logging; ``call`` makes each change (a stage records them)."""
    v2, lambda_, logs = operator.client("apigatewayv2"), operator.client("lambda"), operator.client("logs")
    name = f"orders-http-{uuid.uuid4().hex[:8]}"
    api_id = call("CreateApi", lambda: v2.create_api(Name=name, ProtocolType="HTTP"))["ApiId"]
    undo(lambda: v2.delete_api(ApiId=api_id))
    integration = call(
        "CreateIntegration",
        lambda: v2.create_integration(
            ApiId=api_id, IntegrationType="AWS_PROXY", IntegrationUri=target_arn, PayloadFormatVersion=payload
        ),
    )["IntegrationId"]

    def route(key: str) -> Callable[[], Any]:
        return lambda: v2.create_route(ApiId=api_id, RouteKey=key, Target=f"integrations/{integration}")

    for key in ("POST /orders", "GET /orders/{order_id}"):
        call("CreateRoute", route(key))
    group = f"/aws/apigateway/{name}"
    call("CreateLogGroup", lambda: logs.create_log_group(logGroupName=group))
    undo(lambda: logs.delete_log_group(logGroupName=group))
    region, account = target_arn.split(":")[3:5]
    destination = f"arn:aws:logs:{region}:{account}:log-group:{group}"
    access: dict[str, Any] = (
        {"AccessLogSettings": {"DestinationArn": destination, "Format": log_format}} if log_format else {}
    )
    call("CreateStage", lambda: v2.create_stage(ApiId=api_id, StageName=STAGE, AutoDeploy=True, **access))
    function, _, qualifier = target_arn.partition(":function:")[2].partition(":")
    qualified = {"FunctionName": function} | ({"Qualifier": qualifier} if qualifier else {})
    statement, source = f"{name}-invoke", f"arn:aws:execute-api:{region}:{account}:{api_id}/*"
    call(
        "AddPermission20150331v2",
        lambda: lambda_.add_permission(
            **qualified,
            StatementId=statement,
            Action="lambda:InvokeFunction",
            Principal="apigateway.amazonaws.com",
            SourceArn=source,
        ),
    )

    def remove_statement() -> None:
        with contextlib.suppress(lambda_.exceptions.ResourceNotFoundException):
            lambda_.remove_permission(**qualified, StatementId=statement)

    undo(remove_statement)
    return HttpApi(api_id, name, integration, statement, source, group)
