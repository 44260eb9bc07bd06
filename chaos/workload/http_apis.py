"""HTTP APIs (API Gateway v2): a stage answering a request through a Lambda proxy integration, as AWS does.

``HttpApis.request(api_id, stage, method, path, body)`` plays the caller and API Gateway
(https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html):

- The stage must exist, and a route must match: ``METHOD /path`` first (``{name}`` segments are path
  parameters), then ``ANY /path``, then ``$default``; else ``404`` ``Not Found``.
- The route's target (``integrations/<id>``) must be an ``AWS_PROXY`` integration whose ``IntegrationUri``
  names a Lambda function (its ARN, or the ``arn:aws:apigateway:...:lambda:path/...`` form); else ``500``.
- The invoked function's (or alias's) resource-based policy must let ``apigateway.amazonaws.com`` invoke it
  for ``arn:aws:execute-api:<region>:<account>:<api>/<stage>/<METHOD>/<path>`` (``.../<stage>/$default``
  for the default route), as REST APIs check it; else ``500`` ``Internal Server Error``, no invocation,
  and the access log's ``$context.integrationErrorMessage`` "The IAM role configured on the integration or
  API Gateway doesn't have permissions to call the integration. Check the permissions and try again."
  (https://repost.aws/knowledge-center/api-gateway-http-lambda-integrations).
- An invocation that ran past the integration's ``TimeoutInMillis`` (30,000 unless set) is ``503``
  ``Service Unavailable`` while the function still finishes (serverless/serverless#11222,
  anomalyco/sst#2232); a function error or a throttle is ``500``.
- The answer: with payload format ``1.0`` it must be the proxy response REST APIs require, else ``500``;
  with ``2.0`` an object with a ``statusCode`` is the response (checked the same way: a body that is not
  text is a ``500`` too), and any other JSON is the body of a ``200`` of type ``application/json``
  (https://repost.aws/knowledge-center/api-gateway-status-codes-http-api).
- When the stage has ``AccessLogSettings``, each request writes one line to the log group its
  ``DestinationArn`` names (which must exist): the ``Format`` with each ``$context`` variable replaced by its
  value, ``-`` when it has none (http-api-logging.html, http-api-logging-variables.html). HTTP APIs write
  no execution log.
- Every request counts in ``AWS/ApiGateway`` ``Count``, ``4xx``, ``5xx``, ``Latency`` and, once the
  integration is called, ``IntegrationLatency``, under ``ApiId`` and ``ApiId``/``Stage``
  (http-api-metrics.html).

Not emulated: authorizers, throttling, CORS, parameter mapping, greedy path variables, custom domains,
detailed route metrics, and deployments (a stage serves the API as it is now, as an auto-deployed one does).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3

from chaos.workload.api_gateway import (
    ApiResponse,
    LogWriter,
    invoke_allowed,
    proxy_response_problem,
    resource_policy,
    split_qualified,
    uri_function_arn,
)
from chaos.workload.metrics import Datapoint, put_datapoints
from chaos.workload.runtime import Invocation, LocalLambdaRuntime

NAMESPACE = "AWS/ApiGateway"
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_ROUTE = "$default"
NO_PERMISSION = (
    "The IAM role configured on the integration or API Gateway doesn't have permissions to call the "
    "integration. Check the permissions and try again."
)
_NOT_FOUND = json.dumps({"message": "Not Found"})
_INTERNAL_ERROR = json.dumps({"message": "Internal Server Error"})
_UNAVAILABLE = json.dumps({"message": "Service Unavailable"})
_VARIABLE = re.compile(r"\$context\.[A-Za-z][A-Za-z.]*[A-Za-z]")


@dataclass
class _Request:
    """One request's facts, as its access log line reads them."""

    api_id: str
    stage: str
    method: str
    path: str
    body: str | None
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    route_key: str | None = None
    integration_ms: float | None = None
    integration_status: int | None = None
    integration_error: str | None = None

    def variables(self, status: int) -> dict[str, object | None]:
        latency = round(self.integration_ms) if self.integration_ms is not None else None
        return {
            "requestId": self.request_id,
            "extendedRequestId": self.request_id,
            "apiId": self.api_id,
            "stage": self.stage,
            "httpMethod": self.method,
            "path": self.path,
            "protocol": "HTTP/1.1",
            "routeKey": self.route_key,
            "status": status,
            "requestTime": self.at.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": int(self.at.timestamp() * 1000),
            "responseLatency": round((time.monotonic() - self.started) * 1000),
            "identity.sourceIp": "127.0.0.1",
            "integrationErrorMessage": self.integration_error,
            "integration.error": self.integration_error,
            "integrationStatus": self.integration_status,
            "integration.integrationStatus": self.integration_status,
            "integration.status": self.integration_status,
            "integrationLatency": latency,
            "integration.latency": latency,
        }


