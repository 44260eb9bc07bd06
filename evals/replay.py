"""A case through the real supervisor graph: the recorded tool answers served back, any chat model."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from evals.corpus import Case, RecordedCall, canonical_arguments
from supervisor.agent.accounting import Accounting
from supervisor.agent.graph import StopReason, build_graph, initial_state, run_graph
from supervisor.agent.mcp_client import classify
from supervisor.agent.prices import Price
from supervisor.agent.providers import ToolCallFailed
from supervisor.schemas import AgentError, Diagnosis, LlmCallRecord
from supervisor.settings import SupervisorSettings


class CaseToolProvider:
    """Serves a case's recorded answers, keyed by tool and arguments (defaults filled in). A call that was
    not recorded is a tool error that says which arguments were."""

    def __init__(self, case: Case) -> None:
        self._calls = case.calls_by_key()
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        self.asked.append((name, arguments))
        try:
            key = canonical_arguments(name, arguments)
        except (KeyError, ValidationError) as error:
            raise ToolCallFailed(f"{name} cannot be called with {json.dumps(arguments)}: {error}") from None
        call: RecordedCall | None = self._calls.get((name, key))
        if call is None:
            recorded = [
                json.dumps(c.arguments, sort_keys=True)
                for (tool, _), c in self._calls.items()
                if tool == name
            ]
            raise ToolCallFailed(
                f"this benchmark case recorded {name} only with arguments {'; '.join(recorded) or 'none'}, "
                f"so there is no answer for {json.dumps(arguments, sort_keys=True)}"
            )
        if call.error is not None:
            raise ToolCallFailed(call.error)
        return json.dumps(call.result)


@dataclass
class CaseRun:
    """One case replayed with one model."""

    case: Case
    diagnosis: Diagnosis | None
    stop_reason: StopReason | None
    llm_calls: list[LlmCallRecord]
    tools_asked: int
    seconds: float
    error: str | None = None  # the run could not finish (model unreachable, ...)

    @property
    def input_tokens(self) -> int:
        return sum(call.usage.prompt_tokens for call in self.llm_calls)

    @property
    def output_tokens(self) -> int:
        return sum(call.usage.completion_tokens for call in self.llm_calls)

    def cost(self, price: Price) -> float:
        """What its model calls are billed, prompt-cache reads and writes at their prices."""
        return sum(price.cost_of(call.usage) for call in self.llm_calls)


async def replay_case(case: Case, model: BaseChatModel, settings: SupervisorSettings) -> CaseRun:
    """Run the graph on the case with ``model``; a run that fails is reported, not raised."""
    accounting = Accounting()
    provider = CaseToolProvider(case)
    graph = build_graph(model, provider, settings, accounting)
    state = initial_state(
        case.incident, case.incident_id, case.function_name, time.time() + settings.time_budget_seconds
    )
    started = time.monotonic()
    try:
        final, reason = await run_graph(graph, state, settings.recursion_limit)
    except Exception as raised:
        error = raised if isinstance(raised, AgentError) else classify(raised, "run")
        return CaseRun(
            case,
            None,
            None,
            accounting.llm_calls,
            len(provider.asked),
            time.monotonic() - started,
            str(error),
        )
    return CaseRun(
        case,
        final["diagnosis"],
        reason,
        accounting.llm_calls,
        len(provider.asked),
        time.monotonic() - started,
    )
