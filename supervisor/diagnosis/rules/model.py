"""The ``rules`` model: an offline, deterministic diagnostician that runs the same graph as an LLM.

It reads only the conversation (the incident and the tool results), picks tools as the system prompt's
guidance says, and builds its diagnosis solely from tool results, citing each claim by the path and the
value it read. A log line alone never makes a fault: what the logs suggest must be confirmed by the
configuration (the role really lacks the action, the concurrency really is 0, egress really is blocked),
so text planted in logs cannot steer it. With no confirmed fault it answers ``unknown``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from mcp_server.contract import TOOL_NAMES
from supervisor.agent.prompt import SUBMIT_TOOL, read_tagged
from supervisor.schemas import FaultType, Severity

LOG_WRITE_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")
_DENIED = re.compile(r"\((AccessDenied\w*)\) when calling the (\w+) operation")
_NOT_AUTHORIZED = re.compile(r"not authorized to perform: ([\w-]+:[\w*]+)")
_SEVERITY_ORDER: tuple[Severity, ...] = ("low", "medium", "high", "critical")


@dataclass
class _Pointer:
    tool: str
    field: str
    value: Any
    interpretation: str
    supports: FaultType | None

    def as_dict(self) -> dict[str, Any]:
        value = self.value if isinstance(self.value, str) else json.dumps(self.value, separators=(",", ":"))
        return {
            "tool": self.tool,
            "field": self.field,
            "value": value,
            "interpretation": self.interpretation,
            "supports": self.supports,
        }


@dataclass
class _Finding:
    fault: FaultType
    cause: str
    severity: Severity
    pointers: list[_Pointer]
    action: str
    details: str
    risk: str = "medium"


@dataclass
class _Conversation:
    function_name: str
    alarm: dict[str, Any]
    results: dict[str, Any] = field(default_factory=dict)  # tool -> latest validated response
    attempted: set[str] = field(default_factory=set)
    refused_submissions: int = 0


def _read(messages: Sequence[BaseMessage]) -> _Conversation:
    conversation = _Conversation(function_name="", alarm={})
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
                tagged = read_tagged(str(message.content)) if message.status == "success" else None
                if tagged and tagged[0] == "tool_result" and tagged[1] == message.name:
                    conversation.results[message.name] = tagged[2]
    return conversation


def _tool_order(alarm: dict[str, Any]) -> list[str]:
    """The system prompt's guidance: throttles -> config first; access errors -> IAM first; else logs."""
    text = json.dumps(alarm).lower()
    if "throttl" in text:
        first = ["get_lambda_config", "get_recent_logs"]
    elif "accessdenied" in text or "access denied" in text:
        first = ["get_iam_state", "get_recent_logs"]
    elif "timed out" in text or "timeout" in text:
        first = ["get_network_state", "get_lambda_config"]
    else:
        first = ["get_recent_logs"]
    return first + [tool for tool in TOOL_NAMES if tool not in first]


# --------------------------------------------------------------------------- IAM reading


@dataclass
class _Statement:
    path: str  # dotted path of the statement in the get_iam_state response
    effect: str
    actions: list[str]


def _statements(iam: dict[str, Any]) -> Iterator[_Statement]:
    documents = [(f"inline_policies.{name}", doc) for name, doc in iam.get("inline_policies", {}).items()]
    documents += [
        (f"attached_policies.{i}.document", policy.get("document") or {})
        for i, policy in enumerate(iam.get("attached_policies", []))
    ]
    for path, document in documents:
        statements = document.get("Statement", [])
        listed = statements if isinstance(statements, list) else [statements]
        for j, statement in enumerate(listed):
            if not isinstance(statement, dict) or "Action" not in statement:
                continue
            actions = statement["Action"]
            where = f"{path}.Statement.{j}" if isinstance(statements, list) else f"{path}.Statement"
            listed_actions = [actions] if isinstance(actions, str) else [str(a) for a in actions]
            yield _Statement(where, str(statement.get("Effect", "")), listed_actions)


def _covers(pattern: str, action: str) -> bool:
    """Whether an IAM action pattern covers ``action``; an action of '*:Op' means Op of any service."""
    pattern, action = pattern.lower(), action.lower()
    if action.startswith("*:"):
        return pattern == "*" or fnmatchcase(action[2:], pattern.split(":", 1)[-1])
    return fnmatchcase(action, pattern)


def _granted(iam: dict[str, Any], action: str) -> tuple[bool, _Statement | None]:
    """(allowed, the Deny statement that blocks it if any)."""
    allowed = False
    for statement in _statements(iam):
        if any(_covers(pattern, action) for pattern in statement.actions):
            if statement.effect == "Deny":
                return False, statement
            allowed = allowed or statement.effect == "Allow"
    return allowed, None


