"""Out of memory: invocations use all the memory configured, and the runtime is killed."""

from __future__ import annotations

import math

from supervisor.diagnosis.rules.commands import command
from supervisor.diagnosis.rules.conversation import Conversation
from supervisor.diagnosis.rules.failures import first_failure, last_failure
from supervisor.diagnosis.rules.findings import ChangeEvent, Finding, Pointer, Rejection, Remedy, Verdict
from supervisor.diagnosis.rules.triggers import previous_setting
from supervisor.faults.meanings import AT_LIMIT

_METRICS = "get_function_metrics"
MAX_MEMORY_MB = 10_240


def _relevant(event: ChangeEvent) -> bool:
    return event.operation == "UpdateFunctionConfiguration" and "memorysize" in event.changed_fields


def _wanted(c: Conversation, size: int, peak: int) -> tuple[int, str, list[Pointer]]:
    """The memory size to set, why, and the pointers that justify it: the value before the change that
    lowered it, else twice the size exhausted (and 1.5 times the highest peak a healthy run showed)."""
    previous = previous_setting(c, "memorySize")
    if previous is not None and isinstance(previous[0], int) and previous[0] > size:
        return previous[0], f"its value before the change, {previous[0]} MB", [previous[1]]
    healthy = [
        int(i["max_memory_used_mb"])
        for i in c.logs.get("invocations", [])
        if i.get("outcome") == "no_error_seen" and i.get("max_memory_used_mb")
    ]
    needed = max(max(healthy, default=0), peak)
    wanted = min(MAX_MEMORY_MB, max(size * 2, math.ceil(needed * 1.5 / 64) * 64))
    return wanted, f"twice the {size} MB exhausted, and at least 1.5 times the {needed} MB peak seen", []


def check(c: Conversation) -> Verdict:
    metrics = c.metrics
    ratio, peak, size = (
        metrics.get("memory_to_size"),
        metrics.get("peak_memory_used_mb"),
        metrics.get("memory_size_mb"),
    )
    if ratio is None or peak is None or not size:
        return None
    if ratio < AT_LIMIT or not metrics.get("errors"):
        pointer = Pointer(
            _METRICS,
            "memory_to_size",
            ratio,
            f"Peak memory was {ratio:.0%} of the {size} MB configured",
            None,
        )
        return Rejection("out_of_memory", "No invocation reached the memory size", [pointer])
    wanted, basis, cited = _wanted(c, size, peak)
    name = c.name
    pointers = [
        Pointer(_METRICS, "peak_memory_used_mb", peak, f"Invocations used {peak} MB", "out_of_memory"),
        Pointer(_METRICS, "memory_size_mb", size, f"All of the {size} MB configured", "out_of_memory"),
        Pointer(_METRICS, "memory_to_size", ratio, "Peak memory at the limit", "out_of_memory"),
        *cited,
    ]
    return Finding(
        "out_of_memory",
        f"{name} runs out of memory: invocations reach its {size} MB and the runtime is killed.",
        "high",
        pointers,
        Remedy(
            f"Raise the memory of {name} to {wanted} MB",
            f"Set the memory size to {wanted} MB ({basis}), or reduce what the code holds in memory.",
            command(c, "lambda", "UpdateFunctionConfiguration", {"FunctionName": name, "MemorySize": wanted}),
            "low",
        ),
        relevant_change=_relevant,
        first_failure=first_failure(c, outcomes=frozenset({"runtime_exit"})),
        last_failure=last_failure(c, outcomes=frozenset({"runtime_exit"})),
    )
