"""What a re-check's final diagnosis changed from the provisional one: the trigger (found, changed, no
longer found), the fault types, the confidence and the first remediation step's command. Stored beside the
two diagnoses in incident-context (``recheck_changes``), shown by the notification and the console.

Plain Python over the stored diagnoses' JSON: the watchdog and the console read it without the agent stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

CONFIRMED: Final[str] = "nothing: the final diagnosis confirms the provisional one"


def _trigger(diagnosis: Mapping[str, Any]) -> str | None:
    trigger = diagnosis.get("trigger")
    if not isinstance(trigger, Mapping):
        return None
    return f"{trigger.get('event_name')} at {trigger.get('time')}"


def _first_command(diagnosis: Mapping[str, Any]) -> str | None:
    steps = diagnosis.get("remediation_plan") or []
    first = steps[0] if steps and isinstance(steps[0], Mapping) else {}
    command = first.get("command")
    return str(command) if command else None


def _confidence(diagnosis: Mapping[str, Any]) -> float:
    value = diagnosis.get("confidence")
    return float(value) if isinstance(value, int | float) else 0.0


def changes(provisional: Mapping[str, Any], final: Mapping[str, Any]) -> dict[str, Any]:
    """Each compared part as ``{"provisional": ..., "final": ...}``, and ``summary``: one line per
    difference (or that nothing changed)."""
    compared: dict[str, Any] = {
        "trigger": {"provisional": _trigger(provisional), "final": _trigger(final)},
        "fault_types": {
            "provisional": sorted(provisional.get("fault_types") or []),
            "final": sorted(final.get("fault_types") or []),
        },
        "confidence": {"provisional": _confidence(provisional), "final": _confidence(final)},
        "first_command": {"provisional": _first_command(provisional), "final": _first_command(final)},
    }
    return compared | {"summary": summary(compared)}


def summary(compared: Mapping[str, Any]) -> list[str]:
    lines = []
    trigger = compared["trigger"]
    before, after = trigger["provisional"], trigger["final"]
    if before is None and after is not None:
        lines.append(f"trigger found: {after}")
    elif before is not None and after is None:
        lines.append(f"trigger no longer found (was {before})")
    elif before != after:
        lines.append(f"trigger changed: {before} -> {after}")
    faults = compared["fault_types"]
    if faults["provisional"] != faults["final"]:
        lines.append(f"fault types: {', '.join(faults['provisional'])} -> {', '.join(faults['final'])}")
    confidence = compared["confidence"]
    if confidence["provisional"] != confidence["final"]:
        lines.append(f"confidence: {confidence['provisional']:.2f} -> {confidence['final']:.2f}")
    command = compared["first_command"]
    if command["provisional"] != command["final"]:
        lines.append(
            f"first remediation command: {command['provisional'] or 'none'} -> {command['final'] or 'none'}"
        )
    return lines or [CONFIRMED]
