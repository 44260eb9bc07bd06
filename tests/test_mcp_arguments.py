"""Tool arguments as sent, through a real MCP client: unknown names, other types and JSON-looking strings are
never rewritten; an ARN's account and region are honoured or refused; account aliases, never role ARNs."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.contract import LogsResponse
from mcp_server.contract.registry import SERVED_TOOLS, TOOL_NAMES
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings

OTHER_ACCOUNT = "999999999999"
PARTNER = {
    "partner": {
        "role_arn": f"arn:aws:iam::{names.SECOND_ACCOUNT_ID}:role/{names.READ_ONLY_ROLE}",
        "external_id": names.READ_ONLY_EXTERNAL_ID,
    }
}


class Sent:
    """The AWS requests one boto3 session's clients send, by operation."""

    def __init__(self, session: boto3.Session) -> None:
        self.operations: list[str] = []
        session.events.register("before-send", self._record)

    def _record(self, event_name: str, **_: Any) -> None:
        self.operations.append(event_name.removeprefix("before-send."))  # "sts.GetCallerIdentity"


@pytest.fixture
def session(sandbox: Sandbox) -> boto3.Session:
    return sandbox.session(names.MCP_SERVER)


@pytest.fixture
def sent(session: boto3.Session) -> Sent:
    return Sent(session)


@pytest.fixture
def server(session: boto3.Session) -> MCPServer:
    settings = ServerSettings(mcp_accounts=PARTNER)
    return build_server(settings, AwsClients.create(settings, session))


async def _call(server: MCPServer, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    async with Client(server) as client:
        result = await client.call_tool(tool, arguments)
    if result.is_error:
        return True, result.content[0].text  # type: ignore[union-attr]
    return False, result.structured_content


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"lambda_name": names.FUNCTION_NAME, "filterPattern": "ERROR"}, "'filterPattern'"),
        ({"lambda_name": names.FUNCTION_NAME, "minute": 600}, "'minute'"),
    ],
)
async def test_an_unknown_argument_is_refused_naming_the_arguments_that_exist(
    server: MCPServer, sent: Sent, arguments: dict[str, Any], named: str
) -> None:
    error, text = await _call(server, "get_recent_logs", arguments)
    assert error
    assert f"get_recent_logs has no argument {named}" in text
    assert "lambda_name, region, account, minutes, limit, filter_pattern" in text
    assert sent.operations == []


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"minutes": True}, "`minutes`"),
        ({"limit": "100"}, "`limit`"),
        ({"minutes": "3_0"}, "`minutes`"),
        ({"minutes": 30.5}, "`minutes`"),
        ({"filter_pattern": 7}, "`filter_pattern`"),
    ],
)
async def test_values_are_not_coerced_and_errors_are_plain_words(
    server: MCPServer, sent: Sent, arguments: dict[str, Any], field: str
) -> None:
    error, text = await _call(server, "get_recent_logs", {"lambda_name": names.FUNCTION_NAME} | arguments)
    assert error
    assert text.startswith("invalid arguments for get_recent_logs: ")
    assert field in text
    assert "pydantic" not in text
    assert "Arguments" not in text
    assert sent.operations == []


@pytest.mark.parametrize("pattern", ["null", "[]", "{}", '["ERROR"]', "7"])
async def test_a_filter_pattern_is_passed_as_the_string_it_is(server: MCPServer, pattern: str) -> None:
    error, answer = await _call(
        server, "get_recent_logs", {"lambda_name": names.FUNCTION_NAME, "filter_pattern": pattern}
    )
    if error:  # CloudWatch Logs may refuse a pattern; then it says so, not "not a string"
        assert "InvalidParameterException" in answer
    else:
        assert LogsResponse.model_validate(answer).filter_pattern == pattern


