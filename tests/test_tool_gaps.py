"""What the tools v2 add on the sandbox world: gaps instead of silence, answers within the deadline, the
log group LoggingConfig names, invocations in the logs, versions and aliases, and no secret anywhere."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from mcp import Client

from chaos.faults.iam import REVOKE_S3
from chaos.loopback import BlackHole
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.contract import GetIAMStateArgs, GetLambdaConfigArgs, GetRecentLogsArgs
from mcp_server.contract.registry import TOOL_NAMES
from mcp_server.permissions import required_iam_actions
from mcp_server.reads import TIMEOUT_CODE
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from mcp_server.tools.iam import iam_state
from mcp_server.tools.lambda_config import lambda_config
from mcp_server.tools.logs import recent_logs
from supervisor.agent.providers import McpToolProvider
from tests.conftest import Inject, Undo
from tests.tool_support import call_tool


@pytest.fixture(scope="module")
def aws(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))


@pytest.fixture(scope="module")
def limited(sandbox: Sandbox) -> Iterator[AwsClients]:
    """The MCP server's reads, less iam:GetPolicyVersion: an identity that cannot read managed policies."""
    iam = sandbox.session(names.OPERATOR).client("iam")
    user = f"limited-reader-{uuid.uuid4().hex[:6]}"
    allowed = [a for a in required_iam_actions() if a != "iam:GetPolicyVersion"]
    iam.create_user(UserName=user)
    iam.put_user_policy(
        UserName=user,
        PolicyName="reads",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": allowed, "Resource": "*"}]}
        ),
    )
    key = iam.create_access_key(UserName=user)["AccessKey"]
    session = boto3.Session(
        aws_access_key_id=key["AccessKeyId"],
        aws_secret_access_key=key["SecretAccessKey"],
        region_name=sandbox.region,
    )
    with pytest.MonkeyPatch.context() as patch:  # clients are made on first use, inside the tests
        patch.setenv("AWS_ENDPOINT_URL", sandbox.endpoint_url)
        yield AwsClients.create(ServerSettings(), session)


def test_a_policy_the_server_cannot_read_is_a_gap_and_the_rest_is_answered(limited: AwsClients) -> None:
    state = call_tool(limited, iam_state, GetIAMStateArgs(lambda_name=names.FUNCTION_NAME))

    assert state.role_name == names.ROLE_NAME
    assert names.INLINE_POLICY_NAME in state.inline_policies  # read: GetRolePolicy is allowed
    assert {p.policy_name for p in state.attached_policies} == {names.LOGS_POLICY_NAME, names.VPC_POLICY_NAME}
    assert all(p.document is None for p in state.attached_policies)
    assert len(state.gaps) == 2
    for gap in state.gaps:
        assert gap.source.startswith("iam:GetPolicy/GetPolicyVersion of managed policy arn:aws:iam::")
        assert gap.error_code in {"AccessDenied", "AccessDeniedException"}
        assert gap.meaning.startswith("the MCP server's identity is not allowed to read it")


@pytest.fixture
def hung_iam(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsClients]:
    """The MCP server's clients with IAM behind a peer that accepts and never answers."""
    with BlackHole() as hole:
        monkeypatch.setenv("AWS_ENDPOINT_URL_IAM", hole.url)
        settings = ServerSettings(mcp_tool_deadline_seconds=1.5, aws_max_attempts=1)
        yield AwsClients.create(settings, sandbox.session(names.MCP_SERVER))


def test_a_hung_endpoint_costs_the_deadline_not_the_answer(hung_iam: AwsClients) -> None:
    settings = ServerSettings(mcp_tool_deadline_seconds=1.5, aws_max_attempts=1)
    started = time.monotonic()

    state = call_tool(hung_iam, iam_state, GetIAMStateArgs(lambda_name=names.FUNCTION_NAME), settings)

    assert time.monotonic() - started < 2.5
    assert state.role_name == names.ROLE_NAME  # from the function's configuration, read in time
    assert {gap.error_code for gap in state.gaps} == {TIMEOUT_CODE}
    assert {gap.source.split(" ")[0] for gap in state.gaps} == {
        "iam:GetRole",
        "iam:ListRolePolicies",
        "iam:ListAttachedRolePolicies",
    }
    assert all("1.5 s deadline" in gap.meaning for gap in state.gaps)


