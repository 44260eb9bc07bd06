"""Scripted chat models and canned tool responses for testing the supervisor graph without a network."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import PrivateAttr

FUNCTION = "data-processor"
Step = AIMessage | Callable[[list[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """Answers with the scripted messages in order (a step may compute its reply from the conversation).
    ``bind_tools`` returns the model itself and records what was bound."""

    _script: list[Step] = PrivateAttr(default_factory=list)
    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - pydantic copies the default per instance
    bound: list[tuple[tuple[str, ...], str | None]] = []  # noqa: RUF012

    def __init__(self, script: Sequence[Step], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._script = list(script)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        self.bound.append((tuple(t["function"]["name"] for t in tools), tool_choice))
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        if not self._script:
            raise AssertionError("the script ran out: the graph asked for more turns than expected")
        step = self._script.pop(0)
        message = step(messages) if callable(step) else step
        return ChatResult(generations=[ChatGeneration(message=message)])


def call(name: str, args: dict[str, Any] | None = None, call_id: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "args": {"lambda_name": FUNCTION} if args is None else args,
        "id": call_id or f"call-{name}",
        "type": "tool_call",
    }


def ai(*calls: dict[str, Any], tokens: int = 0, text: str = "") -> AIMessage:
    usage = {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens} if tokens else None
    return AIMessage(content=text, tool_calls=list(calls), usage_metadata=usage)


LOGS = {
    "log_group": f"/aws/lambda/{FUNCTION}",
    "events": [
        {"timestamp": "2026-11-21T10:00:00+00:00", "message": "START RequestId: 1"},
        {
            "timestamp": "2026-11-21T10:00:01+00:00",
            "message": "[ERROR] ClientError: An error occurred (AccessDenied) when calling the GetObject "
            "operation: Access Denied",
        },
    ],
    "matched_events": 2,
    "returned_events": 2,
}
IAM = {
    "role_name": "data-processor-role",
    "inline_policies": {},
    "attached_policies": [
        {
            "policy_name": "data-processor-logs",
            "policy_arn": "arn:aws:iam::123456789012:policy/data-processor-logs",
            "document": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                        "Resource": "*",
                    }
                ],
            },
        }
    ],
}
CONFIG = {"FunctionName": FUNCTION, "Runtime": "python3.12", "Timeout": 3, "ReservedConcurrentExecutions": 0}
NETWORK = {"function_name": FUNCTION, "in_vpc": False, "note": "not in a VPC"}
RESPONSES = {
    "get_recent_logs": json.dumps(LOGS),
    "get_iam_state": json.dumps(IAM),
    "get_lambda_config": json.dumps(CONFIG),
    "get_network_state": json.dumps(NETWORK),
}


def submission(**overrides: Any) -> dict[str, Any]:
    """A submit_diagnosis payload whose evidence holds against RESPONSES."""
    payload: dict[str, Any] = {
        "root_cause": "Reserved concurrency 0 throttles every invocation.",
        "fault_types": ["throttling"],
        "affected_resources": [FUNCTION],
        "severity": "critical",
        "evidence": [
            {
                "tool": "get_lambda_config",
                "field": "ReservedConcurrentExecutions",
                "value": "0",
                "interpretation": "No invocation can run.",
                "supports": "throttling",
            }
        ],
        "remediation_plan": [
            {
                "action": "Remove the reserved concurrency",
                "details": "DeleteFunctionConcurrency on data-processor.",
                "evidence_basis": [0],
                "risk_level": "low",
                "requires_approval": True,
            }
        ],
        "confidence": 0.9,
    }
    payload.update(overrides)
    return payload


def pointer(tool: str, field: str, value: str, supports: str | None = "throttling") -> dict[str, Any]:
    return {"tool": tool, "field": field, "value": value, "interpretation": "seen", "supports": supports}
