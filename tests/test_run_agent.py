"""run_agent end to end: Bedrock at the HTTP wire, MCP failures and their categories, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from chaos.bedrock_fake import FakeConverse, PromptCache, aws_error, text_reply, tool_use
from chaos.faults.throttle import THROTTLE
from chaos.loopback import BlackHole, free_port
from chaos.sandbox import names
from chaos.sandbox.sandbox import Sandbox
from chaos.workload.runtime import LocalLambdaRuntime
from mcp_server.contract.registry import TOOL_NAMES
from supervisor.agent.models import build_model
from supervisor.agent.prices import price_of
from supervisor.agent.prompt import SUBMIT_TOOL, SYSTEM_PROMPT, read_tagged
from supervisor.agent.run import run_agent
from supervisor.diagnosis.precedents import HISTORY_TOOL
from supervisor.schemas import AgentError, TokenUsage
from supervisor.settings import SupervisorSettings
from tests.conftest import Inject, serving_converse

MODEL = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
FAST_RETRY: dict[str, Any] = {"backoff_base": 0.1, "bedrock_max_attempts": 1}


def _submission() -> dict[str, Any]:
    return {
        "root_cause": "No fault is visible in the function configuration.",
        "fault_types": ["unknown"],
        "affected_resources": [names.FUNCTION_NAME],
        "severity": "low",
        "evidence": [
            {
                "tool": "get_lambda_config",
                "field": "ReservedConcurrentExecutions",
                "value": "null",
                "interpretation": "No concurrency limit.",
                "supports": None,
            }
        ],
        "remediation_plan": [],
        "confidence": 0.3,
    }


async def _run(sandbox: Sandbox, mcp_url: str, **settings: Any) -> Any:
    config = SupervisorSettings(mcp_server_url=f"{mcp_url}/sse", supervisor_model=MODEL, **settings)
    return await run_agent(
        {"AlarmName": "data-processor-errors"},
        "inc-bedrock",
        names.FUNCTION_NAME,
        settings=config,
        api_key=sandbox.world.mcp_api_key,
        model=build_model(MODEL, config),
    )


async def test_a_bedrock_model_drives_a_full_diagnosis(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    bedrock.script += [
        tool_use("get_lambda_config", {"lambda_name": names.FUNCTION_NAME}, "use-1", tokens=900),
        tool_use("submit_diagnosis", _submission(), "use-2", tokens=1200),
    ]
    result = await _run(sandbox, mcp_server_url)
    assert result.diagnosis is not None
    assert result.diagnosis.verification.passed
    # The function's history, read by the graph before the model's first turn, then what the model asked.
    assert [r.tool for r in result.tool_calls] == [HISTORY_TOOL, "get_lambda_config", "submit_diagnosis"]
    first, second = bedrock.requests
    assert first["model"] == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    # The system prompt, then a cache point: the tool specifications and the system prompt are cached.
    assert first["system"] == [{"text": SYSTEM_PROMPT}, {"cachePoint": {"type": "default"}}]
    assert "cachePoint" not in json.dumps([first["messages"], first["toolConfig"], second["messages"]])
    # Each turn recorded as Bedrock billed it (replayed here on a cache of the fake's own): the two turns
    # offer different tools, so each wrote its own prefix and read none.
    billed = [PromptCache().usage(request["model"], request) for request in (first, second)]
    assert [(u.cache_read_tokens, u.cache_write_tokens) for u in result.token_usage] == [
        (0, usage["cacheWriteInputTokens"]) for usage in billed if usage is not None
    ]
    assert all(u.cache_write_tokens > 1024 for u in result.token_usage)
    assert [u.total_tokens - u.completion_tokens for u in result.token_usage] == [
        sum(usage.values()) for usage in billed if usage is not None
    ]
    diagnostic = {
        "get_recent_logs",
        "get_iam_state",
        "get_lambda_config",
        "get_network_state",
        "get_recent_changes",
        "get_function_metrics",
        "get_event_sources",
    }
    # Nothing can be submitted before a tool has answered: the first turn is offered the seven tools only.
    assert {t["toolSpec"]["name"] for t in first["toolConfig"]["tools"]} == diagnostic
    assert {t["toolSpec"]["name"] for t in second["toolConfig"]["tools"]} == diagnostic | {"submit_diagnosis"}
    result_block = second["messages"][-1]["content"][0]["toolResult"]
    assert result_block["toolUseId"] == "use-1"
    assert result_block["content"][0]["text"].startswith(
        '<tool_result tool="get_lambda_config" trust="data">'
    )


async def test_the_next_investigation_reads_the_cached_prefix_and_pays_less_for_it(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    for use in ("a", "b"):
        bedrock.script += [
            tool_use("get_lambda_config", {"lambda_name": names.FUNCTION_NAME}, f"{use}-1"),
            tool_use("submit_diagnosis", _submission(), f"{use}-2"),
        ]
    first = await _run(sandbox, mcp_server_url)
    second = await _run(sandbox, mcp_server_url)

    written = [(0, u.cache_write_tokens) for u in first.token_usage]
    assert [(u.cache_write_tokens, u.cache_read_tokens) for u in second.token_usage] == written
    sonnet = price_of(MODEL, {})
    assert sonnet is not None

    def billed(usage: list[TokenUsage]) -> float:
        return sum(sonnet.cost_of(u) for u in usage)

    def listed(usage: list[TokenUsage]) -> float:  # every input token at the input price
        return sum(sonnet.cost(u.prompt_tokens, u.completion_tokens) for u in usage)

    assert billed(first.token_usage) > listed(first.token_usage)  # writing the prefix costs a quarter more
    assert billed(second.token_usage) < listed(second.token_usage)  # reading it, a tenth
    assert billed(second.token_usage) < billed(first.token_usage)


async def test_a_call_written_as_the_reply_s_text_is_run_and_counted(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    written = {"name": "get_lambda_config", "arguments": {"lambda_name": names.FUNCTION_NAME}}
    bedrock.script += [
        text_reply(f"```json\n{json.dumps(written)}\n```"),
        tool_use("submit_diagnosis", _submission(), "use-2"),
    ]
    result = await _run(sandbox, mcp_server_url)
    assert [(r.tool, r.status) for r in result.tool_calls] == [
        (HISTORY_TOOL, "ok"),
        ("get_lambda_config", "ok"),
        ("submit_diagnosis", "ok"),
    ]
    assert [(c.tool_calls, c.calls_from_text) for c in result.llm_calls] == [
        (["get_lambda_config"], 1),
        (["submit_diagnosis"], 0),
    ]
    assert result.diagnosis is not None
    # The model is shown its text as the call it was read as, and the answer to it.
    [reply, answer] = bedrock.requests[1]["messages"][1:3]
    [use] = [block["toolUse"] for block in reply["content"] if "toolUse" in block]
    assert (use["name"], use["input"]) == ("get_lambda_config", written["arguments"])
    assert answer["content"][0]["toolResult"]["toolUseId"] == use["toolUseId"]


async def test_throttling_is_retried_as_bedrock_transient(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    bedrock.script += [
        aws_error(429, "ThrottlingException", "Rate exceeded"),
        tool_use("get_lambda_config", {"lambda_name": names.FUNCTION_NAME}, "use-1"),
        tool_use("submit_diagnosis", _submission(), "use-2"),
    ]
    result = await _run(sandbox, mcp_server_url, **FAST_RETRY)
    assert result.diagnosis is not None
    assert [e.category for e in result.failed_attempts] == ["bedrock_transient"]
    assert "ThrottlingException" in result.failed_attempts[0].message
    assert len(bedrock.requests) == 3


async def test_access_denied_is_bedrock_auth_and_not_retried(
    sandbox: Sandbox, mcp_server_url: str, bedrock: FakeConverse
) -> None:
    bedrock.script += [
        aws_error(403, "AccessDeniedException", "not authorized to perform bedrock:InvokeModel"),
        tool_use("submit_diagnosis", _submission(), "never-reached"),
    ]
    with pytest.raises(AgentError) as raised:
        await _run(sandbox, mcp_server_url, **FAST_RETRY)
    assert raised.value.category == "bedrock_auth"
    assert "bedrock:InvokeModel" in raised.value.message
    assert len(bedrock.requests) == 1


Reply = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class ReadingConverse(FakeConverse):
    """A FakeConverse whose later replies are computed from the request they answer: the conversation so far,
    tool results included, so that a scripted model can cite what the real tools returned."""

    computed: list[Reply] = field(default_factory=list)

    async def _converse(self, request: Request) -> Response:
        if not self.script and self.computed:
            self.script.append(self.computed.pop(0)(json.loads(await request.body())))
        return await super()._converse(request)


@pytest.fixture
def reading_bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReadingConverse]:
    """As the conftest's ``bedrock``, with replies that can read the tool results."""
    with serving_converse(ReadingConverse(script=[]), monkeypatch) as fake:
        yield fake


