"""Live progress: on a terminal one line per scenario, rewritten as it moves; elsewhere one line per step."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from supervisor.schemas import LlmCallRecord, ToolCallRecord


class Progress:
    def __init__(
        self, out: TextIO = sys.stdout, *, live: bool | None = None, lane: int | None = None
    ) -> None:
        """``lane``: the lane this process is (:mod:`chaos.drill.lanes`), shown before every line."""
        self.out = out
        self.live = out.isatty() if live is None else live
        self._lane = f"lane {lane}  " if lane else ""
        self._prefix = ""
        self._started = time.monotonic()

    def note(self, text: str) -> None:
        """A line outside any scenario (startup, shutdown)."""
        self._clear()
        print(self._lane + text, file=self.out, flush=True)

    def scenario(self, index: int, total: int, name: str) -> None:
        """Prefix the following lines with the scenario; index 0 for a step outside the scenarios."""
        counter = f"[{index:>2}/{total}]" if index else " " * 7
        self._prefix = f"{self._lane}{counter} {name:<20}"
        self._started = time.monotonic()

    def step(self, text: str) -> None:
        line = f"{self._prefix} {time.monotonic() - self._started:5.1f}s  {text}"
        if self.live:
            self.out.write("\r\x1b[K" + line[:160])
            self.out.flush()
        else:
            print(line, file=self.out, flush=True)

    def record(self, record: LlmCallRecord | ToolCallRecord) -> None:
        """The supervisor's ``on_record``: each model turn and tool call as it happens."""
        if isinstance(record, ToolCallRecord):
            self.step(f"agent: {record.tool} → {record.status}")
        elif record.tool_calls:
            self.step(f"agent: model turn {record.turn} asks for {', '.join(record.tool_calls)}")

    def finish(self, passed: bool, summary: str) -> None:
        mark = "PASS" if passed else "FAIL"
        self._clear()
        print(
            f"{self._prefix} {time.monotonic() - self._started:5.1f}s  {mark}  {summary}",
            file=self.out,
            flush=True,
        )

    def _clear(self) -> None:
        if self.live:
            self.out.write("\r\x1b[K")
