"""REST APIs: API Gateway's stage answering a request through a Lambda proxy integration, as it answers it
(HTTP APIs: ``http_apis.py``).

``RestApis.request(api_id, stage, method, path, body)`` plays the caller and API Gateway
(https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html):

- The stage's deployed resources (``GetResources``) are matched by path (``{name}`` segments are path
  parameters) and method (or ``ANY``); no match is ``403`` ``Missing Authentication Token``.
- Only ``AWS_PROXY`` integrations whose URI names a Lambda function are served (another type is ``500``).
- The function's resource-based policy (of the qualified function the URI names) must let the
  ``apigateway.amazonaws.com`` service ``lambda:InvokeFunction`` with an ``AWS:SourceArn`` matching the
  request's ``arn:aws:execute-api:<region>:<account>:<api>/<stage>/<METHOD>/<path>``, and no ``Deny`` may
  match; otherwise ``500`` and "Invalid permissions on Lambda function", no invocation
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-troubleshooting-lambda.html).
- The function gets the proxy event (payload 1.0). Its result must be the proxy response: a JSON object
  with no other keys than ``statusCode``, ``headers``, ``multiValueHeaders``, ``body`` and
  ``isBase64Encoded``, an integer ``statusCode`` and a string (or absent) ``body``; anything else is
  ``502`` and "Malformed Lambda proxy response". A function error is ``502``; a throttle ``500``; an
  invocation that ran past the integration's ``timeoutInMillis`` (29,000 unless set) ``504`` "Endpoint
  request timed out" (the invocation itself still finishes, as on AWS).
- With the stage's ``*/*`` logging level ``INFO`` or ``ERROR`` each request writes its execution log to
  ``API-Gateway-Execution-Logs_<api>/<stage>`` (INFO: every step; ERROR: the failure and its status),
  each line prefixed by ``(<request id>)`` (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html).
- Every request counts in ``AWS/ApiGateway`` ``Count``, ``4XXError``, ``5XXError``, ``Latency`` and, once
  the integration is called, ``IntegrationLatency``, under ``ApiName`` and ``ApiName``/``Stage``
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-metrics-and-dimensions.html).

Not emulated: access logs, authorizers, API keys and usage plans, stage variables, request validation,
the 29 s wait itself (the answer comes when the function returns), and deployments: a stage serves the
API's resources as they are now, where AWS serves the snapshot its last deployment took (a changed
integration takes effect with the next CreateDeployment).
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import ClientError

from chaos.workload.metrics import Datapoint, put_datapoints
from chaos.workload.runtime import Invocation, LocalLambdaRuntime

NAMESPACE = "AWS/ApiGateway"
SERVICE_PRINCIPAL = "apigateway.amazonaws.com"
DEFAULT_TIMEOUT_MS = 29_000
LOG_GROUP_PREFIX = "API-Gateway-Execution-Logs_"
MALFORMED = "Execution failed due to configuration error: Malformed Lambda proxy response"
INVALID_PERMISSIONS = "Execution failed due to configuration error: Invalid permissions on Lambda function"
TIMED_OUT = "Execution failed due to a timeout error"
_RESPONSE_KEYS = frozenset({"statusCode", "headers", "multiValueHeaders", "body", "isBase64Encoded"})
_INTERNAL_ERROR = json.dumps({"message": "Internal server error"})


@dataclass(frozen=True)
class ApiResponse:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Request:
    """One request's facts and its execution log, as it goes."""

    api_id: str
    stage: str
    method: str
    path: str
    body: str | None
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)
    lines: list[tuple[str, bool]] = field(default_factory=list)  # (message, is an error line)
    integration_ms: float | None = None

    def log(self, message: str, error: bool = False) -> None:
        self.lines.append((f"({self.request_id}) {message}", error))


def proxy_response_problem(result: Any) -> str | None:
    """Why ``result`` is not a Lambda proxy response API Gateway can use; None when it is one."""
    if not isinstance(result, dict):
        return f"the function returned {type(result).__name__}, not an object"
    extra = sorted(set(result) - _RESPONSE_KEYS)
    if extra:
        return f"unexpected keys {extra}"
    status = result.get("statusCode")
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        return f"statusCode {status!r} is not an HTTP status"
    if result.get("body") is not None and not isinstance(result["body"], str):
        return f"body is {type(result['body']).__name__}, not a string"
    headers = result.get("headers") or {}
    if not isinstance(headers, dict) or any(isinstance(v, dict | list) for v in headers.values()):
        return "headers is not an object of strings"
    return None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _applies(statement: dict[str, Any], source_arn: str) -> bool:
    principal = statement.get("Principal")
    services = _listed(principal.get("Service", [])) if isinstance(principal, dict) else []
    actions = _listed(statement.get("Action", []))
    if SERVICE_PRINCIPAL not in services or not any(
        a in ("lambda:InvokeFunction", "lambda:*", "*") for a in actions
    ):
        return False
    for operator, pairs in (statement.get("Condition") or {}).items():
        for key, wanted in pairs.items():
            if key.lower() != "aws:sourcearn" or operator not in ("ArnLike", "ArnEquals", "StringLike"):
                return False  # a condition API Gateway's request is not known to meet
            if not any(fnmatch.fnmatchcase(source_arn, str(w)) for w in _listed(wanted)):
                return False
    return True


