"""The record of a run's model and tool calls, kept as they happen."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage

from supervisor.schemas import LlmCallRecord, TokenUsage, ToolCallRecord


@dataclass
class Accounting:
    """Every model and tool call of a run, as it happens; ``on_record`` sees each one (live progress)."""

    llm_calls: list[LlmCallRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    on_record: Callable[[LlmCallRecord | ToolCallRecord], None] | None = None

    def add(self, record: LlmCallRecord | ToolCallRecord) -> None:
        if isinstance(record, LlmCallRecord):
            self.llm_calls.append(record)
        else:
            self.tool_calls.append(record)
        if self.on_record is not None:
            self.on_record(record)


def _usage(message: AIMessage) -> TokenUsage:
    usage = message.usage_metadata or {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    cached = usage.get("input_token_details") or {}
    return TokenUsage(
        prompt_tokens=usage["input_tokens"],
        completion_tokens=usage["output_tokens"],
        total_tokens=usage["total_tokens"],
        cache_read_tokens=cached.get("cache_read") or 0,
        cache_write_tokens=cached.get("cache_creation") or 0,
    )


def llm_record(
    turn: int,
    started: float,
    response: AIMessage | None,
    forced_final: bool,
    error: str | None,
    from_text: int = 0,
) -> LlmCallRecord:
    """The record of one model call begun at ``started`` (time.perf_counter()): its answer or its error."""
    return LlmCallRecord(
        turn=turn,
        status="ok" if error is None else "error",
        latency_ms=(time.perf_counter() - started) * 1000,
        usage=_usage(response)
        if response is not None
        else TokenUsage(prompt_tokens=0, completion_tokens=0, total_tokens=0),
        forced_final=forced_final,
        tool_calls=[call["name"] for call in response.tool_calls] if response is not None else [],
        calls_from_text=from_text,
        error=error,
    )
