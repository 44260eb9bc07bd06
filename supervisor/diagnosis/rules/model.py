"""The ``rules`` model: an offline, deterministic diagnostician that runs the same graph as an LLM.

It reads only the conversation (the incident and the tool results), calls every tool at once in its first
turn (and the logs again, for the failing minutes only, when their first answer was cut), and builds its
diagnosis solely from tool results, citing each claim by the path and the value it read. One check per
fault family (``supervisor.diagnosis.rules.*``) confirms a fault only with state the function's users
cannot write (IAM, configuration, metrics, network, change history), so text planted in logs cannot steer
it; with no confirmed fault it answers ``unknown``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable

from mcp_server.contract.registry import TOOL_NAMES
from supervisor.agent.prompt import SUBMIT_TOOL
from supervisor.diagnosis.rules.conversation import incident_minutes, read
from supervisor.diagnosis.rules.diagnose import diagnose

_LOGS = "get_recent_logs"
RETRY_LOG_LINES = 10


class RulesChatModel(BaseChatModel):
    """A deterministic chat model: every tool in the first turn, then a diagnosis built from the results."""

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
        conversation = read(messages)
        turn = sum(isinstance(m, AIMessage) for m in messages) + 1
        name = conversation.function_name
        calls: list[tuple[str, dict[str, Any]]] = [
            (tool, {"lambda_name": name}) for tool in TOOL_NAMES if tool not in conversation.attempted
        ]
        minutes = incident_minutes(conversation)
        if not calls and _LOGS in conversation.cut and conversation.calls.get(_LOGS) == 1 and minutes:
            # The incident's minutes, and few lines: the tool keeps error lines first, newest first.
            calls = [(_LOGS, {"lambda_name": name, "minutes": minutes, "limit": RETRY_LOG_LINES})]
        if self.offered == (SUBMIT_TOOL,) or not calls or conversation.refused_submissions:
            calls = [(SUBMIT_TOOL, diagnose(conversation))]
            text = "Submitting the diagnosis the tool results support."
        else:
            text = f"Checking {', '.join(tool for tool, _ in calls)}."
        message = AIMessage(
            content=text,
            tool_calls=[
                {"name": name, "args": args, "id": f"rules-{turn}-{i}", "type": "tool_call"}
                for i, (name, args) in enumerate(calls)
            ],
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