def _matches(template: str, path: str) -> dict[str, str] | None:
    """The path parameters when ``path`` fits the route's path ``template``; None when it does not."""
    wanted, parts = [p for p in template.split("/") if p], [p for p in path.split("/") if p]
    if len(wanted) != len(parts) or not all(
        w.startswith("{") or w == p for w, p in zip(wanted, parts, strict=True)
    ):
        return None
    return {w[1:-1]: p for w, p in zip(wanted, parts, strict=True) if w.startswith("{")}


def _route(routes: list[dict[str, Any]], method: str, path: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The route that serves ``method path`` and its path parameters; KeyError if none does."""
    for wanted in (method, "ANY"):
        for route in routes:
            route_method, _, template = str(route["RouteKey"]).partition(" ")
            params = _matches(template, path) if route_method == wanted else None
            if params is not None:
                return route, params
    for route in routes:
        if route["RouteKey"] == DEFAULT_ROUTE:
            return route, {}
    raise KeyError(f"{method} {path}")


def _integration_function(integration: dict[str, Any]) -> str | None:
    uri = str(integration.get("IntegrationUri", ""))
    if integration.get("IntegrationType") != "AWS_PROXY":
        return None
    if uri.startswith("arn:") and ":lambda:" in uri and ":function:" in uri:
        return uri
    return uri_function_arn(uri)


def render(log_format: str, values: dict[str, object | None]) -> str:
    """The access log line ``log_format`` makes of a request's ``$context`` values."""

    def value(match: re.Match[str]) -> str:
        found = values.get(match.group(0).removeprefix("$context."))
        return "-" if found is None else str(found)

    return _VARIABLE.sub(value, log_format)


def proxy_answer(result: Any, version: str) -> ApiResponse:
    """What the caller gets from a function's successful ``result`` under payload format ``version``."""
    if version == "2.0" and not (isinstance(result, dict) and "statusCode" in result):
        return ApiResponse(200, json.dumps(result), {"content-type": "application/json"})
    if proxy_response_problem(result) is not None:
        return ApiResponse(500, _INTERNAL_ERROR)
    headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
    return ApiResponse(int(result["statusCode"]), str(result.get("body") or ""), headers)


def _log_group(destination_arn: str) -> str:
    """``arn:aws:logs:<region>:<account>:log-group:<name>`` (with or without ``:*``) → ``<name>``."""
    return destination_arn.split(":log-group:", 1)[-1].removesuffix(":*")


class HttpApis:
    """Requests to HTTP API stages, served by API Gateway (``platform``: its reads, logs and metrics)
    through ``runtime``."""

    def __init__(self, runtime: LocalLambdaRuntime, platform: boto3.Session) -> None:
        self.runtime = runtime
        self._apis = platform.client("apigatewayv2")
        self._lambda = platform.client("lambda")
        self._cloudwatch = platform.client("cloudwatch")
        self._log = LogWriter(platform.client("logs"))
        self._region = platform.region_name or "us-east-1"

    def request(
        self, api_id: str, stage: str, method: str, path: str, body: str | None = None
    ) -> ApiResponse:
        request = _Request(api_id, stage, method.upper(), path, body)
        try:
            settings = self._apis.get_stage(ApiId=api_id, StageName=stage)
        except self._apis.exceptions.NotFoundException:
            return ApiResponse(404, _NOT_FOUND)
        response = self._serve(request)
        access = settings.get("AccessLogSettings") or {}
        if access.get("DestinationArn") and access.get("Format"):
            line = render(str(access["Format"]), request.variables(response.status))
            self._log.write(_log_group(str(access["DestinationArn"])), [line], create_group=False)
        self._publish(request, response.status)
        return ApiResponse(
            response.status, response.body, {**response.headers, "apigw-requestid": request.request_id}
        )

    def _serve(self, request: _Request) -> ApiResponse:
        routes = [r for page in self._apis.get_paginator("get_routes").paginate(ApiId=request.api_id)
                  for r in page["Items"]]  # fmt: skip
        try:
            route, params = _route(routes, request.method, request.path)
        except KeyError:
            return ApiResponse(404, _NOT_FOUND)
        request.route_key = str(route["RouteKey"])
        integration_id = str(route.get("Target", "")).removeprefix("integrations/")
        try:
            integration = self._apis.get_integration(ApiId=request.api_id, IntegrationId=integration_id)
        except self._apis.exceptions.NotFoundException:
            return ApiResponse(500, _INTERNAL_ERROR)
        function_arn = _integration_function(integration)
        if function_arn is None:
            return ApiResponse(500, _INTERNAL_ERROR)
        account = function_arn.split(":")[4]
        tail = DEFAULT_ROUTE if request.route_key == DEFAULT_ROUTE else f"{request.method}{request.path}"
        source_arn = f"arn:aws:execute-api:{self._region}:{account}:{request.api_id}/{request.stage}/{tail}"
        if not invoke_allowed(resource_policy(self._lambda, function_arn), source_arn):
            request.integration_error = NO_PERMISSION
            return ApiResponse(500, _INTERNAL_ERROR)
        version = str(integration.get("PayloadFormatVersion") or "1.0")
        event = self._event(request, version, params, account)
        unqualified, qualifier = split_qualified(function_arn)
        invocation = self.runtime.invoke(unqualified, event, qualifier, request.request_id)
        request.integration_ms = invocation.duration_ms
        return self._answer(
            request, invocation, version, int(integration.get("TimeoutInMillis") or DEFAULT_TIMEOUT_MS)
        )

    def _answer(
        self, request: _Request, invocation: Invocation, version: str, timeout_ms: int
    ) -> ApiResponse:
        if invocation.duration_ms > timeout_ms:
            return ApiResponse(503, _UNAVAILABLE)
        if invocation.status == "throttled":
            request.integration_status = 429
            return ApiResponse(500, _INTERNAL_ERROR)
        request.integration_status = 200
        if invocation.status != "succeeded":
            return ApiResponse(500, _INTERNAL_ERROR)
        return proxy_answer(invocation.result, version)

    def _event(self, request: _Request, version: str, params: dict[str, str], account: str) -> dict[str, Any]:
        headers = {"content-type": "application/json", "host": f"{request.api_id}.execute-api.amazonaws.com"}
        context = {
            "accountId": account,
            "apiId": request.api_id,
            "requestId": request.request_id,
            "routeKey": request.route_key,
            "stage": request.stage,
        }
        if version == "2.0":
            return {
                "version": "2.0",
                "routeKey": request.route_key,
                "rawPath": request.path,
                "rawQueryString": "",
                "headers": headers,
                "requestContext": {
                    **context,
                    "http": {
                        "method": request.method,
                        "path": request.path,
                        "protocol": "HTTP/1.1",
                        "sourceIp": "127.0.0.1",
                        "userAgent": "incident-response-sandbox",
                    },
                    "time": request.at.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                    "timeEpoch": int(request.at.timestamp() * 1000),
                },
                **({"pathParameters": params} if params else {}),
                "body": request.body,
                "isBase64Encoded": False,
            }
        return {
            "version": "1.0",
            "resource": str(request.route_key).partition(" ")[2] or request.path,
            "path": request.path,
            "httpMethod": request.method,
            "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()},
            "queryStringParameters": None,
            "multiValueQueryStringParameters": None,
            "pathParameters": params or None,
            "stageVariables": None,
            "requestContext": {
                **context,
                "httpMethod": request.method,
                "path": request.path,
                "protocol": "HTTP/1.1",
                "identity": {"sourceIp": "127.0.0.1"},
                "requestTimeEpoch": int(request.at.timestamp() * 1000),
            },
            "body": request.body,
            "isBase64Encoded": False,
        }

    def _publish(self, request: _Request, status: int) -> None:
        values: list[Datapoint] = [
            ("Count", 1.0, "Count"),
            ("4xx", 1.0 if 400 <= status < 500 else 0.0, "Count"),
            ("5xx", 1.0 if status >= 500 else 0.0, "Count"),
            ("Latency", (time.monotonic() - request.started) * 1000, "Milliseconds"),
        ]
        if request.integration_ms is not None:
            values.append(("IntegrationLatency", request.integration_ms, "Milliseconds"))
        api = {"Name": "ApiId", "Value": request.api_id}
        dimension_sets = [[api], [api, {"Name": "Stage", "Value": request.stage}]]
        put_datapoints(self._cloudwatch, NAMESPACE, values, dimension_sets, datetime.now(UTC))