def invoke_allowed(policy: dict[str, Any] | None, source_arn: str) -> bool:
    """Whether a resource-based policy lets API Gateway invoke the function for the ``source_arn`` route."""
    matching = [s for s in (policy or {}).get("Statement", []) if _applies(s, source_arn)]
    return any(s.get("Effect") == "Allow" for s in matching) and not any(
        s.get("Effect") == "Deny" for s in matching
    )


def _route(resources: list[dict[str, Any]], method: str, path: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The resource and method that serve ``method path``, and the path parameters; KeyError if none."""
    parts = [p for p in path.split("/") if p]
    for resource in resources:
        template = [p for p in str(resource["path"]).split("/") if p]
        if len(template) != len(parts):
            continue
        params = {t[1:-1]: p for t, p in zip(template, parts, strict=True) if t.startswith("{")}
        if all(t.startswith("{") or t == p for t, p in zip(template, parts, strict=True)):
            methods = resource.get("resourceMethods") or {}
            chosen = methods.get(method) or methods.get("ANY")
            if chosen is not None:
                return {"resource": resource, "method": chosen}, params
    raise KeyError(f"{method} {path}")


def uri_function_arn(uri: str) -> str | None:
    """The function a Lambda integration URI names: ``arn:aws:apigateway:<region>:lambda:path/2015-03-31/
    functions/<function ARN>/invocations``."""
    marker = ":lambda:path/2015-03-31/functions/"
    if marker not in uri or not uri.endswith("/invocations"):
        return None
    return uri.split(marker, 1)[1].removesuffix("/invocations")


def split_qualified(function_arn: str) -> tuple[str, str | None]:
    """A function ARN as its unqualified ARN and its qualifier (an alias or version), if any."""
    parts = function_arn.split(":")
    return ":".join(parts[:7]), parts[7] if len(parts) > 7 else None


def resource_policy(lambda_: Any, function_arn: str) -> dict[str, Any] | None:
    """The resource-based policy of the function (or alias, or version) ``function_arn`` names; None when
    it has none."""
    unqualified, qualifier = split_qualified(function_arn)
    params = {"FunctionName": unqualified} | ({"Qualifier": qualifier} if qualifier else {})
    try:
        policy: dict[str, Any] = json.loads(lambda_.get_policy(**params)["Policy"])
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceNotFoundException":
            return None
        raise
    return policy


class LogWriter:
    """Lines written to CloudWatch Logs as API Gateway writes them: one stream of its own per log group."""

    def __init__(self, logs: Any) -> None:
        self._logs = logs
        self._streams: dict[str, str] = {}  # log group → the stream this writer writes

    def write(self, group: str, lines: list[str], *, create_group: bool) -> None:
        """``create_group``: make the group when it is missing (else the caller's group must exist)."""
        if group not in self._streams:
            if create_group:
                with contextlib.suppress(self._logs.exceptions.ResourceAlreadyExistsException):
                    self._logs.create_log_group(logGroupName=group)
            self._streams[group] = secrets.token_hex(16)
            self._logs.create_log_stream(logGroupName=group, logStreamName=self._streams[group])
        at = int(time.time() * 1000)
        self._logs.put_log_events(
            logGroupName=group,
            logStreamName=self._streams[group],
            logEvents=[{"timestamp": at, "message": line} for line in lines],
        )


class RestApis:
    """Requests to REST API stages, served by API Gateway (``platform``: its reads, logs and metrics)
    through ``runtime``."""

    def __init__(self, runtime: LocalLambdaRuntime, platform: boto3.Session) -> None:
        self.runtime = runtime
        self._apigateway = platform.client("apigateway")
        self._lambda = platform.client("lambda")
        self._logs = platform.client("logs")
        self._cloudwatch = platform.client("cloudwatch")
        self._region = platform.region_name or "us-east-1"
        self._log = LogWriter(self._logs)

    def request(
        self, api_id: str, stage: str, method: str, path: str, body: str | None = None
    ) -> ApiResponse:
        request = _Request(api_id, stage, method.upper(), path, body)
        api = self._apigateway.get_rest_api(restApiId=api_id)
        settings = self._apigateway.get_stage(restApiId=api_id, stageName=stage).get("methodSettings", {})
        level = str((settings.get("*/*") or {}).get("loggingLevel") or "OFF")
        response = self._serve(request, api_id)
        request.log(f"Method completed with status: {response.status}", error=response.status >= 500)
        self._write_log(request, level)
        self._publish(str(api["name"]), request, response.status)
        return ApiResponse(
            response.status, response.body, {**response.headers, "x-amzn-RequestId": request.request_id}
        )

    def _serve(self, request: _Request, api_id: str) -> ApiResponse:
        request.log(f"Starting execution for request: {request.request_id}")
        request.log(f"HTTP Method: {request.method}, Resource Path: {request.path}")
        resources = [
            r
            for page in self._apigateway.get_paginator("get_resources").paginate(
                restApiId=api_id, embed=["methods"]
            )
            for r in page["items"]
        ]
        try:
            route, params = _route(resources, request.method, request.path)
        except KeyError:
            return ApiResponse(403, json.dumps({"message": "Missing Authentication Token"}))
        integration = route["method"].get("methodIntegration") or {}
        function_arn = uri_function_arn(str(integration.get("uri", "")))
        if integration.get("type") != "AWS_PROXY" or function_arn is None:
            request.log("Execution failed: the integration is not a Lambda proxy integration", error=True)
            return ApiResponse(500, _INTERNAL_ERROR)
        account = function_arn.split(":")[4]
        source_arn = (
            f"arn:aws:execute-api:{self._region}:{account}:{api_id}/{request.stage}/{request.method}"
            f"{request.path}"
        )
        if not invoke_allowed(resource_policy(self._lambda, function_arn), source_arn):
            request.log(INVALID_PERMISSIONS, error=True)
            return ApiResponse(500, _INTERNAL_ERROR)
        request.log(
            f"Endpoint request URI: https://lambda.{self._region}.amazonaws.com/2015-03-31/functions/"
            f"{function_arn}/invocations"
        )
        event = self._event(request, route["resource"], params, account)
        unqualified, qualifier = split_qualified(function_arn)
        invocation = self.runtime.invoke(unqualified, event, qualifier, request.request_id)
        request.integration_ms = invocation.duration_ms
        return self._answer(
            request, invocation, int(integration.get("timeoutInMillis") or DEFAULT_TIMEOUT_MS)
        )

    def _answer(self, request: _Request, invocation: Invocation, timeout_ms: int) -> ApiResponse:
        if invocation.duration_ms > timeout_ms:
            request.log(TIMED_OUT, error=True)
            return ApiResponse(504, json.dumps({"message": "Endpoint request timed out"}))
        if invocation.status == "throttled":
            request.log(
                f"Lambda invocation failed with status: 429. Lambda request id: {invocation.request_id}",
                error=True,
            )
            return ApiResponse(500, _INTERNAL_ERROR)
        request.log(
            f"Received response. Status: 200, Integration latency: {round(invocation.duration_ms)} ms"
        )
        if invocation.status != "succeeded":
            request.log(
                f"Lambda execution failed with status 200 due to customer function error: "
                f"{invocation.error or invocation.status}. Lambda request id: {invocation.request_id}",
                error=True,
            )
            return ApiResponse(502, _INTERNAL_ERROR)
        request.log(f"Endpoint response body before transformations: {json.dumps(invocation.result)[:1000]}")
        if proxy_response_problem(invocation.result) is not None:
            request.log(MALFORMED, error=True)
            return ApiResponse(502, _INTERNAL_ERROR)
        result = invocation.result
        headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
        return ApiResponse(int(result["statusCode"]), str(result.get("body") or ""), headers)

    def _event(
        self, request: _Request, resource: dict[str, Any], params: dict[str, str], account: str
    ) -> dict[str, Any]:
        now = datetime.now(UTC)
        headers = {"Content-Type": "application/json", "Host": f"{request.api_id}.execute-api.amazonaws.com"}
        return {
            "resource": resource["path"],
            "path": request.path,
            "httpMethod": request.method,
            "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()},
            "queryStringParameters": None,
            "multiValueQueryStringParameters": None,
            "pathParameters": params or None,
            "stageVariables": None,
            "requestContext": {
                "accountId": account,
                "apiId": request.api_id,
                "httpMethod": request.method,
                "identity": {"sourceIp": "127.0.0.1", "userAgent": "incident-response-sandbox"},
                "path": f"/{request.stage}{request.path}",
                "protocol": "HTTP/1.1",
                "requestId": request.request_id,
                "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "requestTimeEpoch": int(now.timestamp() * 1000),
                "resourceId": resource["id"],
                "resourcePath": resource["path"],
                "stage": request.stage,
            },
            "body": request.body,
            "isBase64Encoded": False,
        }

    def _write_log(self, request: _Request, level: str) -> None:
        lines = [m for m, error in request.lines if level == "INFO" or (level == "ERROR" and error)]
        if lines:  # API Gateway makes the execution log group itself
            self._log.write(f"{LOG_GROUP_PREFIX}{request.api_id}/{request.stage}", lines, create_group=True)

    def _publish(self, api_name: str, request: _Request, status: int) -> None:
        values: list[Datapoint] = [
            ("Count", 1.0, "Count"),
            ("4XXError", 1.0 if 400 <= status < 500 else 0.0, "Count"),
            ("5XXError", 1.0 if status >= 500 else 0.0, "Count"),
            ("Latency", (time.monotonic() - request.started) * 1000, "Milliseconds"),
        ]
        if request.integration_ms is not None:
            values.append(("IntegrationLatency", request.integration_ms, "Milliseconds"))
        dimension_sets = [
            [{"Name": "ApiName", "Value": api_name}],
            [{"Name": "ApiName", "Value": api_name}, {"Name": "Stage", "Value": request.stage}],
        ]
        put_datapoints(self._cloudwatch, NAMESPACE, values, dimension_sets, datetime.now(UTC))
