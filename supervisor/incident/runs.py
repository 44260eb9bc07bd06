"""What the pipeline and the re-check say about one agent run: its metrics and reasoning summary (logged
and emitted), and why it ended without a diagnosis."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

if TYPE_CHECKING:
    from supervisor.agent.run import AgentResult

NO_DIAGNOSIS_REASON: Final[str] = "recursion limit exhausted without diagnosis"


def no_diagnosis_reason(result: AgentResult, max_tokens: int) -> str:
    """Why a run ended without a diagnosis (``max_tokens``: the incident's token budget)."""
    if result.stop_reason == "recursion_limit":
        return NO_DIAGNOSIS_REASON
    if any(call.forced_final for call in result.llm_calls):
        guard = (
            f"token budget spent ({result.total_tokens} of {max_tokens})"
            if result.total_tokens >= max_tokens
            else "deadline reached"
        )
        return f"{guard}: the forced final turn ended without a diagnosis"
    return "the model stopped without submitting a diagnosis"


def log_run(
    logger: Logger, incident_id: str, result: AgentResult, max_tokens: int, metrics: EphemeralMetrics
) -> None:
    """Log ``agent_metrics`` and ``agent_reasoning_summary`` of a run, and emit its call and token counts."""
    prompt_tokens = sum(u.prompt_tokens for u in result.token_usage)
    completion_tokens = sum(u.completion_tokens for u in result.token_usage)
    logger.info(
        "agent_metrics",
        extra={
            "event": "agent_metrics",
            "incident_id": incident_id,
            "llm_calls": len(result.llm_calls),
            "total_prompt_tokens": prompt_tokens,
            "total_completion_tokens": completion_tokens,
            "total_tokens": result.total_tokens,
            "budget_remaining": max_tokens - result.total_tokens,
        },
    )
    diagnosis = result.diagnosis
    logger.info(
        "agent_reasoning_summary",
        extra={
            "event": "agent_reasoning_summary",
            "incident_id": incident_id,
            "tools_called": [call.tool for call in result.tool_calls],
            "fault_types": list(diagnosis.fault_types) if diagnosis else [],
            "root_cause": diagnosis.root_cause if diagnosis else None,
            "severity": diagnosis.severity if diagnosis else None,
            "steps": len(result.llm_calls),
        },
    )
    metrics.add_metric(name="LlmCalls", unit=MetricUnit.Count, value=len(result.llm_calls))
    metrics.add_metric(name="PromptTokens", unit=MetricUnit.Count, value=prompt_tokens)
    metrics.add_metric(name="CompletionTokens", unit=MetricUnit.Count, value=completion_tokens)
    metrics.add_metric(name="TotalTokens", unit=MetricUnit.Count, value=result.total_tokens)