async def test_published_schemas_are_strict_and_carry_no_generated_titles(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    assert sorted(tool.name for tool in tools) == sorted(SERVED_TOOLS)
    for tool in tools:
        assert tool.input_schema["additionalProperties"] is False
        assert '"title"' not in json.dumps(tool.input_schema)
        subject = "lambda_name" if SERVED_TOOLS[tool.name].about_function else "source"
        assert set(tool.input_schema["properties"]) >= {subject, "region", "account"}
        assert subject in tool.input_schema["required"]


async def test_an_arn_of_another_account_is_refused_not_answered_from_this_one(
    server: MCPServer, sent: Sent
) -> None:
    arn = f"arn:aws:lambda:{names.DEFAULT_REGION}:{OTHER_ACCOUNT}:function:{names.FUNCTION_NAME}"
    for tool in TOOL_NAMES:
        error, text = await _call(server, tool, {"lambda_name": arn})
        assert error, tool
        assert f"the function ARN's account {OTHER_ACCOUNT} is neither the server's account" in text
    assert set(sent.operations) == {"sts.GetCallerIdentity"}  # which account the server is in, once


async def test_an_arn_in_another_region_is_read_in_that_region(server: MCPServer) -> None:
    arn = f"arn:aws:lambda:eu-west-1:{names.ACCOUNT_ID}:function:{names.FUNCTION_NAME}"
    error, text = await _call(server, "get_lambda_config", {"lambda_name": arn})
    assert error
    assert "ResourceNotFoundException" in text
    assert "in region eu-west-1" in text  # looked up there, where it does not exist

    error, text = await _call(server, "get_lambda_config", {"lambda_name": arn, "region": "ca-central-1"})
    assert error
    assert "region 'ca-central-1' contradicts the function ARN's region 'eu-west-1'" in text


async def test_an_unknown_region_is_refused_with_no_aws_call(server: MCPServer, sent: Sent) -> None:
    error, text = await _call(
        server, "get_lambda_config", {"lambda_name": names.FUNCTION_NAME, "region": "xx-nowhere-9"}
    )
    assert error
    assert "region 'xx-nowhere-9' is not a Lambda region of partition aws" in text
    assert sent.operations == []


async def test_an_account_alias_reaches_the_second_account(server: MCPServer) -> None:
    error, answer = await _call(
        server, "get_lambda_config", {"lambda_name": names.ORDERS_FUNCTION, "account": "partner"}
    )
    assert not error, answer
    assert answer["FunctionArn"].split(":")[4] == names.SECOND_ACCOUNT_ID

    # An ARN of that account finds its alias by itself; a name without the alias reads this account.
    second = (
        f"arn:aws:lambda:{names.DEFAULT_REGION}:{names.SECOND_ACCOUNT_ID}:function:{names.ORDERS_FUNCTION}"
    )
    error, answer = await _call(server, "get_lambda_config", {"lambda_name": second})
    assert not error, answer
    assert answer["FunctionArn"] == second
    error, answer = await _call(server, "get_lambda_config", {"lambda_name": names.ORDERS_FUNCTION})
    assert answer["FunctionArn"].split(":")[4] == names.ACCOUNT_ID


async def test_an_unknown_alias_or_a_role_arn_is_refused_with_no_aws_call(
    server: MCPServer, sent: Sent
) -> None:
    error, text = await _call(
        server, "get_iam_state", {"lambda_name": names.FUNCTION_NAME, "account": "staging"}
    )
    assert error
    assert "unknown account alias 'staging': this server knows partner" in text
    role = f"arn:aws:iam::{OTHER_ACCOUNT}:role/admin"
    error, text = await _call(server, "get_iam_state", {"lambda_name": names.FUNCTION_NAME, "account": role})
    assert error
    assert "`account`" in text
    assert sent.operations == []


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"days": 0}, "`days`"),
        ({"days": 366}, "`days`"),
        ({"fault_type": "Timeout; drop"}, "`fault_type`"),
        ({"trigger_event": "Update Alias"}, "`trigger_event`"),
        ({"resource": ""}, "`resource`"),
    ],
)
async def test_history_arguments_out_of_their_bounds_are_refused_before_any_read(
    server: MCPServer, sent: Sent, arguments: dict[str, Any], field: str
) -> None:
    tool = "get_incident_history"
    error, text = await _call(server, tool, {"lambda_name": names.FUNCTION_NAME} | arguments)
    assert error
    assert text.startswith(f"invalid arguments for {tool}: ")
    assert field in text
    assert sent.operations == []  # no Query made
