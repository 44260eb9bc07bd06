"""Tool calls a model wrote as the text of its reply instead of as calls (small local models often do), read
as calls only when the whole reply is exactly such a call: never guessed out of prose."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection
from typing import Any

from langchain_core.messages import AIMessage, ToolCall

_FENCE = re.compile(r"\A```(?:json)?\s*\n(?P<body>.*?)\n?```\Z", re.DOTALL)
_ARGUMENT_KEYS = ("arguments", "parameters", "args")


def _text(message: AIMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(
        block.get("text", "") if isinstance(block, dict) else str(block) for block in message.content
    )


def _call(written: Any, offered: Collection[str]) -> ToolCall | None:
    """``{"name": <an offered tool>, "arguments": {...}}`` and nothing else, as a call; else None."""
    if not isinstance(written, dict) or len(written) != 2 or written.get("name") not in offered:
        return None
    key = next((key for key in _ARGUMENT_KEYS if key in written), None)
    arguments = written.get(key) if key is not None else None
    if isinstance(arguments, str):  # OpenAI's own format writes the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(
        name=written["name"], args=arguments, id=f"text-{uuid.uuid4().hex[:12]}", type="tool_call"
    )


def calls_in_text(message: AIMessage, offered: Collection[str]) -> list[ToolCall]:
    """The calls ``message`` wrote as its whole text (one JSON call or a list of them, bare or in one ```json
    fence), each naming a tool it was offered; [] when it made calls of its own or the text is anything
    else, including a call inside prose."""
    if message.tool_calls or message.invalid_tool_calls:
        return []
    text = _text(message).strip()
    fenced = _FENCE.match(text)
    try:
        written = json.loads(fenced.group("body") if fenced else text)
    except ValueError:
        return []
    items = written if isinstance(written, list) else [written]
    calls = [_call(item, offered) for item in items]
    if not calls or any(call is None for call in calls):
        return []
    return [call for call in calls if call is not None]


def as_calls(message: AIMessage, calls: list[ToolCall]) -> AIMessage:
    """``message`` with ``calls`` as its tool calls in place of the text that wrote them."""
    return message.model_copy(update={"content": "", "tool_calls": calls})
