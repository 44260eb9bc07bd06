"""What the tools v2 add on the sandbox world: gaps instead of silence, answers within the deadline, the
log group LoggingConfig names, invocations in the logs, versions and aliases, and no secret anywhere."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

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
from mcp_server.reads import TIMEOUT_CODE
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from mcp_server.tools.iam import iam_state
from mcp_server.tools.lambda_config import lambda_config
from mcp_server.tools.logs import recent_logs
from supervisor.agent.providers import McpToolProvider
from tests.conftest import Inject, Undo
from tests.reduced_reader import reader_without
from tests.tool_support import call_tool


@pytest.fixture(scope="module")
def aws(sandbox: Sandbox) -> AwsClients:
    return AwsClients.create(ServerSettings(), sandbox.session(names.MCP_SERVER))


@pytest.fixture(scope="module")
def limited(sandbox: Sandbox) -> Iterator[AwsClients]:
    """The MCP server's reads, less iam:GetPolicyVersion: an identity that cannot read managed policies."""
    with reader_without(sandbox, "iam:GetPolicyVersion") as session:
        yield AwsClients.create(ServerSettings(), session)


def test_a_policy_the_server_cannot_read_is_a_gap_and_the_rest_is_answered(limited: AwsClients) -> None:
    state = call_tool(limited, iam_state, GetIAMStateArgs(lambda_name=names.FUNCTION_NAME))

    assert state.role_name == names.ROLE_NAME
    assert names.INLINE_POLICY_NAME in state.inline_policies  # read: GetRolePolicy is allowed
    assert {p.policy_name for p in state.attached_policies} == {names.LOGS_POLICY_NAME, names.VPC_POLICY_NAME}
    assert all(p.document is None for p in state.attached_policies)
    assert sorted((gap.source, gap.error_code, gap.meaning) for gap in state.gaps) == [
        (
            f"iam:GetPolicy/GetPolicyVersion of managed policy {policy}",
            "AccessDenied",  # IAM's code for a refused call
            "the MCP server's identity is not allowed to read it: what the managed policy allows or denies "
            "is unknown",
        )
        for policy in sorted(
            f"arn:aws:iam::{names.ACCOUNT_ID}:policy/{name}"
            for name in (names.LOGS_POLICY_NAME, names.VPC_POLICY_NAME)
        )
    ]


# Reads of a black hole end only when their read timeout does (here far beyond every deadline), so an
# answer well before it can only come from the deadline: no bound below rests on the machine's speed.
UNANSWERED_READ_SECONDS = 300.0


def _unanswered_clients(sandbox: Sandbox) -> AwsClients:
    """The MCP server's clients, reads bounded only by the tool's deadline, built before a test's clock
    starts: building boto3 clients is CPU work a loaded machine can stretch past a 1 s deadline, and what
    these tests time is the reads."""
    settings = ServerSettings(aws_read_timeout=UNANSWERED_READ_SECONDS, aws_max_attempts=1)
    clients = AwsClients.create(settings, sandbox.session(names.MCP_SERVER))
    clients.for_target(clients.resolver.resolve(GetRecentLogsArgs(lambda_name=names.FUNCTION_NAME)))
    return clients


@pytest.fixture
def hung_iam(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsClients]:
    """The MCP server's clients with IAM behind a peer that accepts and never answers."""
    with BlackHole() as hole:
        monkeypatch.setenv("AWS_ENDPOINT_URL_IAM", hole.url)
        yield _unanswered_clients(sandbox)


def test_a_hung_endpoint_costs_the_deadline_not_the_answer(hung_iam: AwsClients) -> None:
    settings = ServerSettings(mcp_tool_deadline_seconds=5.0)  # room for the real configuration read
    started = time.monotonic()

    state = call_tool(hung_iam, iam_state, GetIAMStateArgs(lambda_name=names.FUNCTION_NAME), settings)

    assert time.monotonic() - started < UNANSWERED_READ_SECONDS / 10
    assert state.role_name == names.ROLE_NAME  # from the function's configuration, read in time
    late = "not answered within the tool's 5 s deadline"
    assert sorted((gap.source, gap.error_code, gap.meaning) for gap in state.gaps) == [
        (
            f"iam:GetRole of role {names.ROLE_NAME}",
            TIMEOUT_CODE,
            f"{late}: the role's permissions boundary is unknown (the role may have been deleted)",
        ),
        (
            f"iam:ListAttachedRolePolicies of role {names.ROLE_NAME}",
            TIMEOUT_CODE,
            f"{late}: the managed policies attached to the role are unknown",
        ),
        (
            f"iam:ListRolePolicies of role {names.ROLE_NAME}",
            TIMEOUT_CODE,
            f"{late}: the role's inline policies are unknown",
        ),
    ]


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

    # Every line (detail): the start, end and report lines too, each placed.
    logs = call_tool(
        aws, recent_logs, GetRecentLogsArgs(lambda_name=names.FUNCTION_NAME, minutes=5, detail=True)
    )

    mine = {e.request_id: [] for e in logs.events}  # type: dict[str | None, list[str]]
    for event in logs.events:
        mine[event.request_id].append(event.kind)
    # A cold start's INIT_START line goes with the invocation it started for: only the first of the two.
    assert [kind for kind in mine[healthy.request_id] if kind != "platform"] == [
        "start",
        "function",
        "function",
        "end",
        "report",
    ]
    assert mine[healthy.request_id][0] in ("platform", "start")
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
        aws,
        recent_logs,
        GetRecentLogsArgs(lambda_name=f"{arn}:{names.ORDERS_ALIAS}", minutes=5, detail=True),
    )
    everything = call_tool(aws, recent_logs, GetRecentLogsArgs(lambda_name=arn, minutes=5, detail=True))
    default = call_tool(
        aws, recent_logs, GetRecentLogsArgs(lambda_name=f"{arn}:{names.ORDERS_ALIAS}", minutes=5)
    )
    assert {i.log_stream for i in default.invocations} == {e.log_stream for e in qualified.events}

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


