"""A tool call written as the whole text of a reply is read as a call, exactly or not at all."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage

from supervisor.agent.text_calls import as_calls, calls_in_text

OFFERED = ["get_recent_logs", "get_lambda_config"]
LOGS = {"name": "get_recent_logs", "arguments": {"lambda_name": "data-processor", "minutes": 30}}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(LOGS),
        f"```json\n{json.dumps(LOGS, indent=2)}\n```",
        f"  {json.dumps({'name': 'get_recent_logs', 'parameters': LOGS['arguments']})}\n",
        json.dumps({"name": "get_recent_logs", "arguments": json.dumps(LOGS["arguments"])}),  # OpenAI's form
    ],
)
def test_a_reply_that_is_exactly_a_call_is_read_as_that_call(text: str) -> None:
    [call] = calls_in_text(AIMessage(content=text), OFFERED)
    assert (call["name"], call["args"]) == ("get_recent_logs", LOGS["arguments"])
    assert call["id"]


def test_a_list_of_calls_is_read_in_order() -> None:
    config = {"name": "get_lambda_config", "arguments": {"lambda_name": "data-processor"}}
    calls = calls_in_text(AIMessage(content=json.dumps([LOGS, config])), OFFERED)
    assert [call["name"] for call in calls] == ["get_recent_logs", "get_lambda_config"]
    assert len({call["id"] for call in calls}) == 2


@pytest.mark.parametrize(
    "text",
    [
        f"I will call {json.dumps(LOGS)} now.",  # inside prose: not guessed
        f"{json.dumps(LOGS)}\nThen the configuration.",
        json.dumps({"name": "get_iam_state", "arguments": {"lambda_name": "data-processor"}}),  # not offered
        json.dumps({"name": "delete_function", "arguments": {}}),  # invented
        json.dumps({**LOGS, "reason": "look at the errors"}),  # more than a call
        json.dumps({"name": "get_recent_logs"}),  # no arguments
        json.dumps({"name": "get_recent_logs", "arguments": "lambda_name=data-processor"}),
        json.dumps([LOGS, {"name": "get_iam_state", "arguments": {}}]),  # one of them not offered
        json.dumps([]),
        "The function data-processor fails on NoSuchKey.",
    ],
)
def test_anything_else_is_not_a_call(text: str) -> None:
    assert calls_in_text(AIMessage(content=text), OFFERED) == []


def test_a_reply_with_calls_of_its_own_keeps_them() -> None:
    own = {
        "name": "get_lambda_config",
        "args": {"lambda_name": "data-processor"},
        "id": "c1",
        "type": "tool_call",
    }
    message = AIMessage(content=json.dumps(LOGS), tool_calls=[own])
    assert calls_in_text(message, OFFERED) == []


def test_the_calls_replace_the_text_that_wrote_them() -> None:
    message = AIMessage(content=[{"type": "text", "text": json.dumps(LOGS)}], id="reply-1")
    calls = calls_in_text(message, OFFERED)
    read = as_calls(message, calls)
    assert (read.content, read.tool_calls, read.id) == ("", calls, "reply-1")
