"""AWS_IAM function URLs in the sandbox (chaos/workload/function_urls.py, sources in its docstring):
report-builder's URL answers only a request signed (SigV4) by a known key, fresh and unaltered, from a
caller whom IAM's evaluation lets through: another account's caller needs both its own policy's grant and
the function's, a caller of the function's account either; the function sees who signed. And
get_event_sources names, with its own code, the callers the function's policy lets in."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import botocore.auth
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.function_urls import FunctionUrls, signed_headers
from chaos.workload.runtime import Invocation, LocalLambdaRuntime
from mcp_server.contract.event_sources import PolicyStatement
from mcp_server.tools.event_sources import url_grantees
from tests.conftest import Undo
from tests.test_async_invocation import _lambda_metric
from tests.test_function_urls import event_sources_of, without

REPORT = names.REPORT_FUNCTION
READER_ARN = f"arn:aws:iam::{names.SECOND_ACCOUNT_ID}:user/{names.REPORT_READER}"


@pytest.fixture
def events(runtime: LocalLambdaRuntime, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The events the runtime is asked to invoke with (the runtime records none of its own)."""
    sent: list[dict[str, Any]] = []
    invoke = runtime.invoke

    def recording(name: str, event: dict[str, Any], *args: Any, **kwargs: Any) -> Invocation:
        sent.append(event)
        return invoke(name, event, *args, **kwargs)

    monkeypatch.setattr(runtime, "invoke", recording)
    return sent


@pytest.fixture
def reports_deleted(operator: boto3.Session, undo: Undo) -> Callable[[list[Invocation]], None]:
    """Marks the invocations whose stored report the test deletes afterwards."""
    s3, made = operator.client("s3"), list[Invocation]()

    def delete() -> None:
        for invocation in made:
            s3.delete_object(Bucket=names.REPORT_BUCKET, Key=f"reports/{invocation.request_id}.json")

    undo(delete)
    return made.extend


def _get(sandbox: Sandbox, urls: FunctionUrls, profile: str) -> int:
    url = sandbox.world.report_builder_url
    return urls.request(url, "GET", None, signed_headers(sandbox.session(profile), url, "GET", None)).status


def test_the_reader_s_signed_request_runs_the_function_which_sees_who_signed(
    sandbox: Sandbox,
    operator: boto3.Session,
    urls: tuple[FunctionUrls, list[Invocation]],
    events: list[dict[str, Any]],
    reports_deleted: Callable[[list[Invocation]], None],
) -> None:
    front_door, seen = urls
    assert _get(sandbox, front_door, names.REPORT_READER) == 200
    reports_deleted(seen)
    [invocation] = seen
    assert invocation.status == "succeeded"
    iam = events[0]["requestContext"]["authorizer"]["iam"]
    assert (iam["userArn"], iam["accountId"]) == (READER_ARN, names.SECOND_ACCOUNT_ID)
    assert _lambda_metric(sandbox, REPORT, "UrlRequestCount") == 1
    policy = json.loads(operator.client("lambda").get_policy(FunctionName=REPORT)["Policy"])
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    assert by_sid[names.REPORT_URL_STATEMENT]["Principal"] == {"AWS": READER_ARN}  # as Lambda writes it
    assert by_sid[names.REPORT_URL_STATEMENT]["Condition"] == {
        "StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}
    }


def _reader_signs(sandbox: Sandbox, body: str | None = None) -> dict[str, str]:
    url = sandbox.world.report_builder_url
    return signed_headers(sandbox.session(names.REPORT_READER), url, "GET", body)


