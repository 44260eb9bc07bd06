"""Scripted models for live benchmark runs, answering at the Bedrock Converse wire: each reads the
conversation it is sent (the incident, the tool answers) and decides, as a model would, without knowing
the case."""

from __future__ import annotations

import json
from typing import Any

from supervisor.agent.prompt import read_tagged

# Valid but not what the rules model or the recorded corpus asks: a shorter window, fewer events, a filter.
UNUSUAL_LOGS: dict[str, Any] = {"minutes": 15, "limit": 25, "filter_pattern": "ERROR"}
UNUSUAL_CHANGES: dict[str, Any] = {"hours": 3, "limit": 10}


def _reply(content: list[dict[str, Any]], body: dict[str, Any], stop: str) -> dict[str, Any]:
    sent = len(json.dumps(body)) // 4  # about a token per four characters
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": sent, "outputTokens": 60, "totalTokens": sent + 60},
        "metrics": {"latencyMs": 1},
    }


def _function(body: dict[str, Any]) -> str:
    """The function the incident names (the first message, tagged as the graph writes it)."""
    first = next(block["text"] for block in body["messages"][0]["content"] if "text" in block)
    shown = read_tagged(first)
    assert shown is not None, first
    return str(shown[2]["function_name"])


def _tool_answers(body: dict[str, Any]) -> dict[str, Any]:
    """Each tool's latest answer in the conversation, as the graph showed it (tagged JSON)."""
    answers: dict[str, Any] = {}
    for message in body["messages"]:
        for block in message["content"]:
            for part in block.get("toolResult", {}).get("content", []):
                shown = read_tagged(part.get("text", ""))
                if shown is not None and shown[1] is not None:
                    answers[shown[1]] = shown[2]
    return answers


def unusual_arguments(model: str, body: dict[str, Any]) -> dict[str, Any]:
    """Turn 1: the logs and the change history with unusual arguments. Then: ``unknown``, citing the first
    log line it was shown (or, with none, the log group), and nothing to fix."""
    function = _function(body)
    logs = _tool_answers(body).get("get_recent_logs")
    if logs is None:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("get_recent_logs", UNUSUAL_LOGS),
            ("get_recent_changes", UNUSUAL_CHANGES),
        ]
        uses = [
            {"toolUse": {"toolUseId": f"use-{n}", "name": tool, "input": {"lambda_name": function, **args}}}
            for n, (tool, args) in enumerate(calls)
        ]
        return _reply([{"text": "Reading the logs and changes."}, *uses], body, "tool_use")
    events = logs.get("events") or []
    pointer = (
        {"field": "events.0.message", "value": events[0]["message"].strip()[:40]}
        if events
        else {"field": "log_group", "value": logs["log_group"]}
    )
    submission = {
        "root_cause": "Not determined from the logs alone.",
        "fault_types": ["unknown"],
        "affected_resources": [function],
        "severity": "low",
        "evidence": [{"tool": "get_recent_logs", **pointer, "interpretation": "what the logs show"}],
        "remediation_plan": [],
        "confidence": 0.2,
    }
    use = {"toolUse": {"toolUseId": "use-submit", "name": "submit_diagnosis", "input": submission}}
    return _reply([use], body, "tool_use")
