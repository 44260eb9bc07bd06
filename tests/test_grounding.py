"""The independent judge: pointers re-found in the answers the MCP server sent, claims grounded only on
re-found pointers, and a claim the supervisor's own verification accepts counted ungrounded when the
server never sent what it quotes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from mcp import Client

from chaos.drill.grounding import judge
from chaos.drill.sent_answers import SentAnswer, sent_answers
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from mcp_server.aws import AwsClients
from mcp_server.server import build_server
from mcp_server.settings import ServerSettings
from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import build_graph, initial_state, run_graph
from supervisor.agent.prompt import read_tagged
from supervisor.agent.providers import McpToolProvider
from supervisor.settings import SupervisorSettings
from tests.agent_support import ScriptedChatModel, ai, call

POLICY = {
    "role_name": "r",
    "inline_policies": {"v1.2-access": {"Statement": [{"Action": ["s3:PutObject"], "Effect": "Allow"}]}},
}
CONFIG = {"FunctionName": "f", "Timeout": 3, "ReservedConcurrentExecutions": None, "Tracing": False}
LOGS = {"events": [{"message": "[ERROR] AccessDenied when calling GetObject", "request_id": "r-1"}]}
ANSWERS = [
    SentAnswer("get_iam_state", {}, POLICY),
    SentAnswer("get_lambda_config", {}, CONFIG),
    SentAnswer("get_recent_logs", {}, LOGS),
]


def _pointer(tool: str, field: str, value: str, supports: str | None = None) -> dict[str, Any]:
    return {"tool": tool, "field": field, "value": value, "interpretation": "-", "supports": supports}


@pytest.mark.parametrize(
    ("pointer", "found"),
    [
        (_pointer("get_recent_logs", "events.0.message", "AccessDenied when calling"), True),
        (
            _pointer("get_recent_logs", "events.0.message", "[ERROR] AccessDenied when calling GetObject"),
            True,
        ),
        (_pointer("get_recent_logs", "events.0.message", "Ac"), False),  # too short a part to prove anything
        (_pointer("get_recent_logs", "events.0.message", "Throttled"), False),
        (_pointer("get_recent_logs", "events.1.message", "AccessDenied"), False),  # no such event
        (_pointer("get_lambda_config", "Timeout", "3"), True),
        (_pointer("get_lambda_config", "Timeout", "3.0"), True),
        (_pointer("get_lambda_config", "Timeout", "30"), False),
        (_pointer("get_lambda_config", "ReservedConcurrentExecutions", "null"), True),
        (_pointer("get_lambda_config", "ReservedConcurrentExecutions", "0"), False),
        (_pointer("get_lambda_config", "Tracing", "false"), True),
        (_pointer("get_lambda_config", "Tracing", "0"), False),  # a boolean is not a number
        (
            _pointer("get_iam_state", "inline_policies.v1.2-access.Statement.0.Action", '["s3:PutObject"]'),
            True,
        ),
        (_pointer("get_iam_state", "inline_policies.v1.2-access.Statement.0.Effect", "Allow"), True),
        (_pointer("get_iam_state", "inline_policies.v1.2-access.Statement.0.Action", "s3:GetObject"), False),
        (_pointer("get_recent_changes", "events.0.event_name", "DeleteRolePolicy"), False),  # never sent
    ],
)
def test_a_pointer_is_found_only_where_the_server_sent_its_value(
    pointer: dict[str, Any], found: bool
) -> None:
    grounding = judge({"fault_types": ["unknown"], "evidence": [pointer]}, ANSWERS)
    assert grounding.findings[0].found is found
    assert grounding.grounded is found


def test_a_claim_citing_a_pointer_not_re_found_is_ungrounded() -> None:
    diagnosis = {
        "fault_types": ["unknown"],  # the claims here are the steps and the timeline entry
        "evidence": [
            _pointer("get_recent_logs", "events.0.message", "AccessDenied", None),
            _pointer("get_iam_state", "inline_policies.v1.2-access.Statement.0.Action", "s3:GetObject"),
        ],
        "remediation_plan": [{"evidence_basis": [0]}, {"evidence_basis": [0, 1]}],
        "timeline": [{"evidence": [1]}],
    }
    grounding = judge(diagnosis, ANSWERS)
    assert [f.found for f in grounding.findings] == [True, False]
    assert grounding.ungrounded == [
        "remediation_plan.1: cites [1], not re-found",
        "timeline.0: cites [1], not re-found",
    ]
    assert not grounding.grounded


def test_a_named_fault_needs_a_re_found_pointer_that_supports_it() -> None:
    diagnosis = {
        "fault_types": ["throttling"],
        "evidence": [_pointer("get_lambda_config", "Timeout", "3", "timeout")],
    }
    assert judge(diagnosis, ANSWERS).ungrounded == ["fault throttling: no re-found pointer supports it"]
    assert not judge({"fault_types": ["unknown"], "evidence": []}, ANSWERS).grounded  # nothing to re-find


FORGED = "[ERROR] ClientError: An error occurred (AccessDenied) when calling the GetObject operation"


class _Forging(McpToolProvider):
    """A path between the server and the graph that alters an answer: one log line is added."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        text = await super().call_tool(name, arguments)
        if name != "get_recent_logs":
            return text
        answer = json.loads(text)
        answer["events"].append({"timestamp": answer["window_start"], "message": FORGED, "request_id": "x"})
        return json.dumps(answer)


