"""The independent judge of a diagnosis's grounding: every evidence pointer re-found, by this module's own
walker, in the tool answers as the MCP server sent them (its answer log), never in the supervisor's record
of them or its verification. A claim (a named fault, the trigger, a remediation step, a timeline entry, a
gap, a ruled-out fault, an impact figure, a resolved fault) is grounded when every pointer it cites is
re-found; a named fault also needs one re-found pointer that supports it.

The matching follows the published contract of a pointer (``EvidencePointer.value``): the value at the
path quoted verbatim, a string or a part of one (at least three characters), or the JSON of any other
value. It is written here, apart from the supervisor's checker, so that a fault in one is not repeated in
the other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

SHORTEST_PART: Final = 3  # a shorter part of a string (a letter, a digit) proves nothing by being in it


@dataclass(frozen=True)
class SentAnswer:
    """One answer as the server sent it."""

    tool: str
    arguments: dict[str, Any]
    answer: dict[str, Any]


def sent_answers(log: Path, incident_id: str) -> list[SentAnswer]:
    """The answers the server's answer log holds for ``incident_id`` (errors carry no evidence)."""
    if not log.exists():
        return []
    needle = json.dumps(incident_id)
    answers = []
    with log.open(encoding="utf-8") as lines:
        for line in lines:
            if needle not in line:  # most lines are other incidents': skip them unparsed
                continue
            entry = json.loads(line)
            if entry.get("incident_id") == incident_id and isinstance(entry.get("answer"), dict):
                answers.append(SentAnswer(entry["tool"], entry["arguments"], entry["answer"]))
    return answers


@dataclass(frozen=True)
class Finding:
    index: int
    found: bool
    reason: str = ""


@dataclass(frozen=True)
class Grounding:
    findings: list[Finding]
    ungrounded: list[str] = field(default_factory=list)  # the claims not grounded, and why

    @property
    def found(self) -> int:
        return sum(finding.found for finding in self.findings)

    @property
    def grounded(self) -> bool:
        return bool(self.findings) and self.found == len(self.findings) and not self.ungrounded

    def summary(self) -> str:
        text = f"{self.found}/{len(self.findings)} pointers re-found in the answers the server sent"
        missing = [f"#{f.index} ({f.reason})" for f in self.findings if not f.found]
        text += f"; not re-found: {missing}" if missing else ""
        return text + (f"; ungrounded claims: {self.ungrounded}" if self.ungrounded else "")


def judge(diagnosis: dict[str, Any], answers: list[SentAnswer]) -> Grounding:
    """Each pointer of ``diagnosis`` (as stored) looked for in ``answers``, and each claim's grounding."""
    pointers = list(diagnosis.get("evidence") or [])
    findings = [_find(index, pointer, answers) for index, pointer in enumerate(pointers)]
    found = {finding.index for finding in findings if finding.found}
    ungrounded = []
    for fault in diagnosis.get("fault_types") or []:
        if fault != "unknown" and not any(
            pointers[index].get("supports") == fault for index in found if index < len(pointers)
        ):
            ungrounded.append(f"fault {fault}: no re-found pointer supports it")
    for claim, cited in _claims(diagnosis):
        lost = sorted(set(cited) - found)
        if lost:
            ungrounded.append(f"{claim}: cites {lost}, not re-found")
    return Grounding(findings, ungrounded)


def _claims(diagnosis: dict[str, Any]) -> Iterator[tuple[str, list[int]]]:
    """Every claim that cites pointers, named by where it is in the diagnosis."""
    for number, step in enumerate(diagnosis.get("remediation_plan") or []):
        yield f"remediation_plan.{number}", list(step.get("evidence_basis") or [])
    if diagnosis.get("trigger"):
        yield "trigger", list(diagnosis["trigger"].get("evidence") or [])
    for part in ("timeline", "gaps", "ruled_out", "impact"):
        for number, entry in enumerate(diagnosis.get(part) or []):
            yield f"{part}.{number}", list(entry.get("evidence") or [])
    for number, entry in enumerate(diagnosis.get("resolved") or []):
        yield f"resolved.{number}", list(entry.get("evidence") or [])
        for end in ("caused_by", "undone_by"):
            yield f"resolved.{number}.{end}", list((entry.get(end) or {}).get("evidence") or [])


def _find(index: int, pointer: dict[str, Any], answers: list[SentAnswer]) -> Finding:
    mine = [sent.answer for sent in answers if sent.tool == pointer.get("tool")]
    if not mine:
        return Finding(index, False, f"the server sent no {pointer.get('tool')} answer")
    path = str(pointer.get("field", ""))
    reached = [node for answer in mine for node in values_at(answer, path.split("."))]
    if not reached:
        return Finding(index, False, f"no {pointer.get('tool')} answer has {path}")
    if any(quotes(str(pointer.get("value", "")), node) for node in reached):
        return Finding(index, True)
    return Finding(index, False, f"{path} holds another value")


def values_at(node: Any, parts: list[str]) -> Iterator[Any]:
    """The values ``parts`` lead to in ``node``: a key may itself hold dots (a policy's name can), so
    every way of joining the parts into keys is followed."""
    if not parts:
        yield node
        return
    if isinstance(node, list):
        if parts[0].isdigit() and int(parts[0]) < len(node):
            yield from values_at(node[int(parts[0])], parts[1:])
    elif isinstance(node, dict):
        for end in range(1, len(parts) + 1):
            key = ".".join(parts[:end])
            if key in node:
                yield from values_at(node[key], parts[end:])


def quotes(quote: str, node: Any) -> bool:
    quote = quote.strip()
    if isinstance(node, str):
        return quote == node or (len(quote) >= SHORTEST_PART and quote in node)
    try:
        parsed = json.loads(quote)
    except ValueError:
        return quote == str(node)  # a Python-style 'True' or '4.0'
    if isinstance(node, bool) or isinstance(parsed, bool):
        return parsed is node
    return bool(parsed == node)
