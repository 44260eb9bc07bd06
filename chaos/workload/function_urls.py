"""Function URLs: the HTTPS endpoint Lambda serves for a function, answered here as Lambda answers it.

A request names its URL; the function whose URL configuration holds it is found with
``GetFunctionUrlConfig`` (moto's server does not route ``ListFunctionUrlConfigs``). URLs created since
October 2025 (every URL here) need both ``lambda:InvokeFunctionUrl`` and ``lambda:InvokeFunction``
(https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html):

- ``AuthType`` ``NONE``: the function's resource-based policy must let everyone (principal ``*``) both
  actions (``InvokeFunctionUrl`` under any ``lambda:FunctionUrlAuthType`` condition naming ``NONE``,
  ``InvokeFunction`` under any ``lambda:InvokedViaFunctionUrl`` condition ``true``), and no ``Deny`` may
  match.
- ``AuthType`` ``AWS_IAM``: the request must be signed with Signature Version 4 for the ``lambda`` service by
  a known access key, within five minutes of its ``X-Amz-Date``
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html); the caller's own policies (read
  from IAM in its account) and the function's are then evaluated as IAM does
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic-cross-account.html):
  a ``Deny`` in either refuses; a caller of the function's account needs an ``Allow`` of each action in
  either, a caller of another account in both.

Refused, the answer is ``403`` and the function is not invoked. Allowed, the function gets the payload
format 2.0 event (with the signer under ``requestContext.authorizer.iam``) and its result becomes the
response: a result with ``statusCode`` is the response, any other is a ``200`` JSON body; a function error,
timeout or an invocation error (a key that cannot decrypt) is ``502``, a throttle ``429``
(https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html). Each request counts in
``UrlRequestCount`` and, by its status, ``Url4xxCount`` or ``Url5xxCount``, with ``UrlRequestLatency``, under
the ``FunctionName`` and ``Resource`` dimensions (https://docs.aws.amazon.com/lambda/latest/dg/urls-monitoring.html).
"""

from __future__ import annotations

import hmac
import json
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from moto.iam.access_control import IAMPolicy, PermissionResult

from chaos.workload.metrics import NAMESPACE, Datapoint, put_datapoints
from chaos.workload.runtime import LocalLambdaRuntime

_INVOKE_URL, _INVOKE = "lambda:InvokeFunctionUrl", "lambda:InvokeFunction"
_FAILED = {"throttled": 429}  # any other status than succeeded: 502
_FORBIDDEN = json.dumps({"Message": "Forbidden"})
_SIGNATURE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/\d{8}/(?P<region>[^/,\s]+)/lambda/aws4_request,\s*"
    r"SignedHeaders=(?P<headers>[^,\s]+),\s*Signature=(?P<signature>[0-9a-f]{64})"
)
_SKEW = timedelta(minutes=5)  # a signature older or newer than this is refused


@dataclass(frozen=True)
class UrlResponse:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Caller:
    """An identity that signs requests: the ARN of the user holding the access key, and the key's secret."""

    arn: str
    secret_access_key: str

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _names(principal: Any, caller: Caller | None) -> bool:
    """Whether a statement's principal names the caller: everyone, or (signed) its ARN or its account."""
    if principal == "*":
        return True
    found = _listed(principal.get("AWS", [])) if isinstance(principal, dict) else []
    if "*" in found:
        return True
    return caller is not None and any(
        p in (caller.arn, caller.account, f"arn:aws:iam::{caller.account}:root") for p in found
    )


# The condition Lambda writes on each statement of a URL (AddPermission's FunctionUrlAuthType and
# InvokedViaFunctionUrl): operator and key. A statement with any other condition does not apply.
_URL_CONDITIONS = {
    _INVOKE_URL: ("StringEquals", "lambda:FunctionUrlAuthType"),
    _INVOKE: ("Bool", "lambda:InvokedViaFunctionUrl"),
}


def _conditions_hold(condition: dict[str, Any], action: str, auth_type: str) -> bool:
    operator, key = _URL_CONDITIONS[action]
    value = auth_type.lower() if action == _INVOKE_URL else "true"
    return all(
        op == operator and set(pairs) == {key} and str(pairs[key]).lower() == value
        for op, pairs in condition.items()
    )


def _matches(statement: dict[str, Any], action: str, auth_type: str, caller: Caller | None) -> bool:
    actions = _listed(statement.get("Action", []))
    return (
        _names(statement.get("Principal"), caller)
        and any(a in (action, "lambda:*", "*") for a in actions)
        and _conditions_hold(statement.get("Condition") or {}, action, auth_type)
    )


def _decision(policy: dict[str, Any] | None, action: str, auth_type: str, caller: Caller | None) -> str:
    """The resource-based policy's word on ``action``: ``Deny``, ``Allow`` or ``""`` (it says nothing)."""
    effects = {
        s.get("Effect") for s in (policy or {}).get("Statement", []) if _matches(s, action, auth_type, caller)
    }
    return "Deny" if "Deny" in effects else "Allow" if "Allow" in effects else ""


def allowed(policy: dict[str, Any] | None) -> bool:
    """Whether a resource-based policy lets an unauthenticated caller invoke the function through its URL."""
    return all(_decision(policy, action, "NONE", None) == "Allow" for action in (_INVOKE_URL, _INVOKE))


