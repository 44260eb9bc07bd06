"""A function that logs a secret: the MCP server's answer carries placeholders and counts them, to an MCP
client as to the supervisor's graph; ``MCP_REDACT=false`` alone shows the values."""

from __future__ import annotations

import json
import uuid
from typing import Any

from mcp import Client

from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.aws import AwsClients
from mcp_server.redaction import REDACTION_SOURCE
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings

EMAIL = "bob.smith@example.com"
CARD = "4111111111111111"


async def _logs_answer(settings: ServerSettings, sandbox: Sandbox, marker: str) -> tuple[str, dict[str, Any]]:
    """``get_recent_logs`` through an MCP client, this test's lines only (the sandbox's logs are shared)."""
    server = build_server(settings, AwsClients.create(settings, sandbox.session(names.MCP_SERVER)))
    arguments = {"lambda_name": names.FUNCTION_NAME, "minutes": 10, "filter_pattern": marker}
    async with Client(server) as client:
        result = await client.call_tool("get_recent_logs", arguments)
    assert not result.is_error
    assert result.structured_content is not None
    return result.content[0].text, result.structured_content  # type: ignore[union-attr]


def _mine(answer: dict[str, Any], marker: str) -> list[str]:
    return [event["message"] for event in answer["events"] if marker in event["message"]]


async def test_a_logged_secret_reaches_no_mcp_client_unless_redaction_is_turned_off(
    sandbox: Sandbox, runtime: LocalLambdaRuntime
) -> None:
    marker = uuid.uuid4().hex  # this test's lines only: the sandbox's logs are shared
    key = f"incoming/{marker}/{EMAIL}/{CARD}.json"
    invocation = runtime.invoke(names.FUNCTION_NAME, {"key": key, "work_seconds": 0})
    # data-processor logs the key once, as it starts: "processing s3://<bucket>/<key>" (the read then fails)
    logged = f"\t{invocation.request_id}\tprocessing s3://{names.INPUT_BUCKET}/incoming/{marker}/{{}}.json\n"

    text, answer = await _logs_answer(ServerSettings(), sandbox, marker)
    lines = _mine(answer, marker)
    assert len(lines) == 1, lines
    assert lines[0].endswith(logged.format("[REDACTED:email]/[REDACTED:card_number]")), lines
    assert EMAIL not in text
    assert EMAIL not in json.dumps(answer)
    assert CARD not in json.dumps(answer)
    assert [gap for gap in answer["gaps"] if gap["source"] == REDACTION_SOURCE] == [
        {
            "source": "redaction",
            "error_code": None,
            "meaning": "Replaced before any model reads the answer: 1 email, 1 card_number. The "
            "placeholders ([REDACTED:<kind>]) stand where the values were; the values are not recoverable "
            "from this answer.",
        }
    ]

    _, shown = await _logs_answer(ServerSettings(mcp_redact=False), sandbox, marker)
    unredacted = _mine(shown, marker)
    assert len(unredacted) == 1, unredacted
    assert unredacted[0].endswith(logged.format(f"{EMAIL}/{CARD}")), unredacted
    assert REDACTION_SOURCE not in [gap["source"] for gap in shown["gaps"]]
