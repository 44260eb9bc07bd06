"""Checks a submitted diagnosis against the tool responses of the run: every claim must point at evidence.

The model cannot vouch for itself. A pointer is verified only if its tool was called in this run and
returned valid data, its dotted path resolves in one of those responses, and its value is what is there.
Every entry that cites pointers (remediation steps, trigger, timeline, gaps, ruled-out hypotheses, resolved
faults, impact figures) holds only if all it cites is verified; an impact figure must also cite the field that
counts it, with its value (``impact.problem``); a change it names (the trigger, what caused and what undid a
resolved fault) must be the event it cites, and what undid a resolved fault must put back what caused it
(``restoration``); a command must parse against the AWS service model and act only on the incident's own
resources (``targets``); and each fault type needs the support ``corroboration.POLICY`` asks for, from
pointers whose values mean it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from mcp_server.redaction import quotes_a_placeholder
from supervisor.diagnosis import corroboration, impact
from supervisor.diagnosis.causality import success_after
from supervisor.diagnosis.cli_commands import CommandError, parse_command
from supervisor.diagnosis.paths import canonical, resolve, value_matches
from supervisor.diagnosis.restoration import restoration_problem
from supervisor.diagnosis.targets import target_problem
from supervisor.schemas import (
    ChangeReference,
    DiagnosisSubmission,
    EntryCheck,
    EvidencePointer,
    PointerCheck,
    ResolvedFault,
    ToolCallRecord,
    Trigger,
    Verification,
)

Responses = Mapping[str, Sequence[Any]]  # tool name -> its validated responses, as JSON-ready data


def holding(pointer: EvidencePointer, responses: Responses) -> tuple[list[Any], str]:
    """The responses in which the pointer holds, or none and why it does not hold in any."""
    candidates = responses.get(pointer.tool, [])
    if not candidates:
        return [], f"{pointer.tool} was not called in this run, or returned no valid data"
    held, reasons = [], []
    for response in candidates:
        try:
            observed = resolve(response, pointer.field)
        except LookupError as error:
            reasons.append(f"field '{pointer.field}' does not resolve: {error}")
            continue
        if not value_matches(pointer.value, observed):
            shown = observed if isinstance(observed, str) else canonical(observed)
            reasons.append(f"value {pointer.value!r} is not what '{pointer.field}' holds ({shown[:200]!r})")
        elif problem := corroboration.log_problem(pointer, response, responses.get("get_lambda_config", [])):
            reasons.append(problem)
        else:
            held.append(response)
    return held, "" if held else "; ".join(dict.fromkeys(reasons))


def check_pointer(pointer: EvidencePointer, responses: Responses) -> str:
    """Empty when the pointer holds in at least one response of its tool, else why it does not."""
    return holding(pointer, responses)[1]


def _same_instant(left: Any, right: str) -> bool:
    try:
        return datetime.fromisoformat(str(left)) == datetime.fromisoformat(right)
    except ValueError:
        return False


def _cited_event(
    change: Trigger | ChangeReference, submission: DiagnosisSubmission, held: Sequence[Sequence[Any]]
) -> tuple[dict[str, Any] | None, str]:
    """The get_recent_changes event ``change`` cites among its pointers (that event name at that time),
    or None and the path of the first event it cites that is another (empty when it cites none)."""
    for index in change.evidence:
        pointer = submission.evidence[index]
        parts = pointer.field.split(".")
        if pointer.tool != "get_recent_changes" or parts[0] != "events" or len(parts) < 2:
            continue
        for response in held[index]:
            event = resolve(response, ".".join(parts[:2]))
            if event.get("event_name") == change.event_name and _same_instant(event.get("time"), change.time):
                return event, ""
        return None, f"evidence {index}, {'.'.join(parts[:2])}"
    return None, ""


def _change_problem(
    change: Trigger | ChangeReference,
    noun: str,
    submission: DiagnosisSubmission,
    held: Sequence[Sequence[Any]],
) -> str:
    """Empty when ``change`` cites, among its pointers, the get_recent_changes event it names (that event
    name at that time), else why not; ``noun`` names it in the reason ("a trigger")."""
    event, other = _cited_event(change, submission, held)
    if event is not None:
        return ""
    if other:
        return f"the event cited ({other}) is not a {change.event_name} at {change.time}"
    return f"{noun} must cite the change event it names: a get_recent_changes pointer into events.<n>"


def _restored_problem(
    fault: ResolvedFault, submission: DiagnosisSubmission, held: Sequence[Sequence[Any]]
) -> str:
    caused, _ = _cited_event(fault.caused_by, submission, held)
    undone, _ = _cited_event(fault.undone_by, submission, held)
    if caused is None or undone is None:
        return ""  # the entries of the two changes say why
    return restoration_problem(caused, undone)


def _cited_changes(submission: DiagnosisSubmission) -> dict[str, tuple[Trigger | ChangeReference, str]]:
    """Each entry that names a change, by where it is: the trigger and each resolved fault's two changes."""
    changes: dict[str, tuple[Trigger | ChangeReference, str]] = {}
    if submission.trigger is not None:
        changes["trigger"] = (submission.trigger, "a trigger")
    for n, fault in enumerate(submission.resolved):
        changes[f"resolved.{n}.caused_by"] = (fault.caused_by, "the change that caused a resolved fault")
        changes[f"resolved.{n}.undone_by"] = (fault.undone_by, "the change that undid a resolved fault")
    return changes