@pytest.fixture
def hung_aws(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsClients]:
    """The MCP server's clients with every AWS service behind a peer that accepts and never answers."""
    with BlackHole() as hole:
        monkeypatch.setenv("AWS_ENDPOINT_URL", hole.url)
        yield _unanswered_clients(sandbox)


def _answered_at_the_deadline(result: Any, deadline: float) -> None:
    """A tool error naming the deadline (the read it cannot do without), or an answer whose gaps are
    exactly the reads not answered in time."""
    text = " ".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        assert f"not answered within the tool's {deadline:g} s deadline" in text
        return
    gaps = result.structured_content["gaps"]
    assert gaps
    assert [gap["error_code"] for gap in gaps] == [TIMEOUT_CODE] * len(gaps)
    late = f"not answered within the tool's {deadline:g} s deadline: "  # then what the read would have said
    assert [gap["meaning"][: len(late)] for gap in gaps] == [late] * len(gaps)


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_with_aws_unresponsive_every_tool_answers_at_its_deadline(
    hung_aws: AwsClients, tool: str
) -> None:
    deadline = 1.0
    server = build_server(ServerSettings(mcp_tool_deadline_seconds=deadline), hung_aws)
    async with Client(server) as client:
        started = time.monotonic()
        result = await client.call_tool(tool, {"lambda_name": names.FUNCTION_NAME})
        elapsed = time.monotonic() - started

    assert deadline <= elapsed < UNANSWERED_READ_SECONDS / 10
    _answered_at_the_deadline(result, deadline)


@pytest.fixture
def hung_sts(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsClients]:
    """The MCP server's clients with STS behind a peer that accepts and never answers."""
    with BlackHole() as hole:
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", hole.url)
        yield _unanswered_clients(sandbox)


async def test_the_server_s_own_identity_is_read_within_the_deadline_too(hung_sts: AwsClients) -> None:
    """A function ARN is checked against the server's own account (sts:GetCallerIdentity, read once)."""
    arn = f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.ACCOUNT_ID}:function:{names.FUNCTION_NAME}"
    server = build_server(ServerSettings(mcp_tool_deadline_seconds=1.0), hung_sts)
    async with Client(server) as client:
        started = time.monotonic()
        result = await client.call_tool("get_recent_logs", {"lambda_name": arn})
        elapsed = time.monotonic() - started

    assert elapsed < UNANSWERED_READ_SECONDS / 10
    assert result.is_error
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert "sts:GetCallerIdentity" in text
    assert "not answered within the tool's 1 s deadline" in text


@pytest.fixture
def hung_logs(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsClients]:
    """The MCP server's clients with CloudWatch Logs behind a peer that accepts and never answers."""
    with BlackHole() as hole:
        monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", hole.url)
        yield _unanswered_clients(sandbox)


def test_hung_logs_are_a_gap_at_the_deadline_and_the_log_group_is_still_named(hung_logs: AwsClients) -> None:
    settings = ServerSettings(mcp_tool_deadline_seconds=5.0)  # room for the real configuration read
    started = time.monotonic()

    logs = call_tool(hung_logs, recent_logs, GetRecentLogsArgs(lambda_name=names.FUNCTION_NAME), settings)

    assert time.monotonic() - started < UNANSWERED_READ_SECONDS / 10
    assert logs.log_group == names.LOG_GROUP  # from the function's LoggingConfig, read in time
    assert (logs.events, logs.matched_events) == ([], 0)
    assert [(gap.source.split(" ")[0], gap.error_code) for gap in logs.gaps] == [
        ("logs:FilterLogEvents", TIMEOUT_CODE)
    ]
    assert logs.note is not None
    assert "not read within the tool's 5 s deadline" in logs.note


async def test_the_caller_s_deadline_in_the_request_meta_bounds_the_answer(hung_aws: AwsClients) -> None:
    """The supervisor's provider sends how long it waits; the server answers within it, with gaps."""
    server = build_server(ServerSettings(mcp_tool_deadline_seconds=60), hung_aws)  # its own: 60 s
    async with Client(server) as client:
        provider = McpToolProvider(client.session, deadline_seconds=1.5)
        started = time.monotonic()
        answer = json.loads(await provider.call_tool("get_recent_logs", {"lambda_name": names.FUNCTION_NAME}))
        elapsed = time.monotonic() - started

    assert 1.5 <= elapsed < 30  # the caller's 1.5 s, not the server's 60 s nor the reads' 300 s
    assert answer["log_group"] == f"/aws/lambda/{names.FUNCTION_NAME}"  # the configuration was not read
    assert {gap["source"].split(" ")[0] for gap in answer["gaps"]} == {
        "lambda:GetFunctionConfiguration",
        "logs:FilterLogEvents",
    }
    assert [gap["error_code"] for gap in answer["gaps"]] == [TIMEOUT_CODE] * 2
    late = "not answered within the tool's 1.5 s deadline: "  # then what the read would have said
    assert [gap["meaning"][: len(late)] for gap in answer["gaps"]] == [late] * 2
