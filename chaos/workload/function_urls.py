"""Function URLs: the HTTPS endpoint Lambda serves for a function, answered here as Lambda answers it.

A request names its URL; the function whose URL configuration holds it is found with
``GetFunctionUrlConfig`` (moto's server does not route ``ListFunctionUrlConfigs``). With ``AuthType``
``NONE`` the function's resource-based policy decides: it must let everyone (principal ``*``) both
``lambda:InvokeFunctionUrl`` (any ``lambda:FunctionUrlAuthType`` condition naming ``NONE``) and, for URLs
created since October 2025 (every URL here), ``lambda:InvokeFunction`` (any
``lambda:InvokedViaFunctionUrl`` condition ``true``), and no ``Deny`` may match
(https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html); otherwise the answer is ``403`` and the
function is not invoked. ``AWS_IAM`` URLs are not served (their SigV4 callers are not emulated): ``403``.

Allowed, the function gets the payload format 2.0 event and its result becomes the response: a result
with ``statusCode`` is the response, any other is a ``200`` JSON body; a function error, timeout or an
invocation error (a key that cannot decrypt) is ``502``, a throttle ``429``
(https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html). Each request counts in
``UrlRequestCount`` and, by its status, ``Url4xxCount`` or ``Url5xxCount``, with ``UrlRequestLatency``, under
the ``FunctionName`` and ``Resource`` dimensions (https://docs.aws.amazon.com/lambda/latest/dg/urls-monitoring.html).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import ClientError

from chaos.workload.metrics import NAMESPACE, Datapoint, put_datapoints
from chaos.workload.runtime import LocalLambdaRuntime

_INVOKE_URL, _INVOKE = "lambda:InvokeFunctionUrl", "lambda:InvokeFunction"
_FAILED = {"throttled": 429}  # any other status than succeeded: 502


@dataclass(frozen=True)
class UrlResponse:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _everyone(principal: Any) -> bool:
    return principal == "*" or (isinstance(principal, dict) and "*" in _listed(principal.get("AWS", [])))


# The condition Lambda writes on each statement of a public URL (AddPermission's FunctionUrlAuthType and
# InvokedViaFunctionUrl): operator, key, value. A statement with any other condition does not apply.
_URL_CONDITIONS = {
    _INVOKE_URL: ("StringEquals", "lambda:FunctionUrlAuthType", "none"),
    _INVOKE: ("Bool", "lambda:InvokedViaFunctionUrl", "true"),
}


def _conditions_hold(condition: dict[str, Any], action: str) -> bool:
    operator, key, value = _URL_CONDITIONS[action]
    return all(
        op == operator and set(pairs) == {key} and str(pairs[key]).lower() == value
        for op, pairs in condition.items()
    )


def _matches(statement: dict[str, Any], action: str) -> bool:
    actions = _listed(statement.get("Action", []))
    return (
        _everyone(statement.get("Principal"))
        and any(a in (action, "lambda:*", "*") for a in actions)
        and _conditions_hold(statement.get("Condition") or {}, action)
    )


def allowed(policy: dict[str, Any] | None) -> bool:
    """Whether a resource-based policy lets an unauthenticated caller invoke the function through its URL."""
    statements = (policy or {}).get("Statement", [])
    for action in (_INVOKE_URL, _INVOKE):
        matching = [s for s in statements if _matches(s, action)]
        if not any(s.get("Effect") == "Allow" for s in matching) or any(
            s.get("Effect") == "Deny" for s in matching
        ):
            return False
    return True


class FunctionUrls:
    """Requests to function URLs, served by the Lambda service (``platform``) through ``runtime``."""

    def __init__(self, runtime: LocalLambdaRuntime, platform: boto3.Session) -> None:
        self.runtime = runtime
        self._lambda = platform.client("lambda")
        self._cloudwatch = platform.client("cloudwatch")

    def _configuration(self, url: str) -> dict[str, Any] | None:
        host = urlsplit(url).hostname
        for page in self._lambda.get_paginator("list_functions").paginate():
            for function in page["Functions"]:
                name = function["FunctionName"]
                try:
                    config: dict[str, Any] = self._lambda.get_function_url_config(FunctionName=name)
                except self._lambda.exceptions.ResourceNotFoundException:
                    continue
                if urlsplit(config["FunctionUrl"]).hostname == host:
                    return {"FunctionName": name, **config}
        return None

    def _policy(self, function_name: str) -> dict[str, Any] | None:
        try:
            policy: dict[str, Any] = json.loads(self._lambda.get_policy(FunctionName=function_name)["Policy"])
        except ClientError as error:
            if error.response["Error"]["Code"] == "ResourceNotFoundException":
                return None
            raise
        return policy

    def request(self, url: str, method: str = "GET", body: str | None = None) -> UrlResponse:
        started = time.monotonic()
        config = self._configuration(url)
        if config is None:
            return UrlResponse(404, json.dumps({"Message": None}))
        name = config["FunctionName"]
        if config["AuthType"] != "NONE" or not allowed(self._policy(name)):
            response = UrlResponse(403, json.dumps({"Message": "Forbidden"}))
        else:
            response = self._invoke(name, url, method, body)
        self._publish(name, response.status, (time.monotonic() - started) * 1000)
        return response

    def _invoke(self, name: str, url: str, method: str, body: str | None) -> UrlResponse:
        parts, now = urlsplit(url), datetime.now(UTC)
        host = parts.hostname or ""
        request_id = str(uuid.uuid4())
        event = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": parts.path or "/",
            "rawQueryString": parts.query,
            "headers": {"host": host, "content-type": "application/json"},
            "requestContext": {
                "accountId": "anonymous",
                "apiId": host.split(".")[0],
                "domainName": host,
                "domainPrefix": host.split(".")[0],
                "http": {
                    "method": method,
                    "path": parts.path or "/",
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                },
                "requestId": request_id,
                "routeKey": "$default",
                "stage": "$default",
                "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "timeEpoch": int(now.timestamp() * 1000),
            },
            "body": body,
            "isBase64Encoded": False,
        }
        invocation = self.runtime.invoke(name, event, request_id=request_id)
        if invocation.status != "succeeded":
            status = _FAILED.get(invocation.status, 502)
            return UrlResponse(
                status, json.dumps({"Message": "Internal Server Error" if status == 502 else None})
            )
        result = invocation.result
        if isinstance(result, dict) and "statusCode" in result:
            return UrlResponse(
                int(result["statusCode"]), str(result.get("body") or ""), dict(result.get("headers") or {})
            )
        return UrlResponse(200, json.dumps(result), {"content-type": "application/json"})

    def _publish(self, name: str, status: int, latency_ms: float) -> None:
        values: list[Datapoint] = [
            ("UrlRequestCount", 1.0, "Count"),
            ("Url4xxCount", 1.0 if 400 <= status < 500 else 0.0, "Count"),
            ("Url5xxCount", 1.0 if status >= 500 else 0.0, "Count"),
            ("UrlRequestLatency", latency_ms, "Milliseconds"),
        ]
        dimension_sets = [
            [{"Name": "FunctionName", "Value": name}],
            [{"Name": "FunctionName", "Value": name}, {"Name": "Resource", "Value": f"{name}:$LATEST"}],
        ]
        put_datapoints(self._cloudwatch, NAMESPACE, values, dimension_sets, datetime.now(UTC))
