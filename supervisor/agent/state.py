"""The state of one supervisor run, as the graph's nodes share it, and the state a run starts from."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph.message import add_messages

from supervisor.agent import prompt
from supervisor.schemas import Diagnosis, TokenUsage, ToolResult


class AgentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    incident: dict[str, Any]
    incident_id: str
    function_name: str
    diagnosis: Diagnosis | None
    deadline: float  # time.time() by which the run must have answered
    token_usage: Annotated[list[TokenUsage], operator.add]
    tool_results: Annotated[list[ToolResult], operator.add]  # every valid tool answer of this run
    refinement_turns: int
    final_turn: bool  # the model was told to submit now; nothing but submit_diagnosis runs


def initial_state(
    incident: dict[str, Any], incident_id: str, function_name: str, deadline: float
) -> AgentState:
    return {
        "messages": [HumanMessage(prompt.incident_message(incident_id, function_name, incident))],
        "incident": incident,
        "incident_id": incident_id,
        "function_name": function_name,
        "diagnosis": None,
        "deadline": deadline,
        "token_usage": [],
        "tool_results": [],
        "refinement_turns": 0,
        "final_turn": False,
    }
