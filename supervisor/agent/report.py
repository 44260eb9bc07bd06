"""Human-readable output of a diagnosis run: live progress lines and the final report."""

from __future__ import annotations

import json
from typing import Any

from mcp_server.contract.registry import TOOL_NAMES
from supervisor.agent.run import AgentResult
from supervisor.schemas import Diagnosis, LlmCallRecord, ToolCallRecord


def progress_line(record: LlmCallRecord | ToolCallRecord) -> str:
    if isinstance(record, LlmCallRecord):
        asked = ", ".join(record.tool_calls) or "no tool"
        final = " (final turn forced)" if record.forced_final else ""
        status = "" if record.status == "ok" else f" FAILED: {record.error}"
        return (
            f"[turn {record.turn}] model {record.latency_ms:.0f} ms, {record.usage.total_tokens} tokens -> "
            f"{asked}{final}{status}"
        )
    detail = f" ({record.error[:160]})" if record.error else ""
    cut = ", truncated" if record.truncated else ""
    return (
        f"[turn {record.turn}]   {record.tool} {record.status} {record.latency_ms:.0f} ms, "
        f"{record.response_bytes} B{cut}{detail}"
    )


def render(result: AgentResult, function_name: str) -> str:
    lines = [f"Diagnosis of {function_name}", ""]
    diagnosis = result.diagnosis
    if diagnosis is None:
        lines.append(f"No diagnosis: {result.stop_reason.replace('_', ' ')}.")
    else:
        verification = diagnosis.verification
        lines += [
            f"Root cause:  {diagnosis.root_cause}",
            f"Fault types: {', '.join(diagnosis.fault_types)}",
            f"Severity:    {diagnosis.severity}",
            f"Confidence:  {diagnosis.confidence:.2f} (submitted {verification.claimed_confidence:.2f}; "
            f"{len(diagnosis.refused)} claim(s) refused"
            + (f", refinement turns {verification.refinement_turns}" if verification.refinement_turns else "")
            + ")",
        ]
        lines += ["", "Evidence:"]
        for check, pointer in zip(verification.pointers, diagnosis.evidence, strict=True):
            mark = "✓" if check.verified else "✗"
            supports = f" [{pointer.supports}]" if pointer.supports else ""
            lines.append(
                f"  {mark} [{check.index}] {pointer.tool} {pointer.field} = {pointer.value[:120]!r}{supports}"
            )
            lines.append(f"        {pointer.interpretation}")
            if not check.verified:
                lines.append(f"        not verified: {check.reason}")
        lines += _story(diagnosis)
        lines += ["", "Remediation (nothing is run; every step needs approval):"]
        for number, step in enumerate(diagnosis.remediation_plan, 1):
            approval = ", needs approval" if step.requires_approval else ""
            lines.append(
                f"  {number}. {step.action} "
                f"(risk {step.risk_level}{approval}; evidence {step.evidence_basis})"
            )
            lines.append(f"     {step.details}")
            if step.command:
                lines.append(f"     $ {step.command}")
        if not diagnosis.remediation_plan:
            lines.append("  (none)")
        if diagnosis.refused:
            lines += ["", "Refused (did not verify; not part of the diagnosis):"]
            lines += [f"  ✗ {claim.claim}: {claim.reason}" for claim in diagnosis.refused]
    tools = [f"{r.tool} {r.status}" for r in result.tool_calls if r.tool in TOOL_NAMES]
    lines += [
        "",
        f"Tools called: {len(tools)} ({', '.join(tools) or 'none'})",
        f"LLM calls:    {len(result.llm_calls)}; tokens {result.total_tokens}",
        f"Wall time:    {result.wall_seconds:.1f} s",
    ]
    if result.failed_attempts:
        lines.append(f"Retried after: {'; '.join(str(e) for e in result.failed_attempts)}")
    return "\n".join(lines)


def _story(diagnosis: Diagnosis) -> list[str]:
    """Trigger, timeline, ruled-out hypotheses, resolved faults and gaps, each with the evidence it cites."""
    lines = []
    if diagnosis.trigger is not None:
        trigger = diagnosis.trigger
        lead = (
            f", {trigger.seconds_before_first_failure:g} s before the first failure"
            if trigger.seconds_before_first_failure is not None
            else ""
        )
        lines += [
            "",
            f"Trigger:     {trigger.event_name} by {trigger.identity or 'unknown'} at {trigger.time}{lead} "
            f"(evidence {trigger.evidence})",
        ]
    if diagnosis.timeline:
        lines += ["", "Timeline:"]
        lines += [f"  {e.time}  {e.kind:<13} {e.description} {e.evidence}" for e in diagnosis.timeline]
    if diagnosis.ruled_out:
        lines += ["", "Ruled out:"]
        lines += [f"  {r.fault_type}: {r.reason} {r.evidence}" for r in diagnosis.ruled_out]
    if diagnosis.resolved:
        lines += ["", "Resolved (not current):"]
        lines += [
            f"  {r.fault_type}: caused by {r.caused_by.event_name} at {r.caused_by.time}, undone by "
            f"{r.undone_by.event_name} at {r.undone_by.time}. {r.reason} {r.evidence}"
            for r in diagnosis.resolved
        ]
    if diagnosis.gaps:
        lines += ["", "Gaps:"]
        lines += [f"  {g.source}: {g.reason}" for g in diagnosis.gaps]
    return lines


def as_json(result: AgentResult, function_name: str) -> str:
    payload: dict[str, Any] = {
        "function_name": function_name,
        "stop_reason": result.stop_reason,
        "diagnosis": result.diagnosis.model_dump(mode="json") if result.diagnosis else None,
        "llm_calls": [r.model_dump(mode="json") for r in result.llm_calls],
        "tool_calls": [r.model_dump(mode="json") for r in result.tool_calls],
        "total_tokens": result.total_tokens,
        "failed_attempts": [{"category": e.category, "message": e.message} for e in result.failed_attempts],
        "wall_seconds": round(result.wall_seconds, 3),
    }
    return json.dumps(payload, indent=2)
