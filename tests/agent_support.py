"""Scripted chat models and canned tool responses for testing the supervisor graph without a network."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import PrivateAttr

from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import AgentState, build_graph, initial_state, run_graph
from supervisor.agent.providers import MockToolProvider
from supervisor.settings import SupervisorSettings

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
THROTTLED_MINUTE = "2026-11-21T10:00:00+00:00"
METRICS = {  # what the Lambda service measured while reserved concurrency 0 refused every request
    "function_name": FUNCTION,
    "window_start": "2026-11-21T09:01:00+00:00",
    "window_end": "2026-11-21T10:01:00+00:00",
    "minutes": [{"timestamp": THROTTLED_MINUTE, "invocations": 0.0, "errors": 0.0, "throttles": 4.0}],
    "minutes_with_data": 1,
    "invocations": 0.0,  # the contract's figures are floats (CloudWatch sums): quoted as "4.0", not "4"
    "errors": 0.0,
    "throttles": 4.0,
    "first_throttle_minute": THROTTLED_MINUTE,
    "timeout_seconds": 3,
    "memory_size_mb": 128,
    "log_group": f"/aws/lambda/{FUNCTION}",
    "report_lines": 0,
}
OPERATOR = "arn:aws:iam::123456789012:user/operator"
CHANGE_TIME = "2026-11-21T09:59:30+00:00"
CHANGES: dict[str, Any] = {  # the change that set the limit, as CloudTrail recorded it
    "function_name": FUNCTION,
    "window_start": "2026-11-20T10:01:00+00:00",
    "window_end": "2026-11-21T10:01:00+00:00",
    "searched": [f"function {FUNCTION}", "role data-processor-role"],
    "matched_events": 1,
    "returned_events": 1,
    "events": [
        {
            "event_id": "evt-1",
            "time": CHANGE_TIME,
            "event_name": "PutFunctionConcurrency20171031",
            "service": "lambda.amazonaws.com",
            "identity_arn": OPERATOR,
            "identity_type": "IAMUser",
            "matched": [f"function {FUNCTION}"],
            "summary": {"functionName": FUNCTION, "reservedConcurrentExecutions": 0},
        }
    ],
    "note": "CloudTrail delivers events minutes after the call: the newest changes may be missing.",
}
POLICY_DELETED = "2026-11-21T09:40:00+00:00"
POLICY_RESTORED = "2026-11-21T09:45:00+00:00"


def _role_event(event_id: str, time: str, event_name: str) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "time": time,
        "event_name": event_name,
        "service": "iam.amazonaws.com",
        "identity_arn": OPERATOR,
        "identity_type": "IAMUser",
        "matched": ["role data-processor-role"],
        "summary": {"roleName": "data-processor-role", "policyName": "data-processor-access"},
    }


UNDONE_CHANGES = CHANGES | {  # the same, after a fault undone: the role's policy deleted, then put back
    "matched_events": 3,
    "returned_events": 3,
    "events": [
        *CHANGES["events"],  # events.0: the concurrency change, as in CHANGES
        _role_event("evt-3", POLICY_RESTORED, "PutRolePolicy"),  # events.1
        _role_event("evt-2", POLICY_DELETED, "DeleteRolePolicy"),  # events.2
    ],
}
RESPONSES = {  # one canned answer per tool, each valid under its tool declaration's response model
    "get_recent_logs": json.dumps(LOGS),
    "get_iam_state": json.dumps(IAM),
    "get_lambda_config": json.dumps(CONFIG),
    "get_network_state": json.dumps(NETWORK),
    "get_recent_changes": json.dumps(CHANGES),
    "get_function_metrics": json.dumps(METRICS),
    "get_event_sources": json.dumps(  # invoked directly only: no mapping, subscription or caller
        {
            "function_name": FUNCTION,
            "function_arn": f"arn:aws:lambda:ca-central-1:123456789012:function:{FUNCTION}",
            "timeout_seconds": 3,
            "window_start": "2026-11-21T09:05:00+00:00",
            "window_end": "2026-11-21T10:05:00+00:00",
            "async_config": {
                "configured": False,
                "MaximumRetryAttempts": 2,
                "MaximumEventAgeInSeconds": 21600,
            },
        }
    ),
}
COMMAND = f"aws lambda delete-function-concurrency --function-name {FUNCTION}"


def pointer(tool: str, field: str, value: str, supports: str | None = "throttling") -> dict[str, Any]:
    return {"tool": tool, "field": field, "value": value, "interpretation": "seen", "supports": supports}


LIMIT = pointer("get_lambda_config", "ReservedConcurrentExecutions", "0")  # the limit ...
THROTTLES = pointer("get_function_metrics", "throttles", "4.0")  # ... and the throttles it caused


def submission(**overrides: Any) -> dict[str, Any]:
    """A submit_diagnosis payload whose evidence holds against RESPONSES: throttling, corroborated as the
    policy asks (the metrics' throttles and the configured limit), with a command that parses. It needs
    get_lambda_config and get_function_metrics to have been called."""
    payload: dict[str, Any] = {
        "root_cause": "Reserved concurrency 0 throttles every invocation.",
        "fault_types": ["throttling"],
        "affected_resources": [FUNCTION],
        "severity": "critical",
        "evidence": [
            LIMIT | {"interpretation": "No invocation can run."},
            THROTTLES | {"interpretation": "Every request was refused."},
        ],
        "remediation_plan": [
            {
                "action": "Remove the reserved concurrency",
                "details": "DeleteFunctionConcurrency on data-processor.",
                "evidence_basis": [0, 1],
                "risk_level": "low",
                "requires_approval": True,
                "command": COMMAND,
            }
        ],
        "confidence": 0.9,
    }
    payload.update(overrides)
    return payload


def with_resolved(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with a resolved permission_loss that holds against UNDONE_CHANGES: three pointers
    appended to its evidence (the DeleteRolePolicy event that caused it, the PutRolePolicy event that
    undid it, no error in the metrics since) and one ``resolved`` entry citing them."""
    first = len(payload["evidence"])
    evidence = [
        pointer("get_recent_changes", "events.2.event_name", "DeleteRolePolicy", None),
        pointer("get_recent_changes", "events.1.event_name", "PutRolePolicy", None),
        pointer("get_function_metrics", "errors", "0.0", None),
    ]
    resolved = {
        "fault_type": "permission_loss",
        "reason": "The inline policy deleted was put back; no invocation failed since.",
        "caused_by": {"event_name": "DeleteRolePolicy", "time": POLICY_DELETED, "evidence": [first]},
        "undone_by": {"event_name": "PutRolePolicy", "time": POLICY_RESTORED, "evidence": [first + 1]},
        "evidence": [first + 2],
    }
    return payload | {"evidence": [*payload["evidence"], *evidence], "resolved": [resolved]}


@dataclass
class GraphRun:
    """One run of the real graph: its final state, why it stopped, its accounting and the provider."""

    state: AgentState
    stop_reason: str
    accounting: Accounting
    provider: MockToolProvider

    def replies(self, name: str | None = None) -> list[ToolMessage]:
        return [
            m
            for m in self.state["messages"]
            if isinstance(m, ToolMessage) and (name is None or m.name == name)
        ]


async def diagnose_with(
    model: BaseChatModel,
    responses: Mapping[str, str],
    *,
    incident: Mapping[str, Any] | None = None,
    **settings: Any,
) -> GraphRun:
    """Run the graph with ``model`` (scripted, the rules model, ...) against canned tool responses; the
    incident is an errors alarm on the function unless ``incident`` says otherwise."""
    config = SupervisorSettings(**settings)
    accounting = Accounting()
    provider = MockToolProvider(responses)
    graph = build_graph(model, provider, config, accounting)
    alarm = dict(incident) if incident is not None else {"AlarmName": f"{FUNCTION}-errors"}
    state = initial_state(alarm, "inc-1", FUNCTION, time.time() + 300)
    final, stop_reason = await run_graph(graph, state, config.recursion_limit)
    return GraphRun(final, stop_reason, accounting, provider)