def test_logs_come_from_the_group_logging_config_names(
    sandbox: Sandbox, aws: AwsClients, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    group = f"/custom/{names.FUNCTION_NAME}-{uuid.uuid4().hex[:6]}"
    operator = sandbox.session(names.OPERATOR)
    operator.client("logs").create_log_group(logGroupName=group)
    lambda_ = operator.client("lambda")
    lambda_.update_function_configuration(FunctionName=names.FUNCTION_NAME, LoggingConfig={"LogGroup": group})
    undo(
        lambda: lambda_.update_function_configuration(
            FunctionName=names.FUNCTION_NAME, LoggingConfig={"LogGroup": names.LOG_GROUP}
        )
    )
    invocation = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    logs = call_tool(aws, recent_logs, GetRecentLogsArgs(lambda_name=names.FUNCTION_NAME))

    assert logs.log_group == group
    assert {e.request_id for e in logs.events} == {invocation.request_id}
    assert [i.request_id for i in logs.invocations] == [invocation.request_id]
    config = call_tool(aws, lambda_config, GetLambdaConfigArgs(lambda_name=names.FUNCTION_NAME))
    assert config.LoggingConfig is not None
    assert config.LoggingConfig.LogGroup == group


def test_logs_place_each_line_in_its_invocation(
    aws: AwsClients, runtime: LocalLambdaRuntime, inject: Inject
) -> None:
    healthy = runtime.invoke(names.FUNCTION_NAME, names.input_event())
    inject(REVOKE_S3)
    denied = runtime.invoke(names.FUNCTION_NAME, names.input_event())

    logs = call_tool(aws, recent_logs, GetRecentLogsArgs(lambda_name=names.FUNCTION_NAME, minutes=5))

    mine = {e.request_id: [] for e in logs.events}  # type: dict[str | None, list[str]]
    for event in logs.events:
        mine[event.request_id].append(event.kind)
    assert mine[healthy.request_id] == ["start", "function", "function", "end", "report"]
    assert mine[denied.request_id] == ["start", "function", "error_record", "end", "report"]
    outcomes = {i.request_id: i.outcome for i in logs.invocations}
    assert (outcomes[healthy.request_id], outcomes[denied.request_id]) == ("no_error_seen", "error_record")
    report = next(i for i in logs.invocations if i.request_id == denied.request_id)
    assert (report.memory_size_mb, report.max_memory_used_mb) == (256, denied.max_memory_mb)


def test_a_qualified_arn_reads_that_version_s_log_streams(
    aws: AwsClients, runtime: LocalLambdaRuntime
) -> None:
    latest = runtime.invoke(names.ORDERS_FUNCTION, names.order_request())
    live = runtime.invoke(names.ORDERS_FUNCTION, names.order_request(), qualifier=names.ORDERS_ALIAS)
    arn = f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:{names.ORDERS_FUNCTION}"

    qualified = call_tool(
        aws, recent_logs, GetRecentLogsArgs(lambda_name=f"{arn}:{names.ORDERS_ALIAS}", minutes=5)
    )
    everything = call_tool(aws, recent_logs, GetRecentLogsArgs(lambda_name=arn, minutes=5))

    assert qualified.events
    assert all("[1]" in (e.log_stream or "") for e in qualified.events)
    assert {live.request_id} <= {e.request_id for e in qualified.events}
    assert latest.request_id not in {e.request_id for e in qualified.events}
    assert {latest.request_id, live.request_id} <= {e.request_id for e in everything.events}
    assert qualified.note is not None
    assert "only the log streams of version 1 (live)" in qualified.note


def test_versions_and_aliases_in_the_configuration(aws: AwsClients) -> None:
    config = call_tool(aws, lambda_config, GetLambdaConfigArgs(lambda_name=names.ORDERS_FUNCTION))
    assert [v.Version for v in config.Versions] == ["$LATEST", "1"]
    assert [(a.Name, a.FunctionVersion) for a in config.Aliases] == [(names.ORDERS_ALIAS, "1")]
    assert config.EnvironmentVariableNames == ["TABLE_NAME"]
    assert config.CodeSha256
    assert config.gaps == []


async def test_no_environment_variable_value_appears_in_any_tool_output(
    sandbox: Sandbox, runtime: LocalLambdaRuntime, undo: Undo
) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    lambda_ = sandbox.session(names.OPERATOR).client("lambda")
    variables = {"INPUT_BUCKET": names.INPUT_BUCKET, "PAYMENT_API_TOKEN": secret}
    lambda_.update_function_configuration(
        FunctionName=names.FUNCTION_NAME, Environment={"Variables": variables}
    )
    undo(
        lambda: lambda_.update_function_configuration(
            FunctionName=names.FUNCTION_NAME, Environment={"Variables": {"INPUT_BUCKET": names.INPUT_BUCKET}}
        )
    )
    runtime.invoke(names.FUNCTION_NAME, names.input_event())
    settings = ServerSettings()
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))

    answers: dict[str, Any] = {}
    async with Client(server) as client:
        for tool in TOOL_NAMES:
            result = await client.call_tool(tool, {"lambda_name": names.FUNCTION_NAME})
            answers[tool] = [block.model_dump() for block in result.content], result.structured_content

    assert all(secret not in json.dumps(answer) for answer in answers.values())
    assert "PAYMENT_API_TOKEN" in json.dumps(answers["get_lambda_config"])  # the name, never the value


async def test_the_caller_s_deadline_in_the_request_meta_bounds_the_answer(hung_iam: AwsClients) -> None:
    """The supervisor's provider sends how long it waits; the server answers within it, with gaps."""
    server = build_server(ServerSettings(), hung_iam)  # the server's own deadline: 20 s
    async with Client(server) as client:
        provider = McpToolProvider(client.session, deadline_seconds=1.5)
        started = time.monotonic()
        answer = json.loads(await provider.call_tool("get_iam_state", {"lambda_name": names.FUNCTION_NAME}))

    assert time.monotonic() - started < 3
    assert answer["role_name"] == names.ROLE_NAME
    assert {gap["error_code"] for gap in answer["gaps"]} == {TIMEOUT_CODE}
    assert all("1.5 s deadline" in gap["meaning"] for gap in answer["gaps"])
