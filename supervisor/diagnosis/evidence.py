"""Checks a submitted diagnosis against the tool responses of the run: every pointer must resolve and match.

The model cannot vouch for itself. A pointer is verified only if its tool was called in this run and
returned valid data, its dotted path resolves in one of those responses, and its value is what is there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from supervisor.schemas import DiagnosisSubmission, EvidencePointer, PointerCheck, Verification

Responses = Mapping[str, Sequence[Any]]  # tool name -> its validated responses, as JSON-ready data

_MISSING = object()


def resolve(data: Any, path: str) -> Any:
    """The value at ``path`` (dotted, list indices as segments) or raise ``LookupError`` saying where it
    stopped. Object keys may themselves contain dots (policy names can): the longest key that matches wins."""
    parts = path.split(".")
    position = 0
    current = data
    while position < len(parts):
        if isinstance(current, list):
            segment = parts[position]
            if not segment.isdigit():
                raise LookupError(f"'{segment}' is not a list index (the list has {len(current)} items)")
            if int(segment) >= len(current):
                raise LookupError(f"index {segment} is out of range (the list has {len(current)} items)")
            current = current[int(segment)]
            position += 1
        elif isinstance(current, dict):
            for end in range(len(parts), position, -1):
                key = ".".join(parts[position:end])
                if key in current:
                    current = current[key]
                    position = end
                    break
            else:
                keys = ", ".join(sorted(current)[:12]) or "none"
                raise LookupError(f"no key '{parts[position]}' (keys there: {keys})")
        else:
            raise LookupError(f"'{parts[position]}' goes below a {type(current).__name__} value")
    return current


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


MIN_QUOTE = 3  # a quoted part shorter than this (a letter, a digit) proves nothing by being contained


def value_matches(quoted: str, observed: Any) -> bool:
    """Equal (as text or as JSON: '0', 'false', 'null' and '[]' quote 0, False, None and an empty list),
    or a verbatim part of its string form at least ``MIN_QUOTE`` characters long."""
    quoted = quoted.strip()
    text = observed if isinstance(observed, str) else _canonical(observed)
    if quoted == text or (isinstance(observed, bool) and quoted.lower() == text):
        return True
    try:
        if _canonical(json.loads(quoted)) == _canonical(observed):
            return True
    except json.JSONDecodeError:
        pass
    return len(quoted) >= MIN_QUOTE and quoted in text


def check_pointer(pointer: EvidencePointer, responses: Responses) -> str:
    """Empty when the pointer holds in at least one response of its tool, else why it does not."""
    candidates = responses.get(pointer.tool, [])
    if not candidates:
        return f"{pointer.tool} was not called in this run, or returned no valid data"
    reasons = []
    for response in candidates:
        try:
            observed = resolve(response, pointer.field)
        except LookupError as error:
            reasons.append(f"field '{pointer.field}' does not resolve: {error}")
            continue
        if value_matches(pointer.value, observed):
            return ""
        shown = observed if isinstance(observed, str) else _canonical(observed)
        reasons.append(f"value {pointer.value!r} is not what '{pointer.field}' holds ({shown[:200]!r})")
    return "; ".join(dict.fromkeys(reasons))


def verify(submission: DiagnosisSubmission, responses: Responses, refinement_turns: int) -> Verification:
    checks = []
    for index, pointer in enumerate(submission.evidence):
        reason = check_pointer(pointer, responses)
        checks.append(PointerCheck(index=index, verified=not reason, reason=reason))
    backed = {p.supports for p, c in zip(submission.evidence, checks, strict=True) if c.verified}
    unsupported = [f for f in submission.fault_types if f != "unknown" and f not in backed]
    return Verification(
        pointers=checks,
        unsupported_fault_types=unsupported,
        refinement_turns=refinement_turns,
        claimed_confidence=submission.confidence,
    )


def capped_confidence(verification: Verification) -> float:
    """The submitted confidence, never above the share of pointers that checked out, 0 with none, and at
    most 0.3 while a reported fault type has no verified support."""
    total = len(verification.pointers)
    if total == 0 or verification.verified_count == 0:
        return 0.0
    cap = verification.verified_count / total
    if verification.unsupported_fault_types:
        cap = min(cap, 0.3)
    return round(min(verification.claimed_confidence, cap), 3)


def describe_failures(submission: DiagnosisSubmission, verification: Verification) -> str:
    """The refinement message: exactly which claims failed and why."""
    lines = ["The diagnosis was not accepted: some claims do not match the tool results of this run."]
    for check in verification.pointers:
        if not check.verified:
            pointer = submission.evidence[check.index]
            lines.append(f"- evidence {check.index} ({pointer.tool} '{pointer.field}'): {check.reason}")
    for fault in verification.unsupported_fault_types:
        lines.append(f"- fault type '{fault}': no verified evidence pointer has supports='{fault}'")
    lines.append(
        "Fix or remove these pointers (quote values exactly as the tool returned them), drop fault types "
        "you cannot support, and call submit_diagnosis again."
    )
    return "\n".join(lines)