def _role_pointers(iam: dict[str, Any], missing: str, fault: FaultType) -> list[_Pointer]:
    """What the role does grant, quoted statement by statement: the evidence that ``missing`` is not there."""
    pointers = [
        _Pointer(
            "get_iam_state",
            f"{s.path}.Action",
            s.actions[0] if len(s.actions) == 1 else s.actions,
            f"{s.effect}s {', '.join(s.actions)}; nothing here grants {missing}",
            fault,
        )
        for s in _statements(iam)
    ][:4]
    if not iam.get("inline_policies"):
        pointers.append(
            _Pointer("get_iam_state", "inline_policies", {}, "The role has no inline policy", fault)
        )
    if not iam.get("attached_policies"):
        pointers.append(
            _Pointer("get_iam_state", "attached_policies", [], "The role has no attached policy", fault)
        )
    return pointers


# --------------------------------------------------------------------------- the checks


def _log_permission(c: _Conversation) -> list[_Finding]:
    iam = c.results.get("get_iam_state")
    if not iam or iam.get("error"):
        return []
    lacking = [action for action in LOG_WRITE_ACTIONS if not _granted(iam, action)[0]]
    if not lacking:
        return []
    role = iam.get("role_name", "the execution role")
    pointers = _role_pointers(iam, " / ".join(lacking), "permission_loss")
    logs = c.results.get("get_recent_logs")
    if logs and logs.get("note"):
        pointers.append(
            _Pointer("get_recent_logs", "note", logs["note"], "Consistent: no logs arrive", "permission_loss")
        )
    return [
        _Finding(
            "permission_loss",
            f"The execution role {role} no longer grants {', '.join(lacking)}, so the function cannot write "
            "its logs (CloudWatch Logs permission lost).",
            "high",
            pointers,
            f"Restore CloudWatch Logs permissions on {role}",
            f"Attach a policy to {role} allowing logs:CreateLogGroup, logs:CreateLogStream and "
            "logs:PutLogEvents (as AWSLambdaBasicExecutionRole does).",
            "low",
        )
    ]


def _denied_actions(logs: dict[str, Any]) -> Iterator[tuple[int, str, str]]:
    """(event index, action, quoted part of the line) of each access-denied error in the logs."""
    for index, event in enumerate(logs.get("events", [])):
        message = str(event.get("message", ""))
        if match := _NOT_AUTHORIZED.search(message):
            yield index, match[1], match[0]
        elif match := _DENIED.search(message):
            yield index, f"*:{match[2]}", match[0]


def _denied_in_logs(c: _Conversation) -> list[_Finding]:
    logs, iam = c.results.get("get_recent_logs"), c.results.get("get_iam_state")
    if not logs or not iam or iam.get("error"):
        return []
    findings: dict[str, _Finding] = {}
    role = iam.get("role_name", "the execution role")
    for index, action, quote in _denied_actions(logs):
        granted, deny = _granted(iam, action)
        if granted or action in findings:
            continue  # the role allows it now: the line is stale, or planted
        shown = f"the {action[2:]} operation" if action.startswith("*:") else action
        log_pointer = _Pointer(
            "get_recent_logs",
            f"events.{index}.message",
            quote,
            f"The function is denied {shown}",
            "permission_loss",
        )
        if deny is not None:
            role_pointers = [
                _Pointer(
                    "get_iam_state",
                    f"{deny.path}.Effect",
                    "Deny",
                    f"A statement denies {shown}",
                    "permission_loss",
                )
            ]
        else:
            role_pointers = _role_pointers(iam, shown, "permission_loss")
        findings[action] = _Finding(
            "permission_loss",
            f"The execution role {role} does not allow {shown}, which the function calls: its invocations "
            "fail with AccessDenied (IAM permission lost).",
            "high",
            [log_pointer, *role_pointers],
            f"Restore {shown} on {role}",
            f"Grant {shown} on the resource the function reads (restore the removed policy statement).",
        )
    return list(findings.values())


def _throttling(c: _Conversation) -> list[_Finding]:
    config = c.results.get("get_lambda_config")
    reserved = config.get("ReservedConcurrentExecutions") if config else None
    if reserved is None or reserved > 1:
        return []
    name = config.get("FunctionName", c.function_name) if config else c.function_name
    pointer = _Pointer(
        "get_lambda_config",
        "ReservedConcurrentExecutions",
        reserved,
        "Reserved concurrency 0: every invocation is throttled"
        if reserved == 0
        else "Reserved concurrency 1: any concurrent invocation is throttled",
        "throttling",
    )
    return [
        _Finding(
            "throttling",
            f"The reserved concurrency of {name} is {reserved}, so "
            + (
                "every invocation is throttled." if reserved == 0 else "concurrent invocations are throttled."
            ),
            "critical" if reserved == 0 else "high",
            [pointer],
            f"Raise or remove the reserved concurrency of {name}",
            f"Delete the function's reserved concurrency (or set it to the expected peak) on {name}.",
            "low",
        )
    ]