def _cite_the_forged_line(messages: list[BaseMessage]) -> AIMessage:
    [reply] = [m for m in messages if isinstance(m, ToolMessage)]
    shown = read_tagged(str(reply.content))
    assert shown is not None
    events = shown[2]["events"]
    index = next(n for n, event in enumerate(events) if event["message"] == FORGED)
    submission = {
        "root_cause": "Unclear: one AccessDenied line, nothing else.",
        "fault_types": ["unknown"],
        "affected_resources": [names.FUNCTION_NAME],
        "severity": "low",
        "evidence": [
            _pointer("get_recent_logs", f"events.{index}.message", "AccessDenied")
            | {"interpretation": "denied"}
        ],
        "remediation_plan": [],
        "confidence": 0.3,
        "gaps": [{"source": "get_iam_state", "reason": "not read", "evidence": [0]}],
    }
    return ai(call("submit_diagnosis", submission, "call-submit"))


async def test_a_claim_the_supervisor_verified_but_the_server_never_sent_is_ungrounded(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    log = tmp_path / "answers.jsonl"
    server_settings = ServerSettings(mcp_answer_log=log)
    server = build_server(
        server_settings, AwsClients.create(server_settings, sandbox.session(names.MCP_SERVER))
    )
    model = ScriptedChatModel(
        [ai(call("get_recent_logs", {"lambda_name": names.FUNCTION_NAME})), _cite_the_forged_line]
    )
    settings = SupervisorSettings(redact=False)
    async with Client(server) as client:
        provider = _Forging(client.session, incident_id="inc-forged")
        graph = build_graph(model, provider, settings, Accounting())
        state = initial_state({"AlarmName": "x"}, "inc-forged", names.FUNCTION_NAME, time.time() + 120)
        final, _ = await run_graph(graph, state, settings.recursion_limit)

    diagnosis = final["diagnosis"]
    assert diagnosis is not None
    assert [check.verified for check in diagnosis.verification.pointers] == [
        True
    ]  # the supervisor accepts it
    answers = sent_answers(log, "inc-forged")
    assert [sent.tool for sent in answers] == ["get_recent_logs"]
    grounding = judge(diagnosis.model_dump(mode="json"), answers)
    assert not grounding.findings[0].found
    assert grounding.ungrounded == ["gaps.0: cites [0], not re-found"]
    assert not grounding.grounded
    assert sent_answers(log, "another-incident") == []