def signed_headers(session: boto3.Session, url: str, method: str, body: str | None) -> dict[str, str]:
    """The headers with which ``session``'s identity signs a request to an ``AWS_IAM`` URL (what the AWS SDKs
    and ``awscurl`` send): Signature Version 4 for the ``lambda`` service of the URL's Region."""
    credentials = session.get_credentials().get_frozen_credentials()
    region = (urlsplit(url).hostname or "").split(".")[2]
    request = AWSRequest(method, url, data=body or "", headers={"content-type": "application/json"})
    SigV4Auth(credentials, "lambda", region).add_auth(request)
    return dict(request.headers.items())


def _signer_context(caller: Caller) -> dict[str, Any]:
    user = caller.arn.rsplit("/", 1)[1]
    return {"accountId": caller.account, "callerId": user, "userArn": caller.arn, "userId": user}


class FunctionUrls:
    """Requests to function URLs, served by the Lambda service (``platform``) through ``runtime``.

    ``callers``: access key id -> who holds it (what IAM knows of every key); ``accounts``: account id -> the
    Lambda service of that account, which reads a caller's own policies there (the platform's own account
    needs none)."""

    def __init__(
        self,
        runtime: LocalLambdaRuntime,
        platform: boto3.Session,
        callers: Mapping[str, Caller] | None = None,
        accounts: Mapping[str, boto3.Session] | None = None,
    ) -> None:
        self.runtime = runtime
        self._platform = platform
        self._lambda = platform.client("lambda")
        self._cloudwatch = platform.client("cloudwatch")
        self._callers = dict(callers or {})
        self._accounts = dict(accounts or {})
        self._iam: dict[str, Any] = {}  # account -> its IAM client, made on a first signed request

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

    def request(
        self, url: str, method: str = "GET", body: str | None = None, headers: Mapping[str, str] | None = None
    ) -> UrlResponse:
        """Answer one request; ``headers`` carry an ``AWS_IAM`` caller's signature (``signed_headers``)."""
        started = time.monotonic()
        config = self._configuration(url)
        if config is None:
            return UrlResponse(404, json.dumps({"Message": None}))
        name, caller = config["FunctionName"], None
        if config["AuthType"] == "AWS_IAM":
            caller = self._signer(url, method, body, {k.lower(): v for k, v in (headers or {}).items()})
            permitted = caller is not None and self._caller_allowed(caller, config["FunctionArn"], name)
        else:
            permitted = allowed(self._policy(name))
        response = UrlResponse(403, _FORBIDDEN)
        if permitted:
            response = self._invoke(name, url, method, body, caller)
        self._publish(name, response.status, (time.monotonic() - started) * 1000)
        return response

    def _signer(self, url: str, method: str, body: str | None, headers: dict[str, str]) -> Caller | None:
        """The caller whose valid, fresh SigV4 signature the request carries; None if it carries none."""
        found = _SIGNATURE.fullmatch(headers.get("authorization", ""))
        caller = self._callers.get(found["key"]) if found else None
        if found is None or caller is None or "x-amz-date" not in headers:
            return None
        try:
            signed_at = datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None
        if abs(datetime.now(UTC) - signed_at) > _SKEW:
            return None
        signed = {h: headers[h] for h in found["headers"].split(";") if h in headers}
        request = AWSRequest(method, url, data=body or "", headers=signed)
        request.context["timestamp"] = headers["x-amz-date"]
        key = Credentials(found["key"], caller.secret_access_key, headers.get("x-amz-security-token"))
        signer = SigV4Auth(key, "lambda", found["region"])
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        return caller if hmac.compare_digest(expected, found["signature"]) else None

    def _identity_decisions(self, caller: Caller, function_arn: str) -> dict[str, str]:
        """The caller's own policies' word on each action on the function: ``Deny``, ``Allow`` or ``""``."""
        if caller.account not in self._iam:
            self._iam[caller.account] = self._accounts.get(caller.account, self._platform).client("iam")
        iam, user = self._iam[caller.account], caller.arn.rsplit("/", 1)[1]
        documents = [
            iam.get_user_policy(UserName=user, PolicyName=name)["PolicyDocument"]
            for name in iam.list_user_policies(UserName=user)["PolicyNames"]
        ]
        for attached in iam.list_attached_user_policies(UserName=user)["AttachedPolicies"]:
            version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
            documents.append(
                iam.get_policy_version(PolicyArn=attached["PolicyArn"], VersionId=version)["PolicyVersion"][
                    "Document"
                ]
            )
        policies = [IAMPolicy(d if isinstance(d, str) else json.dumps(d)) for d in documents]
        decisions = {}
        for action in (_INVOKE_URL, _INVOKE):
            results = {policy.is_action_permitted(action, function_arn) for policy in policies}
            decisions[action] = (
                "Deny"
                if PermissionResult.DENIED in results
                else "Allow"
                if PermissionResult.PERMITTED in results
                else ""
            )
        return decisions

    def _caller_allowed(self, caller: Caller, function_arn: str, name: str) -> bool:
        """A Deny anywhere refuses; a caller of the function's account needs an Allow of each action in its
        own policies or the function's, a caller of another account in both."""
        policy, own = self._policy(name), self._identity_decisions(caller, function_arn)
        same_account = caller.account == function_arn.split(":")[4]
        for action in (_INVOKE_URL, _INVOKE):
            words = {own[action], _decision(policy, action, "AWS_IAM", caller)}
            if "Deny" in words or (words != {"Allow"} and not (same_account and "Allow" in words)):
                return False
        return True

    def _invoke(
        self, name: str, url: str, method: str, body: str | None, caller: Caller | None
    ) -> UrlResponse:
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
                "accountId": caller.account if caller else "anonymous",
                "apiId": host.split(".")[0],
                "domainName": host,
                "domainPrefix": host.split(".")[0],
                **({"authorizer": {"iam": _signer_context(caller)}} if caller else {}),
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
