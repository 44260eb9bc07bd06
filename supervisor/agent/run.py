"""``run_agent``: one diagnosis over an MCP session, with timeouts, retries and categorised errors."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import AgentState, StopReason, build_graph, initial_state, run_graph
from supervisor.agent.mcp_client import classify, mcp_session
from supervisor.agent.models import build_model
from supervisor.agent.providers import McpToolProvider
from supervisor.schemas import (
    AgentError,
    Diagnosis,
    LlmCallRecord,
    TokenUsage,
    ToolCallRecord,
    ToolResult,
)
from supervisor.settings import SupervisorSettings

logger = logging.getLogger(__name__)

RETRYABLE = frozenset({"mcp_connection", "mcp_init", "bedrock_transient"})


@dataclass
class AgentResult:
    diagnosis: Diagnosis | None
    stop_reason: StopReason
    messages: list[AnyMessage]
    token_usage: list[TokenUsage]
    llm_calls: list[LlmCallRecord]
    tool_calls: list[ToolCallRecord]
    tool_results: list[ToolResult] = field(default_factory=list)
    failed_attempts: list[AgentError] = field(default_factory=list)
    wall_seconds: float = 0.0

    @classmethod
    def from_run(
        cls,
        final: AgentState,
        reason: StopReason,
        accounting: Accounting,
        started: float,
        failures: list[AgentError] | None = None,
    ) -> AgentResult:
        """The result of a graph run that ended in ``final`` (``started`` is its time.monotonic())."""
        return cls(
            diagnosis=final["diagnosis"],
            stop_reason=reason,
            messages=list(final["messages"]),
            token_usage=list(final["token_usage"]),
            llm_calls=accounting.llm_calls,
            tool_calls=accounting.tool_calls,
            tool_results=list(final["tool_results"]),
            failed_attempts=failures or [],
            wall_seconds=time.monotonic() - started,
        )

    @property
    def total_tokens(self) -> int:
        return sum(usage.total_tokens for usage in self.token_usage)


def _retryable(error: BaseException) -> bool:
    return isinstance(error, AgentError) and error.category in RETRYABLE and not error.permanent


def _retrying(settings: SupervisorSettings) -> AsyncRetrying:
    """Up to ``settings.attempts`` runs; retry n (from 0) waits ``backoff_base**n`` seconds; the last
    failure is raised as it is."""
    return AsyncRetrying(
        stop=stop_after_attempt(settings.attempts),
        wait=wait_exponential(exp_base=settings.backoff_base),
        retry=retry_if_exception(_retryable),
        sleep=asyncio.sleep,
        reraise=True,
    )


async def _attempt(
    model: BaseChatModel,
    settings: SupervisorSettings,
    api_key: str | None,
    state: AgentState,
    accounting: Accounting,
) -> tuple[AgentState, StopReason]:
    async with mcp_session(settings, api_key) as session:
        # The server answers a little before the graph's own tool timeout, so its gaps arrive in time.
        provider = McpToolProvider(
            session, deadline_seconds=max(1.0, settings.tool_timeout - 2), incident_id=state["incident_id"]
        )
        graph = build_graph(model, provider, settings, accounting, recall=True)
        try:
            return await run_graph(graph, state, settings.recursion_limit)
        except Exception as error:
            raise classify(error, "run") from error


async def run_agent(
    incident: dict[str, Any],
    incident_id: str,
    function_name: str,
    *,
    settings: SupervisorSettings,
    api_key: str | None,
    model: BaseChatModel | None = None,
    deadline: float | None = None,
    on_record: Callable[[LlmCallRecord | ToolCallRecord], None] | None = None,
) -> AgentResult:
    """Diagnose ``function_name``; raises AgentError when no attempt could run the graph to its end.

    ``deadline`` is the time.time() by which the answer is needed (a Lambda's remaining time); by default
    ``settings.time_budget_seconds`` from now."""
    started = time.monotonic()
    model = model if model is not None else build_model(settings.supervisor_model, settings)
    deadline = deadline if deadline is not None else time.time() + settings.time_budget_seconds
    accounting = Accounting(on_record=on_record)
    failures: list[AgentError] = []

    async def attempt() -> tuple[AgentState, StopReason]:
        state = initial_state(incident, incident_id, function_name, deadline)
        try:
            return await _attempt(model, settings, api_key, state, accounting)
        except Exception as raised:  # anyio task groups may wrap an AgentError in an exception group
            error = raised if isinstance(raised, AgentError) else classify(raised, "run")
            failures.append(error)
            logger.warning("attempt %d of %d failed: %s", len(failures), settings.attempts, error)
            raise error from None

    try:
        outcome: tuple[AgentState, StopReason] = await _retrying(settings)(attempt)
    except AgentError as error:
        error.add_note(f"after {len(failures)} attempt(s)")
        raise error from None
    return AgentResult.from_run(*outcome, accounting, started, failures)