def tool_uses(calls: list[tuple[str, dict[str, Any]]], tokens: int = 100) -> dict[str, Any]:
    """A Converse reply in which the model asks for several tools at once."""
    reply = tool_use(*calls[0], "use-0", tokens)
    reply["output"]["message"]["content"] = [{"text": "Checking everything at once."}] + [
        {"toolUse": {"toolUseId": f"use-{n}", "name": name, "input": arguments}}
        for n, (name, arguments) in enumerate(calls)
    ]
    return reply


def tool_results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool results in a Converse request, by tool, as the model read them."""
    found = {}
    for message in body["messages"]:
        for block in message["content"]:
            for part in block.get("toolResult", {}).get("content", []):
                tagged = read_tagged(part.get("text", ""))
                if tagged is not None and tagged[0] == "tool_result" and tagged[1]:
                    found[tagged[1]] = tagged[2]
    return found


def _evidence(tool: str, path: str, value: Any, supports: str | None, what: str) -> dict[str, Any]:
    quoted = value if isinstance(value, str) else json.dumps(value)
    return {"tool": tool, "field": path, "value": quoted, "interpretation": what, "supports": supports}


OPERATOR_ARN = f"arn:aws:iam::{names.ACCOUNT_ID}:user/{names.OPERATOR}"
RESTORE = (
    f"aws lambda delete-function-concurrency --function-name {names.FUNCTION_NAME} "
    f"--region {names.DEFAULT_REGION}"
)


def _throttling_diagnosis(body: dict[str, Any]) -> dict[str, Any]:
    """What a careful model submits after reading the seven results: the values cited as they are."""
    results = tool_results(body)
    assert set(results) == set(TOOL_NAMES), sorted(results)
    changes, metrics = results["get_recent_changes"], results["get_function_metrics"]
    network = results["get_network_state"]
    n, event = next(
        (n, e)
        for n, e in enumerate(changes["events"])
        if e["event_name"].startswith("PutFunctionConcurrency")
    )  # newest first: the change this test made
    minute = metrics["first_throttle_minute"]
    after = max(datetime.fromisoformat(minute), datetime.fromisoformat(event["time"]))
    verdict = ("in_vpc", False) if not network["in_vpc"] else ("https_egress_allowed", True)
    assert network[verdict[0]] == verdict[1], network
    evidence = [
        _evidence(
            "get_lambda_config", "ReservedConcurrentExecutions", 0, "throttling", "No invocation can run"
        ),
        _evidence(
            "get_function_metrics", "throttles", metrics["throttles"], "throttling", "Requests refused"
        ),
        _evidence(
            "get_recent_changes",
            f"events.{n}.event_name",
            event["event_name"],
            "throttling",
            "The limit was set",
        ),
        _evidence("get_recent_changes", f"events.{n}.time", event["time"], None, "When"),
        _evidence("get_recent_changes", f"events.{n}.identity_arn", event["identity_arn"], None, "Who"),
        _evidence(
            "get_function_metrics", "first_throttle_minute", minute, None, "The first throttled minute"
        ),
        _evidence("get_network_state", *verdict, None, "HTTPS can leave"),
    ]
    return {
        "root_cause": f"{event['identity_arn']} set the reserved concurrency of data-processor to 0.",
        "fault_types": ["throttling"],
        "affected_resources": [names.FUNCTION_NAME],
        "severity": "critical",
        "evidence": evidence,
        "remediation_plan": [
            {
                "action": "Remove the reserved concurrency of 0",
                "details": "Delete the function's reserved concurrency.",
                "evidence_basis": [0, 1, 2],
                "risk_level": "low",
                "requires_approval": True,
                "command": RESTORE,
            }
        ],
        "confidence": 0.9,
        "trigger": {
            "event_name": event["event_name"],
            "identity": event["identity_arn"],
            "time": event["time"],
            "evidence": [2, 3, 4],
        },
        "timeline": [
            {
                "time": event["time"],
                "kind": "change",
                "description": "Concurrency set to 0",
                "evidence": [2, 3],
            },
            {
                "time": after.isoformat(),
                "kind": "first_failure",
                "description": f"Throttles in the minute from {minute}, after the change",
                "evidence": [5],
            },
        ],
        "ruled_out": [{"fault_type": "network_block", "reason": "HTTPS egress works", "evidence": [6]}],
    }


async def test_a_bedrock_model_cites_a_real_change_and_real_metrics(
    sandbox: Sandbox,
    mcp_server_url: str,
    reading_bedrock: ReadingConverse,
    runtime: LocalLambdaRuntime,
    inject: Inject,
) -> None:
    sandbox.reset_cloudwatch()  # only this test's throttles
    inject(THROTTLE, concurrency=0)  # as the operator, so CloudTrail records who; restored afterwards
    invocations = [runtime.invoke(names.FUNCTION_NAME, names.input_event()) for _ in range(2)]
    assert [i.status for i in invocations] == ["throttled", "throttled"]
    target = {"lambda_name": names.FUNCTION_NAME}
    reading_bedrock.script.append(tool_uses([(tool, target) for tool in TOOL_NAMES], tokens=900))
    reading_bedrock.computed.append(lambda body: tool_use(SUBMIT_TOOL, _throttling_diagnosis(body), "use-9"))

    result = await _run(sandbox, mcp_server_url)

    recalled, *investigated, submitted = [(r.turn, r.tool, r.status) for r in result.tool_calls]
    assert recalled == (1, HISTORY_TOOL, "ok")  # read by the graph before the model's first turn
    assert sorted(investigated) == sorted((1, tool, "ok") for tool in TOOL_NAMES)  # all seven in turn 1
    assert submitted == (2, SUBMIT_TOOL, "ok")
    diagnosis = result.diagnosis
    assert diagnosis is not None
    assert diagnosis.verification.passed, diagnosis.verification
    assert diagnosis.verification.refinement_turns == 0
    assert diagnosis.confidence == 0.9
    assert diagnosis.trigger is not None
    assert diagnosis.trigger.event_name == "PutFunctionConcurrency20171031"
    assert diagnosis.trigger.identity == OPERATOR_ARN
    assert [e.kind for e in diagnosis.timeline] == ["change", "first_failure"]
    assert [(r.fault_type, r.evidence) for r in diagnosis.ruled_out] == [("network_block", [6])]
    assert diagnosis.remediation_plan[0].command == RESTORE
    assert {(e.entry, e.verified) for e in diagnosis.verification.entries} == {
        ("remediation_plan.0", True),
        ("remediation_plan.0.command", True),
        ("trigger", True),
        ("timeline.0", True),
        ("timeline.1", True),
        ("ruled_out.0", True),
    }
    (throttling,) = diagnosis.verification.support
    assert (throttling.fault_type, throttling.supported_by) == ("throttling", [0, 1, 2])
    assert float(diagnosis.evidence[1].value) == 2  # the two throttled invocations, as CloudWatch counted
    assert all(check.verified for check in diagnosis.verification.pointers)
    first, second = reading_bedrock.requests
    assert tool_results(first) == {}
    assert len(tool_results(second)) == 7  # the second turn saw all seven answers


def _rules_settings(url: str, **overrides: Any) -> SupervisorSettings:
    return SupervisorSettings(mcp_server_url=url, supervisor_model="rules", backoff_base=0.1, **overrides)


async def test_mcp_server_down_is_mcp_connection_after_the_retry() -> None:
    url = f"http://127.0.0.1:{free_port()}/sse"  # nothing listens there
    with pytest.raises(AgentError) as raised:
        await run_agent({}, "inc-down", names.FUNCTION_NAME, settings=_rules_settings(url), api_key="k")
    assert raised.value.category == "mcp_connection"
    assert "after 2 attempt(s)" in raised.value.__notes__


async def test_a_server_that_never_answers_times_out_once_retries_then_fails() -> None:
    hole = BlackHole()
    url = f"{hole.url}/sse"
    started = time.monotonic()
    try:
        with pytest.raises(AgentError) as raised:
            await run_agent(
                {},
                "inc-hole",
                names.FUNCTION_NAME,
                settings=_rules_settings(url, mcp_connect_timeout=0.5),
                api_key="k",
            )
    finally:
        hole.close()
    assert raised.value.category == "mcp_connection"
    assert "no answer from" in raised.value.message
    assert "within 0.5 s" in raised.value.message
    assert len(hole.accepted) == 2  # the attempt and one retry
    assert time.monotonic() - started < 5


async def test_a_wrong_key_is_not_retried(sandbox: Sandbox, mcp_server_url: str) -> None:
    settings = _rules_settings(f"{mcp_server_url}/sse")
    with pytest.raises(AgentError) as raised:
        await run_agent({}, "inc-key", names.FUNCTION_NAME, settings=settings, api_key="wrong")
    assert raised.value.category == "mcp_connection"
    assert "check MCP_API_KEY" in raised.value.message
    assert "after 1 attempt(s)" in raised.value.__notes__


def _cli(sandbox: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | sandbox.env
    return subprocess.run(
        [sys.executable, "-m", "supervisor.agent.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_prints_the_report_with_live_progress(sandbox: Sandbox, mcp_server_url: str) -> None:
    result = _cli(sandbox, "--lambda", names.FUNCTION_NAME, "--mcp-url", f"{mcp_server_url}/sse")
    assert result.returncode == 0, result.stderr
    assert "get_recent_logs ok" in result.stderr  # each tool call as it happens
    for heading in ("Root cause:", "Fault types:", "Severity:", "Confidence:", "Evidence:"):
        assert heading in result.stdout
    assert "Remediation (nothing is run; every step needs approval):" in result.stdout
    assert "Tools called:" in result.stdout
    assert "LLM calls:" in result.stdout
    assert "Wall time:" in result.stdout


def test_cli_json_is_the_whole_result(sandbox: Sandbox, mcp_server_url: str) -> None:
    result = _cli(sandbox, "--lambda", names.FUNCTION_NAME, "--mcp-url", f"{mcp_server_url}/mcp", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["diagnosis"]["verification"]["pointers"]
    assert {call["tool"] for call in payload["tool_calls"]} >= {"get_recent_logs", "submit_diagnosis"}
    assert payload["stop_reason"] == "diagnosed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lambda", "../etc/passwd"], "invalid input"),
        (["--lambda", "f", "--model", "gpt"], "SUPERVISOR_MODEL must be 'rules' or 'provider:model'"),
        (["--lambda", "f", "--mcp-url", "ftp://x"], "MCP_SERVER_URL must be an http(s) URL"),
        (["--lambda", "f", "--model", "nosuchprovider:model"], "cannot be built"),
        (["--lambda", "f", "--remediate", "--json"], "--remediate takes --lambda and asks you at a terminal"),
        (
            ["--lambda", "f", "--remediate", "--executor-profile", "nosuch"],
            "The config profile (nosuch) could not be found: --remediate runs on the sandbox",
        ),
    ],
)
def test_cli_rejects_bad_input_with_exit_2(sandbox: Sandbox, args: list[str], message: str) -> None:
    result = _cli(sandbox, *args)
    assert result.returncode == 2
    assert message in result.stderr