def _unsigned(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return {}


def _another_secret(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    frozen = sandbox.session(names.REPORT_READER).get_credentials().get_frozen_credentials()
    request = AWSRequest("GET", sandbox.world.report_builder_url, data="")
    SigV4Auth(Credentials(frozen.access_key, "not-the-secret"), "lambda", sandbox.region).add_auth(request)
    return dict(request.headers.items())


def _ten_minutes_ago(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    then = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=10)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *args, **kwargs: then)
    return _reader_signs(sandbox)


def _for_another_body(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return _reader_signs(sandbox, body="{}")  # the request sent has none


@pytest.mark.parametrize("headers", [_unsigned, _another_secret, _ten_minutes_ago, _for_another_body])
def test_a_request_without_a_valid_fresh_signature_is_refused_before_the_function_runs(
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
    urls: tuple[FunctionUrls, list[Invocation]],
    headers: Callable[[Sandbox, pytest.MonkeyPatch], dict[str, str]],
) -> None:
    front_door, seen = urls
    sent = headers(sandbox, monkeypatch)
    response = front_door.request(sandbox.world.report_builder_url, "GET", None, sent)
    assert (response.status, json.loads(response.body)) == (403, {"Message": "Forbidden"})
    assert seen == []
    assert _lambda_metric(sandbox, REPORT, "Url4xxCount") == 1


@pytest.mark.parametrize("removed", [names.REPORT_URL_STATEMENT, names.REPORT_URL_INVOKE_STATEMENT])
def test_a_caller_of_another_account_needs_the_function_s_grant_of_both_actions(
    sandbox: Sandbox,
    operator: boto3.Session,
    undo: Undo,
    urls: tuple[FunctionUrls, list[Invocation]],
    removed: str,
) -> None:
    front_door, seen = urls
    without(operator, undo, removed, REPORT)
    assert _get(sandbox, front_door, names.REPORT_READER) == 403  # its own policy still grants both
    assert seen == []


def test_a_caller_of_another_account_needs_its_own_grant_too(
    sandbox: Sandbox, undo: Undo, urls: tuple[FunctionUrls, list[Invocation]]
) -> None:
    front_door, seen = urls
    iam = sandbox.session(names.SECOND_OPERATOR).client("iam")
    [attached] = iam.list_attached_user_policies(UserName=names.REPORT_READER)["AttachedPolicies"]
    iam.detach_user_policy(UserName=names.REPORT_READER, PolicyArn=attached["PolicyArn"])
    undo(lambda: iam.attach_user_policy(UserName=names.REPORT_READER, PolicyArn=attached["PolicyArn"]))
    assert _get(sandbox, front_door, names.REPORT_READER) == 403  # the function's policy still names it
    assert seen == []


def test_a_caller_of_the_function_s_account_needs_a_grant_in_either_policy(
    sandbox: Sandbox,
    urls: tuple[FunctionUrls, list[Invocation]],
    events: list[dict[str, Any]],
    reports_deleted: Callable[[list[Invocation]], None],
) -> None:
    """The operator's own policy allows everything, the function's names it not: let in. The MCP server's
    grants neither action, the function's names it not: refused."""
    front_door, seen = urls
    assert _get(sandbox, front_door, names.MCP_SERVER) == 403
    assert seen == []
    assert _get(sandbox, front_door, names.OPERATOR) == 200
    reports_deleted(seen)
    assert [e["requestContext"]["authorizer"]["iam"]["accountId"] for e in events] == [names.ACCOUNT_ID]


def test_the_event_sources_tool_names_the_callers_the_function_s_policy_lets_through_and_counts_refusals(
    sandbox: Sandbox, operator: boto3.Session, undo: Undo, urls: tuple[FunctionUrls, list[Invocation]]
) -> None:
    front_door, _ = urls
    url = event_sources_of(sandbox, REPORT).function_url
    assert url is not None
    assert (url.FunctionUrl, url.AuthType) == (sandbox.world.report_builder_url, "AWS_IAM")
    assert (url.granted_callers, url.invoke_allowed) == ([READER_ARN], None)

    without(operator, undo, names.REPORT_URL_INVOKE_STATEMENT, REPORT)
    assert _get(sandbox, front_door, names.REPORT_READER) == 403
    refused = event_sources_of(sandbox, REPORT).function_url
    assert refused is not None
    assert (refused.granted_callers, refused.client_errors) == ([], 1)


def _grant(
    sid: str, action: str, principal: str = READER_ARN, effect: str = "Allow", **condition: str
) -> Any:
    return PolicyStatement(Sid=sid, Effect=effect, Principal=principal, Action=action, **condition)


SIGNED = [
    _grant("url", "lambda:InvokeFunctionUrl", FunctionUrlAuthType="AWS_IAM"),
    _grant("invoke", "lambda:InvokeFunction", InvokedViaFunctionUrl="true"),
]
TOPIC = _grant("sns", "lambda:InvokeFunction", principal="sns.amazonaws.com")


@pytest.mark.parametrize(
    ("statements", "granted"),
    [
        (SIGNED, [READER_ARN]),
        ([*SIGNED, TOPIC], [READER_ARN]),  # a service is no URL caller
        (SIGNED[:1], []),  # a URL made since October 2025 needs lambda:InvokeFunction too
        ([SIGNED[0], TOPIC], []),
        ([SIGNED[0].model_copy(update={"FunctionUrlAuthType": "NONE"}), SIGNED[1]], []),  # for a public URL
        ([*SIGNED, _grant("deny", "lambda:InvokeFunction", principal="*", effect="Deny")], []),
        ([*SIGNED, _grant("one", "lambda:InvokeFunctionUrl", principal="111122223333")], [READER_ARN]),
        ([_grant("all", "lambda:*", principal="111122223333")], ["111122223333"]),
    ],
)
def test_the_tool_s_own_reading_of_whom_an_aws_iam_url_lets_in(
    statements: list[Any], granted: list[str]
) -> None:
    assert url_grantees(statements) == granted