def _network(c: _Conversation) -> list[_Finding]:
    network = c.results.get("get_network_state")
    if not network or network.get("https_egress_allowed") is not False:
        return []
    pointers = [
        _Pointer(
            "get_network_state",
            "https_egress_allowed",
            False,
            "No HTTPS egress: calls to AWS APIs hang until the function times out",
            "network_block",
        )
    ]
    groups = network.get("security_groups", [])
    for i, group in enumerate(groups):
        pointers.append(
            _Pointer(
                "get_network_state",
                f"security_groups.{i}.egress",
                group.get("egress", []),
                f"Egress rules of {group.get('group_id')}",
                "network_block",
            )
        )
    logs = c.results.get("get_recent_logs") or {}
    timeouts = [i for i, e in enumerate(logs.get("events", [])) if "Task timed out" in str(e.get("message"))]
    if timeouts:
        pointers.append(
            _Pointer(
                "get_recent_logs",
                f"events.{timeouts[-1]}.message",
                "Task timed out",
                "Invocations time out, as blocked egress makes them",
                "network_block",
            )
        )
    group_ids = ", ".join(str(g.get("group_id")) for g in groups) or "the function's security groups"
    return [
        _Finding(
            "network_block",
            f"The function's VPC networking blocks HTTPS egress ({group_ids}), so its AWS calls time out.",
            "high",
            pointers,
            f"Restore HTTPS egress on {group_ids}",
            "Add an egress rule allowing TCP 443 (to 0.0.0.0/0 or the needed VPC endpoints) and check the "
            "subnets' network ACLs allow the traffic and its replies.",
        )
    ]


CHECKS: tuple[Callable[[_Conversation], list[_Finding]], ...] = (
    _denied_in_logs,
    _log_permission,
    _throttling,
    _network,
)


def _context(c: _Conversation) -> list[_Pointer]:
    """What was looked at and found healthy: cited when there is no fault to report."""
    pointers = []
    if config := c.results.get("get_lambda_config"):
        pointers.append(
            _Pointer(
                "get_lambda_config",
                "ReservedConcurrentExecutions",
                config.get("ReservedConcurrentExecutions"),
                "No throttling limit",
                None,
            )
        )
    if (network := c.results.get("get_network_state")) and network.get("https_egress_allowed") is not None:
        pointers.append(
            _Pointer(
                "get_network_state",
                "https_egress_allowed",
                network["https_egress_allowed"],
                "Egress is open",
                None,
            )
        )
    return pointers


def diagnose(c: _Conversation) -> dict[str, Any]:
    """The submit_diagnosis arguments the evidence in the conversation supports."""
    findings = [finding for check in CHECKS for finding in check(c)]
    evidence: list[dict[str, Any]] = []
    steps = []
    for finding in findings:
        first = len(evidence)
        evidence += [pointer.as_dict() for pointer in finding.pointers]
        steps.append(
            {
                "action": finding.action,
                "details": finding.details,
                "evidence_basis": list(range(first, len(evidence))),
                "risk_level": finding.risk,
                "requires_approval": True,
            }
        )
    if not findings:
        tried = ", ".join(sorted(c.results)) or "no tool answered"
        return {
            "root_cause": f"No fault found in the evidence gathered ({tried}); the cause is unknown.",
            "fault_types": ["unknown"],
            "affected_resources": [c.function_name],
            "severity": "low",
            "evidence": [pointer.as_dict() for pointer in _context(c)],
            "remediation_plan": [],
            "confidence": 0.2,
        }
    role = (c.results.get("get_iam_state") or {}).get("role_name")
    return {
        "root_cause": " ".join(finding.cause for finding in findings),
        "fault_types": list(dict.fromkeys(finding.fault for finding in findings)),
        "affected_resources": [r for r in (c.function_name, role) if r],
        "severity": max((f.severity for f in findings), key=_SEVERITY_ORDER.index),
        "evidence": evidence,
        "remediation_plan": steps,
        "confidence": 0.9,
    }


class RulesChatModel(BaseChatModel):
    """A deterministic chat model: tools as the guidance says, then a diagnosis built from their results."""

    offered: tuple[str, ...] = (*TOOL_NAMES, SUBMIT_TOOL)

    @property
    def _llm_type(self) -> str:
        return "incident-response-rules"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        names = tuple(spec["function"]["name"] for spec in tools if isinstance(spec, dict))
        return self.model_copy(update={"offered": names})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        conversation = _read(messages)
        turn = sum(isinstance(m, AIMessage) for m in messages) + 1
        pending = [tool for tool in _tool_order(conversation.alarm) if tool not in conversation.attempted]
        submit_now = self.offered == (SUBMIT_TOOL,) or not pending or conversation.refused_submissions
        if submit_now:
            calls = [(SUBMIT_TOOL, diagnose(conversation))]
            text = "Submitting the diagnosis the tool results support."
        else:
            batch = pending[:1] if not conversation.attempted else pending
            calls = [(tool, {"lambda_name": conversation.function_name}) for tool in batch]
            text = f"Checking {', '.join(batch)}."
        message = AIMessage(
            content=text,
            tool_calls=[
                {"name": name, "args": args, "id": f"rules-{turn}-{i}", "type": "tool_call"}
                for i, (name, args) in enumerate(calls)
            ],
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
