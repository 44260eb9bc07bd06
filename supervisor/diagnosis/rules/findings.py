"""What a fault family's check returns: a confirmed finding, a rejected hypothesis, or neither."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from supervisor.faults.meanings import operation
from supervisor.faults.registry import FaultType
from supervisor.schemas import RiskLevel, Severity


@dataclass(frozen=True)
class Pointer:
    tool: str
    field: str
    value: Any
    interpretation: str
    supports: FaultType | None

    def as_dict(self) -> dict[str, Any]:
        value = self.value if isinstance(self.value, str) else json.dumps(self.value, separators=(",", ":"))
        return {
            "tool": self.tool,
            "field": self.field,
            "value": value,
            "interpretation": self.interpretation,
            "supports": self.supports,
        }


@dataclass(frozen=True)
class Remedy:
    action: str
    details: str
    command: str | None = None
    risk: RiskLevel = "medium"


@dataclass(frozen=True)
class ChangeEvent:
    """A change from get_recent_changes, with where it is in the answer."""

    index: int
    event: dict[str, Any]
    time: datetime

    @property
    def operation(self) -> str:
        return operation(str(self.event.get("event_name", "")))

    @property
    def changed_fields(self) -> set[str]:
        """The configuration fields the call changed, lower-cased ('timeout', 'memorysize', 'handler')."""
        summary = self.event.get("summary") or {}
        return {str(name).lower() for name in summary.get("changed_fields") or []}

    def setting(self, name: str) -> tuple[str, Any] | None:
        """(the summary's key, the value) of a function setting the call set, matched without case."""
        summary = self.event.get("summary") or {}
        for key, value in summary.items():
            if key.lower() == name.lower() and key != "changed_fields":
                return key, value
        return None


Relevant = Callable[[ChangeEvent], bool]


@dataclass(frozen=True)
class Gap:
    """What a finding leaves open that no tool answer can settle (e.g. no command can fix it), with the
    pointers that show it."""

    source: str
    reason: str
    pointers: tuple[Pointer, ...] = ()


@dataclass
class Finding:
    """A fault the evidence confirms."""

    fault: FaultType
    cause: str
    severity: Severity
    pointers: list[Pointer]
    remedy: Remedy
    relevant_change: Relevant = field(default=lambda _: False)
    first_failure: tuple[datetime, Pointer] | None = None  # when it started, and the pointer that shows it
    last_failure: tuple[datetime, Pointer] | None = None  # when the latest failure of its kind started
    subsumes: tuple[FaultType, ...] = ()  # symptoms it explains (blocked egress explains the timeouts)
    resources: tuple[str, ...] = ()  # what it implicates besides the function (a security group, a table)
    gaps: tuple[Gap, ...] = ()  # what it leaves open, stated in the diagnosis's gaps
    from_change: bool = True  # False: no change starts it (bad input), so none is looked for
    explains_invocations: bool = True  # False: a delivery's fault, not why invocations failed (``unless``)
    past: bool = False  # shown only as over (timeouts under a timeout since raised): reported if undone
    # True: no invocation succeeds once it started (Lambda cannot receive from the queue), so without a
    # failure to date it, the last success read still bounds its window
    ends_successes: bool = False
    # True: the failures build up over invocations (a /tmp that fills), so the successes after the cause do
    # not bound its window: the last success before the newest change of its kind does
    accumulates: bool = False
    settled: datetime | None = None  # set by the report: an earlier fault's undoing before its failures


@dataclass(frozen=True)
class Rejection:
    """A hypothesis checked and rejected, with the pointers that reject it."""

    fault: FaultType
    reason: str
    pointers: list[Pointer]


Verdict = Finding | Rejection | None
