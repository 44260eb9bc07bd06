"""The supervisor's ReAct graph: START -> [recall] -> agent_reason -> execute_tools -> (agent_reason | END).

``recall`` (with ``recall=True``) reads the function's past incidents with ``get_incident_history`` once,
shown to the model beside the incident as corroboration only; ``agent_reason`` asks the model for its next
step; ``execute_tools`` runs what it asked for behind every guard (allow-list, argument and response
validation, per-turn cap, timeouts, truncation) and checks a submitted diagnosis against the evidence of the
run before accepting it (``supervisor.agent.turn``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Literal

import json_repair
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.runnables import Runnable
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import ValidationError

from mcp_server.contract.registry import TOOL_NAMES, TOOLS
from supervisor.agent import prompt
from supervisor.agent.accounting import Accounting, llm_record
from supervisor.agent.state import AgentState as AgentState
from supervisor.agent.state import initial_state as initial_state
from supervisor.agent.text_calls import as_calls, calls_in_text
from supervisor.agent.turn import Turn, short
from supervisor.diagnosis.precedents import HISTORY_HEADING, HISTORY_TOOL, shown_history
from supervisor.schemas import (
    AgentError,
    LlmCallRecord,
    ToolCallStatus,
    ToolProvider,
)
from supervisor.settings import SupervisorSettings

logger = logging.getLogger(__name__)


Graph = CompiledStateGraph[AgentState, None, AgentState, AgentState]


def _repair(message: AIMessage) -> tuple[list[tuple[ToolCall, bool]], list[dict[str, Any]]]:
    """The turn's tool calls, with calls whose argument JSON was malformed repaired once where possible;
    and the calls that could not be repaired."""
    calls: list[tuple[ToolCall, bool]] = [(call, False) for call in message.tool_calls]
    broken: list[dict[str, Any]] = []
    for invalid in message.invalid_tool_calls:
        try:
            args = json_repair.loads(invalid.get("args") or "")
        except Exception:
            args = None
        if isinstance(args, dict) and invalid.get("name"):
            logger.warning(
                "repaired malformed arguments of %s: %r -> %r", invalid["name"], invalid["args"], args
            )
            calls.append(
                (
                    ToolCall(name=invalid["name"] or "", args=args, id=invalid.get("id"), type="tool_call"),
                    True,
                )
            )
        else:
            broken.append(dict(invalid))
    return calls, broken


def _bound(model: BaseChatModel, tools: list[dict[str, Any]], choice: str) -> Runnable[Any, AIMessage]:
    """``model`` offered ``tools`` with the tool choice ``choice``; without a choice on a backend that
    cannot say one (the final turn then offers submit_diagnosis alone)."""
    try:
        return model.bind_tools(tools, tool_choice=choice)
    except (NotImplementedError, ValueError):
        return model.bind_tools(tools)


class _Nodes:
    """The graph's two nodes for one run: the model bound for each phase, the tools, the limits and the
    accounting they share."""

    def __init__(
        self,
        model: BaseChatModel,
        provider: ToolProvider,
        settings: SupervisorSettings,
        accounting: Accounting,
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.accounting = accounting
        # "auto" said outright: some OpenAI-compatible servers (llama.cpp's) ignore tools without a choice.
        self.opening = _bound(model, prompt.diagnostic_specs(), "auto")
        self.investigating = _bound(model, prompt.tool_specs(), "auto")
        self.finishing = _bound(model, [prompt.submit_spec()], prompt.SUBMIT_TOOL)

    async def recall(self, state: AgentState) -> dict[str, Any]:
        """The function's past incidents, read once behind the guards every tool call passes, and shown with
        the incident (nothing when there are none); a failed read is left to the diagnosis's gaps."""
        current = Turn(state, self.provider, self.settings, self.accounting, number=1)
        args = {"lambda_name": state["function_name"]}
        await current.run_tool(ToolCall(name=HISTORY_TOOL, args=args, id="recall", type="tool_call"), False)
        shown = shown_history(current.results[0].result) if current.results else None
        if shown is None:
            return {"tool_results": current.results}
        limit = self.settings.tool_response_max_bytes
        block = prompt.truncate(prompt.tool_result(HISTORY_TOOL, shown), limit)
        first = state["messages"][0]  # replaced: one user message, as every provider accepts
        incident = HumanMessage(f"{first.content}\n{HISTORY_HEADING}\n{block}", id=first.id)
        return {"tool_results": current.results, "messages": [incident]}

    async def agent_reason(self, state: AgentState) -> dict[str, Any]:
        """The model's next step; when time or tokens run out it is told to submit, and offered only that."""
        reason = self._final_reason(state)
        final = state["final_turn"] or reason is not None
        added: list[AnyMessage] = []
        if reason is not None and not state["final_turn"]:
            added.append(HumanMessage(prompt.FORCE_FINAL_MESSAGE.format(reason=reason)))
        conversation = [SystemMessage(prompt.SYSTEM_PROMPT), *state["messages"], *added]
        turn = sum(isinstance(m, AIMessage) for m in state["messages"]) + 1
        bound = self.finishing if final else self.opening if turn == 1 else self.investigating
        offered = (
            [prompt.SUBMIT_TOOL] if final else [*TOOL_NAMES, *([prompt.SUBMIT_TOOL] if turn > 1 else [])]
        )
        response, record = await self._ask(bound, conversation, turn, final, offered)
        return {"messages": [*added, response], "token_usage": [record.usage], "final_turn": final}

    def _final_reason(self, state: AgentState) -> str | None:
        """Why the model must submit now, or None while time and tokens last."""
        spent = sum(usage.total_tokens for usage in state["token_usage"])
        remaining = state["deadline"] - time.time()
        if remaining < self.settings.deadline_buffer_seconds:
            return f"Time is running out ({max(remaining, 0):.0f} s left)."
        if spent >= self.settings.max_tokens_per_incident:
            return f"The token budget is spent ({spent} of {self.settings.max_tokens_per_incident} tokens)."
        return None

    async def _ask(
        self,
        bound: Runnable[LanguageModelInput, AIMessage],
        conversation: list[AnyMessage],
        turn: int,
        final: bool,
        offered: list[str],
    ) -> tuple[AIMessage, LlmCallRecord]:
        """One model call within the LLM timeout, recorded whether it answers or fails; calls it wrote as its
        whole text to the ``offered`` tools are read as calls (and counted)."""
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.settings.llm_timeout):
                response = await bound.ainvoke(conversation)
        except TimeoutError:
            error = f"the model did not answer within {self.settings.llm_timeout:g} s"
            self.accounting.add(llm_record(turn, started, None, final, error))
            raise AgentError("bedrock_transient", error) from None
        except Exception as error:
            self.accounting.add(llm_record(turn, started, None, final, f"{type(error).__name__}: {error}"))
            raise
        if not isinstance(response, AIMessage):
            raise AgentError("unknown", f"the model returned {type(response).__name__}, not an AIMessage")
        written = calls_in_text(response, offered)
        if written:
            response = as_calls(response, written)
        record = llm_record(turn, started, response, final, None, from_text=len(written))
        self.accounting.add(record)
        return response, record

    async def execute_tools(self, state: AgentState) -> dict[str, Any]:
        """Run the tool calls of the model's last message behind every guard; the replies in call order."""
        message = state["messages"][-1]
        assert isinstance(message, AIMessage)
        current = Turn(state, self.provider, self.settings, self.accounting)
        calls, broken = _repair(message)
        for invalid in broken:
            current.reply(
                invalid, f"(tool not run: arguments are not valid JSON: {invalid.get('error')})", error=True
            )
        if not calls and not broken:
            if state["final_turn"]:
                return {}
            return {"messages": [HumanMessage("Call a tool, or submit_diagnosis when you are done.")]}
        runnable = self._admitted(current, calls)
        await asyncio.gather(*(current.run_tool(call, repaired) for call, repaired in runnable))
        update: dict[str, Any] = {}
        for index, call in enumerate(call for call, _ in calls if call["name"] == prompt.SUBMIT_TOOL):
            if index == 0:
                update = current.submit(call)
            else:
                current.refuse(call, "refused", "(not run: one submit_diagnosis per turn)")
        return {
            "messages": _in_call_order(message, current.replies),
            "tool_results": current.results,
            **update,
        }

    def _admitted(self, current: Turn, calls: list[tuple[ToolCall, bool]]) -> list[tuple[ToolCall, bool]]:
        """The turn's tool calls (submit_diagnosis aside) that pass every guard; the others are refused."""
        runnable: list[tuple[ToolCall, bool]] = []
        for call, repaired in calls:
            if call["name"] == prompt.SUBMIT_TOOL:
                continue
            refusal = self._refusal(call, current.state["final_turn"], len(runnable))
            if refusal is None:
                runnable.append((call, repaired))
            else:
                current.refuse(call, *refusal)
        return runnable

    def _refusal(self, call: ToolCall, final: bool, admitted: int) -> tuple[ToolCallStatus, str] | None:
        """Why ``call`` may not run (after ``admitted`` others of its turn), or None."""
        limit = self.settings.max_tool_calls_per_turn
        if final:
            return "refused", "(tool not run: only submit_diagnosis is accepted now)"
        if call["name"] not in TOOL_NAMES:
            tools = ", ".join([*TOOL_NAMES, prompt.SUBMIT_TOOL])
            return "unknown_tool", f"(tool not run: unknown tool {call['name']!r}; the tools are {tools})"
        if admitted >= limit:
            return (
                "dropped",
                f"(tool not run: at most {limit} tool calls per turn; "
                "ask again next turn if you still need it)",
            )
        try:
            TOOLS[call["name"]].arguments.model_validate(call["args"])
        except ValidationError as error:
            return "invalid_args", f"(tool not run: invalid arguments: {short(error)})"
        return None


