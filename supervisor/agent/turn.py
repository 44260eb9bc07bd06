"""One turn of the supervisor's graph: the tool calls the model asked for, run behind every guard
(argument and response validation, timeouts, redaction, truncation), and a submitted diagnosis checked
against the evidence of the run before it is accepted."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from pydantic import ValidationError

from mcp_server.contract.registry import RUN_TOOLS, TOOL_NAMES
from mcp_server.redaction import redact_answer
from supervisor.agent import prompt
from supervisor.agent.accounting import Accounting
from supervisor.agent.providers import ToolCallFailed
from supervisor.agent.state import AgentState
from supervisor.diagnosis import evidence, standing
from supervisor.diagnosis.precedents import HISTORY_TOOL, recall
from supervisor.schemas import (
    Diagnosis,
    DiagnosisGap,
    DiagnosisSubmission,
    ToolCallRecord,
    ToolCallStatus,
    ToolProvider,
    ToolResult,
)
from supervisor.settings import SupervisorSettings

MAX_REFINEMENT_TURNS = 1


def responses_by_tool(results: list[ToolResult]) -> dict[str, list[dict[str, Any]]]:
    """The validated responses of a run, per tool, in call order: what evidence pointers are checked in."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        grouped.setdefault(result.tool, []).append(result.result)
    return grouped


def short(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in error.errors(include_url=False)[:8]
    )


class Turn:
    """The tool calls of one model turn: executes them and collects the replies and state updates."""

    def __init__(
        self,
        state: AgentState,
        provider: ToolProvider,
        settings: SupervisorSettings,
        accounting: Accounting,
        number: int | None = None,
    ) -> None:
        self.state = state
        self.provider = provider
        self.settings = settings
        self.accounting = accounting
        # The model's turn the calls are counted in: the history read before the first counts in the first.
        turns = sum(isinstance(m, AIMessage) for m in state["messages"])
        self.number = number if number is not None else turns
        self.replies: list[AnyMessage] = []
        self.results: list[ToolResult] = []

    def reply(self, call: ToolCall | dict[str, Any], content: str, *, error: bool) -> None:
        self.replies.append(
            ToolMessage(
                content=content,
                tool_call_id=call["id"] or "",
                name=call["name"] or "",
                status="error" if error else "success",
            )
        )

    def record(self, call: ToolCall, status: ToolCallStatus, **details: Any) -> None:
        self.accounting.add(
            ToolCallRecord(
                turn=self.number,
                tool=call["name"],
                arguments=call["args"],
                status=status,
                latency_ms=details.pop("latency_ms", 0.0),
                request_bytes=len(json.dumps(call["args"]).encode()),
                response_bytes=details.pop("response_bytes", 0),
                **details,
            )
        )

    def refuse(self, call: ToolCall, status: ToolCallStatus, message: str, **details: Any) -> None:
        self.reply(call, message, error=True)
        self.record(call, status, error=message, **details)

    async def run_tool(self, call: ToolCall, repaired: bool) -> None:
        name = call["name"]
        started = time.perf_counter()

        def failed(status: ToolCallStatus, reason: str, response_bytes: int = 0) -> None:
            latency_ms = (time.perf_counter() - started) * 1000
            self.refuse(
                call,
                status,
                f"(tool failed: {reason})",
                latency_ms=latency_ms,
                response_bytes=response_bytes,
                repaired_arguments=repaired,
            )

        try:
            async with asyncio.timeout(self.settings.tool_timeout):
                raw = await self.provider.call_tool(name, call["args"])
        except TimeoutError:
            return failed("timeout", "timeout")
        except ToolCallFailed as error:
            return failed("error", str(error))
        except Exception as error:
            return failed("error", f"{type(error).__name__}: {error}")
        size = len(raw.encode())
        model = RUN_TOOLS[name].response
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            return failed("invalid_response", f"the response is not JSON ({size} bytes)", size)
        if isinstance(data, dict) and set(data) == {"error"}:
            return failed("error", str(data["error"]), size)
        try:
            answer = model.model_validate(data)
            payload = (redact_answer(answer) if self.settings.redact else answer).model_dump(mode="json")
        except ValidationError as error:
            return failed(
                "invalid_response", f"the response did not match {model.__name__}: {short(error)}", size
            )
        self.results.append(ToolResult(tool=name, arguments=call["args"], result=payload))
        shown = prompt.tool_result(name, payload)
        content = prompt.truncate(shown, self.settings.tool_response_max_bytes)
        self.reply(call, content, error=False)
        self.record(
            call,
            "ok",
            latency_ms=(time.perf_counter() - started) * 1000,
            response_bytes=size,
            truncated=content is not shown,
            repaired_arguments=repaired,
        )
        return None

    def submit(self, call: ToolCall) -> dict[str, Any]:
        """State updates for a submit_diagnosis call: the accepted diagnosis, or a refinement turn."""
        final = self.state["final_turn"]
        try:
            submission = DiagnosisSubmission.model_validate(call["args"])
        except ValidationError as error:
            self.refuse(
                call, "invalid_args", f"submit_diagnosis rejected: {short(error)}. Fix and submit again."
            )
            return {}
        turns = self.state["refinement_turns"]
        responses = responses_by_tool([*self.state["tool_results"], *self.results])
        function = self.state["function_name"]
        verification = evidence.verify(submission, responses, turns, function)
        if not verification.passed and turns < MAX_REFINEMENT_TURNS and not final:
            self.refuse(call, "refused", evidence.describe_failures(submission, verification))
            return {"refinement_turns": turns + 1}
        kept, check, refused = standing.standing_claims(submission, verification, responses, function)
        stated = {gap.source for gap in kept.gaps}
        recalled = any(call.tool == HISTORY_TOOL for call in self.accounting.tool_calls)
        read = [*TOOL_NAMES, *([HISTORY_TOOL] if recalled else [])]
        observed = evidence.observed_gaps(responses, self.accounting.tool_calls, read)
        history, incident_id = responses.get(HISTORY_TOOL, []), self.state["incident_id"]
        trigger = kept.trigger.event_name if kept.trigger else None
        precedents, recurrence = (
            recall(history[0], incident_id, kept.fault_types, trigger) if history else ([], None)
        )
        diagnosis = Diagnosis(
            **kept.model_dump(exclude={"confidence", "gaps"}),
            gaps=[
                *kept.gaps,
                *(DiagnosisGap(**gap) for gap in observed if gap["source"] not in stated),
            ],
            confidence=standing.confidence(submission.confidence, verification, refused, check),
            verification=check,
            refused=refused,
            precedents=precedents,
            recurrence=recurrence,
        )
        taken = f"; {len(refused)} claim(s) refused and taken out" if refused else ""
        self.reply(call, f"Diagnosis accepted (confidence {diagnosis.confidence}{taken}).", error=False)
        self.record(call, "ok")
        return {"diagnosis": diagnosis}