_ONLY_LOGS: Final[dict[str, str]] = {  # entries that may not rest on log text alone, by where they are
    "ruled_out": "log text cannot rule a hypothesis out: cite configuration, IAM, metrics or network",
    "resolved": "log text cannot show that a fault is over: cite configuration, IAM, metrics or network",
}


def _entry_checks(
    submission: DiagnosisSubmission, held: Sequence[Sequence[Any]], responses: Responses, function: str
) -> list[EntryCheck]:
    checks = []
    changes = _cited_changes(submission)
    for where, indices in submission.citations():
        unverified = [i for i in indices if not held[i]]
        reason = f"cites evidence {', '.join(map(str, unverified))}, not verified" if unverified else ""
        if not reason and where in changes:
            reason = _change_problem(*changes[where], submission, held)
        if not reason and where == "trigger" and submission.trigger is not None:
            when = datetime.fromisoformat(submission.trigger.time)
            reason = success_after(when, responses.get("get_recent_logs", []))
        only_logs = all(submission.evidence[i].tool == corroboration.LOG_TOOL for i in indices)
        kind = where.split(".")[0] if where.count(".") == 1 else ""  # ruled_out.<n>, resolved.<n>
        if not reason and kind in _ONLY_LOGS and only_logs:
            reason = _ONLY_LOGS[kind]
        if not reason and kind == "impact":
            reason = impact.problem(submission.impact[int(where.split(".")[1])], submission.evidence, held)
        if not reason and kind == "resolved":
            reason = _restored_problem(submission.resolved[int(where.split(".")[1])], submission, held)
        checks.append(EntryCheck(entry=where, verified=not reason, reason=reason))
    for number, step in enumerate(submission.remediation_plan):
        if step.command is not None:
            try:
                reason = target_problem(parse_command(step.command), function, responses)
            except CommandError as error:
                reason = f"the command does not parse: {error}"
            if not reason and quotes_a_placeholder(step.command):
                reason = (
                    "the command quotes a redacted value ([REDACTED:<kind>]), which the diagnosis cannot "
                    "know; leave that value for a person to fill in, in the step's text, not in a command"
                )
            checks.append(
                EntryCheck(entry=f"remediation_plan.{number}.command", verified=not reason, reason=reason)
            )
    return checks


def verify(
    submission: DiagnosisSubmission, responses: Responses, refinement_turns: int, function: str
) -> Verification:
    """Every claim of ``submission`` checked against the run's ``responses``, for the incident's
    ``function``."""
    held: list[list[Any]] = []
    pointers = []
    for index, pointer in enumerate(submission.evidence):
        found, reason = holding(pointer, responses)
        held.append(found)
        pointers.append(PointerCheck(index=index, verified=bool(found), reason=reason))
    support = corroboration.support(submission.fault_types, submission.evidence, held, responses)
    return Verification(
        pointers=pointers,
        entries=_entry_checks(submission, held, responses, function),
        support=support,
        unsupported_fault_types=[s.fault_type for s in support if s.missing],
        refinement_turns=refinement_turns,
        claimed_confidence=submission.confidence,
    )


def describe_failures(submission: DiagnosisSubmission, verification: Verification) -> str:
    """The refinement message: exactly which claims failed and why."""
    lines = ["The diagnosis was not accepted: some claims do not match the tool results of this run."]
    for check in verification.pointers:
        if not check.verified:
            pointer = submission.evidence[check.index]
            lines.append(f"- evidence {check.index} ({pointer.tool} '{pointer.field}'): {check.reason}")
    lines += [f"- {entry.entry}: {entry.reason}" for entry in verification.entries if not entry.verified]
    for fault in verification.support:
        for refused in fault.refused:
            pointer = submission.evidence[refused.index]
            lines.append(
                f"- evidence {refused.index} ({pointer.tool} '{pointer.field}') does not show "
                f"'{fault.fault_type}': {refused.reason} (cite it with supports=null, or a value that does)"
            )
        if fault.missing:
            lines.append(
                f"- fault type '{fault.fault_type}' is not corroborated: it {fault.missing} "
                f"(a verified pointer with supports='{fault.fault_type}'; log lines only add detail)"
            )
    lines.append(
        "Fix or remove these claims (quote values exactly as the tool returned them), drop fault types "
        "you cannot support, and call submit_diagnosis again."
    )
    return "\n".join(lines)


def observed_gaps(
    responses: Responses, calls: Sequence[ToolCallRecord], tools: Sequence[str]
) -> list[dict[str, str]]:
    """What the run could not read, as the code saw it: tools with no valid answer, and the gaps the
    answers report. Worded from the tool results alone, so that a replay finds the same ones."""
    gaps = []
    for tool in tools:
        if responses.get(tool):
            continue
        asked = any(call.tool == tool for call in calls)
        gaps.append(
            {
                "source": tool,
                "reason": "the call failed: nothing it reads was checked"
                if asked
                else "not called: nothing it reads was checked",
            }
        )
    for tool, answers in responses.items():
        for answer in answers:
            for gap in answer.get("gaps", []) if isinstance(answer, dict) else []:
                code = f" ({gap['error_code']})" if gap.get("error_code") else ""
                gaps.append({"source": f"{tool}: {gap['source']}", "reason": f"{gap['meaning']}{code}"})
            if isinstance(answer, dict) and answer.get("error"):
                gaps.append({"source": tool, "reason": str(answer["error"])})
    unique = {gap["source"] + "\n" + gap["reason"]: gap for gap in gaps}
    return list(unique.values())