def _in_call_order(message: AIMessage, replies: list[AnyMessage]) -> list[AnyMessage]:
    """The replies in the order of the calls they answer, valid calls before invalid ones."""
    ids = [call["id"] for call in message.tool_calls] + [call["id"] for call in message.invalid_tool_calls]
    order = {call_id: i for i, call_id in enumerate(ids)}
    return sorted(replies, key=lambda m: order.get(getattr(m, "tool_call_id", None), len(order)))


def _after_tools(state: AgentState) -> Literal["agent_reason", "__end__"]:
    if state["diagnosis"] is not None or state["final_turn"]:
        return "__end__"
    return "agent_reason"


def build_graph(
    model: BaseChatModel,
    provider: ToolProvider,
    settings: SupervisorSettings,
    accounting: Accounting | None = None,
    *,
    recall: bool = False,
) -> Graph:
    """The graph of one run; with ``recall``, it reads the function's history before the model's first turn
    (the production run does; replays and the graph's own tests serve only the diagnostic tools)."""
    nodes = _Nodes(model, provider, settings, accounting if accounting is not None else Accounting())
    graph = StateGraph(AgentState)
    graph.add_node("agent_reason", nodes.agent_reason)
    graph.add_node("execute_tools", nodes.execute_tools)
    if recall:
        graph.add_node("recall", nodes.recall)
        graph.add_edge(START, "recall")
        graph.add_edge("recall", "agent_reason")
    else:
        graph.add_edge(START, "agent_reason")
    graph.add_edge("agent_reason", "execute_tools")
    graph.add_conditional_edges("execute_tools", _after_tools, ["agent_reason", END])
    return graph.compile()


StopReason = Literal["diagnosed", "recursion_limit", "no_submission"]


async def run_graph(
    graph: Graph,
    state: AgentState,
    recursion_limit: int,
) -> tuple[AgentState, StopReason]:
    """Run to the end, or to the recursion limit; either way return the last state and why it stopped."""
    last = state
    try:
        async for chunk in graph.astream(state, {"recursion_limit": recursion_limit}, stream_mode="values"):
            last = chunk  # type: ignore[assignment]
    except GraphRecursionError:
        return last, "recursion_limit"
    return last, "diagnosed" if last["diagnosis"] is not None else "no_submission"
