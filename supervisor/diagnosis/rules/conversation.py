"""What the rules model reads: the incident and the validated tool results in the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from mcp_server.contract.registry import TOOL_NAMES
from supervisor.agent.prompt import SUBMIT_TOOL, TRUNCATION_MARK, read_tagged


@dataclass
class Conversation:
    function_name: str
    alarm: dict[str, Any]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool -> latest validated response
    attempted: set[str] = field(default_factory=set)
    calls: dict[str, int] = field(default_factory=dict)  # tool -> answers received, failed ones included
    cut: set[str] = field(default_factory=set)  # tools whose latest answer was shown truncated
    refused_submissions: int = 0

    def answer(self, tool: str) -> dict[str, Any]:
        """The tool's answer, or {} when it gave none (or an answer that is only an error)."""
        return self.results.get(tool) or {}

    @property
    def config(self) -> dict[str, Any]:
        return self.answer("get_lambda_config")

    @property
    def metrics(self) -> dict[str, Any]:
        return self.answer("get_function_metrics")

    @property
    def logs(self) -> dict[str, Any]:
        return self.answer("get_recent_logs")

    @property
    def iam(self) -> dict[str, Any]:
        iam = self.answer("get_iam_state")
        return {} if iam.get("error") else iam

    @property
    def network(self) -> dict[str, Any]:
        return self.answer("get_network_state")

    @property
    def changes(self) -> dict[str, Any]:
        return self.answer("get_recent_changes")

    @property
    def event_sources(self) -> dict[str, Any]:
        return self.answer("get_event_sources")

    @property
    def alarmed_resource(self) -> str | None:
        """The ARN of the queue or topic whose alarm opened the incident, when the incident names one
        (``Signal.incident``: namespace, dimension, value and arn)."""
        value = self.alarm.get("alarmed_resource")
        arn = value.get("arn") if isinstance(value, dict) else None
        return arn if isinstance(arn, str) and arn else None

    @property
    def name(self) -> str:
        return str(self.config.get("FunctionName") or self.function_name)

    @property
    def region(self) -> str | None:
        arn = str(self.config.get("FunctionArn") or "").split(":")
        return arn[3] if len(arn) > 4 else None

    @property
    def account(self) -> str | None:
        arn = str(self.config.get("FunctionArn") or "").split(":")
        return arn[4] if len(arn) > 4 else None

    @property
    def role(self) -> str | None:
        return self.iam.get("role_name") or (str(self.config.get("Role", "")).rsplit("/", 1)[-1] or None)


def read(messages: Sequence[BaseMessage]) -> Conversation:
    conversation = Conversation(function_name="", alarm={})
    for message in messages:
        if isinstance(message, HumanMessage) and not conversation.function_name:
            tagged = read_tagged(str(message.content))
            if tagged and tagged[0] == "incident":
                conversation.function_name = str(tagged[2].get("function_name", ""))
                conversation.alarm = tagged[2].get("alarm") or {}
        elif isinstance(message, ToolMessage):
            if message.name == SUBMIT_TOOL and message.status == "error":
                conversation.refused_submissions += 1
            if message.name in TOOL_NAMES:
                conversation.attempted.add(message.name)
                conversation.calls[message.name] = conversation.calls.get(message.name, 0) + 1
                tagged = read_tagged(str(message.content)) if message.status == "success" else None
                if tagged and tagged[0] == "tool_result" and tagged[1] == message.name:
                    truncated = str(message.content).startswith(TRUNCATION_MARK)
                    answer = _whole_items(tagged[2]) if truncated else tagged[2]
                    conversation.results[message.name] = answer if isinstance(answer, dict) else {}
                    (conversation.cut.add if truncated else conversation.cut.discard)(message.name)
    return conversation


def _whole_items(value: Any) -> Any:
    """A salvaged (cut) answer without the partial entries the cut left: in a list of objects, only the
    objects are kept, so every reader can take each entry as the object the contract says it is."""
    if isinstance(value, dict):
        return {key: _whole_items(item) for key, item in value.items()}
    if isinstance(value, list) and any(isinstance(item, dict) for item in value):
        return [_whole_items(item) for item in value if isinstance(item, dict)]
    return value


def instant(value: Any) -> datetime | None:
    """An ISO-8601 time as an aware datetime, None when it is missing or unreadable."""
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def incident_minutes(c: Conversation) -> int | None:
    """Minutes from the minute before the first failing one to the end of the metrics' window: a log
    window that holds this incident and little else. None when the metrics show no failure."""
    metrics = c.metrics
    first = instant(metrics.get("first_error_minute") or metrics.get("first_throttle_minute"))
    end = instant(metrics.get("window_end"))
    if first is None or end is None:
        return None
    return max(1, min(1440, int((end - first).total_seconds() // 60) + 2))
