"""The independent judge of a diagnosis's grounding: every evidence pointer re-found, by this module's own
walker, in the tool answers as the MCP server sent them (its answer log), never in the supervisor's record
of them or its verification. A claim (a named fault, the trigger, a remediation step, a timeline entry, a
gap, a ruled-out fault, an impact figure, a resolved fault) is grounded when every pointer it cites is
re-found; a named fault also needs a re-found pointer whose value *means* that fault (the table below).
Everything here is written from the published contract and the fault classes, apart from the supervisor's
checker (nothing is imported from it), so that a fault in one is not repeated in the other.

The pointer rule. A pointer ``{tool, field, value, ...}`` names a dotted path into one of that tool's
answers (list indices as segments; a dict key may hold dots, so every way of joining the segments into keys
is followed). Its ``value`` (the quote) matches the value V found there when:

- V is a number, boolean, null, list or object: the quote, parsed as JSON, equals V by value. Numbers
  compare numerically (``"4"`` quotes 4.0, ``"4.0"`` quotes 4), never a digit run inside one (``"139"``
  does not quote 1392, ``"1"`` not 1.5). A boolean is never a number: ``true``/``false`` (or Python's
  ``True``/``False``) quote only booleans, ``null`` (or ``None``) only null. A list or object is quoted
  whole: equal after parsing, key order free, a JSON string inside equal to the string in V.
- V is a string: the quote equals V whole (both stripped of surrounding whitespace; a JSON string literal of
  V, ``"\\"Disabled\\""``, counts as whole too), or the stripped quote is a part of V at least 8 characters
  long that starts and ends on token boundaries. Tokens are maximal runs of letters, digits (``str.isalnum``)
  and ``_``, where a ``.`` or ``,`` with a digit on both sides joins the digits (``1392.5``, ``1,392`` and
  ``3.00`` are one token each); a part ``[i, j)`` is on boundaries when neither ``i`` nor ``j`` falls
  strictly inside a token. One bounded occurrence suffices; case counts. So ``AccessDenied`` quotes
  ``An error occurred (AccessDenied) when``, but ``ccessDenied`` (starts inside a token), ``Err`` (too short)
  and ``Duration: 3003`` of ``Duration: 3003.12 ms`` (ends inside ``3003.12``) do not; a quote found only
  in a sibling field is not found.

Support. A named fault (not ``unknown``) is grounded only when a re-found pointer with ``supports`` equal
to it says the fault by the judge's own table (:mod:`chaos.drill.value_meanings`).

Claims beyond pointers: a remediation command that quotes a redacted placeholder, or whose
``--function-name`` names another function than the incident's, and a trigger that lies before a success
(an invocation that succeeded more than ``TRIGGER_SLACK_SECONDS`` after it and before the first failure
after it) are ungrounded; so is a precedent whose ``field`` (``incidents.N``) holds another incident id, or a
recurrence whose ``field`` (``patterns.N``) another fault type, in the get_incident_history answers sent.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from chaos.drill.sent_answers import HISTORY, LOGS, SentAnswer, reached
from chaos.drill.value_meanings import MEANINGS, Meaning, Spot

SHORTEST_PART: Final = 8  # a shorter part of a string ("Err", "123") proves nothing by being in it
TRIGGER_SLACK_SECONDS: Final = 10.0  # a success this close after the trigger may have started before it
SUCCESS: Final = "no_error_seen"  # the outcome of an invocation that succeeded


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


# --- the pointer rule -------------------------------------------------------------------------------------

_NOT_JSON: Final = object()
_PYTHON_LITERALS: Final[dict[str, Any]] = {"True": True, "False": False, "None": None}


def quotes(quote: str, node: Any) -> bool:
    """Whether ``quote`` quotes ``node`` by the pointer rule (the module's docstring)."""
    if isinstance(node, str):
        return _quotes_string(quote, node)
    return _same(_parsed(quote), node)


def _parsed(quote: str) -> Any:
    text = quote.strip()
    if text in _PYTHON_LITERALS:
        return _PYTHON_LITERALS[text]
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _same(quoted: Any, node: Any) -> bool:
    """Equality by value: numbers numerically, a boolean never a number, lists and objects element-wise."""
    if isinstance(quoted, bool) or isinstance(node, bool):
        return isinstance(quoted, bool) and isinstance(node, bool) and quoted is node
    if isinstance(quoted, int | float) and isinstance(node, int | float):
        return not (math.isnan(quoted) or math.isnan(node)) and quoted == node
    if isinstance(quoted, list) and isinstance(node, list):
        return len(quoted) == len(node) and all(_same(a, b) for a, b in zip(quoted, node, strict=True))
    if isinstance(quoted, dict) and isinstance(node, dict):
        return quoted.keys() == node.keys() and all(_same(quoted[key], node[key]) for key in quoted)
    if quoted is None or node is None:
        return quoted is None and node is None
    return isinstance(quoted, str) and isinstance(node, str) and quoted == node


def _quotes_string(quote: str, text: str) -> bool:
    part = quote.strip()
    if part == text.strip():
        return True
    literal = _parsed(quote)
    if isinstance(literal, str) and literal.strip() == text.strip():
        return True
    if len(part) < SHORTEST_PART:
        return False
    start = text.find(part)
    while start >= 0:
        if not _inside_token(text, start) and not _inside_token(text, start + len(part)):
            return True
        start = text.find(part, start + 1)
    return False


def _token_char(text: str, index: int) -> bool:
    """Whether ``text[index]`` is in a token: a letter, a digit, ``_``, or a ``.``/``,`` between digits."""
    char = text[index]
    if char.isalnum() or char == "_":
        return True
    return (
        char in ".," and 0 < index < len(text) - 1 and text[index - 1].isdigit() and text[index + 1].isdigit()
    )


def _inside_token(text: str, position: int) -> bool:
    """Whether the cut before ``text[position]`` falls strictly inside a token."""
    return 0 < position < len(text) and _token_char(text, position - 1) and _token_char(text, position)


# --- the judge --------------------------------------------------------------------------------------------


def judge(diagnosis: dict[str, Any], answers: list[SentAnswer], function: str | None = None) -> Grounding:
    """Each pointer of ``diagnosis`` (as stored) looked for in ``answers``, and each claim's grounding;
    with ``function`` (the incident's), remediation commands must target it."""
    pointers = [p if isinstance(p, dict) else {} for p in diagnosis.get("evidence") or []]
    reached = [_quoted_spots(pointer, answers) for pointer in pointers]
    findings = [
        _finding(index, pointer, spots, answers)
        for index, (pointer, spots) in enumerate(zip(pointers, reached, strict=True))
    ]
    found = {finding.index for finding in findings if finding.found}
    ungrounded = []
    for fault in diagnosis.get("fault_types") or []:
        if fault != "unknown":
            ungrounded += _support(str(fault), pointers, reached)
    for claim, cited in _claims(diagnosis):
        lost = sorted(set(cited) - found)
        if lost:
            ungrounded.append(f"{claim}: cites {lost}, not re-found")
    ungrounded += _commands(diagnosis, function)
    ungrounded += _trigger(diagnosis, answers)
    ungrounded += _recalled(diagnosis, answers)
    return Grounding(findings, ungrounded)


def _quoted_spots(pointer: dict[str, Any], answers: list[SentAnswer]) -> list[Spot]:
    """The values at the pointer's path, in the answers of its tool, that its quote matches."""
    parts = str(pointer.get("field", "")).split(".")
    quote = str(pointer.get("value", ""))
    return [
        Spot(sent.tool, sent.answer, path, value, answers)
        for sent in answers
        if sent.tool == pointer.get("tool")
        for path, value in reached(sent.answer, parts)
        if quotes(quote, value)
    ]


def _finding(index: int, pointer: dict[str, Any], spots: list[Spot], answers: list[SentAnswer]) -> Finding:
    if spots:
        return Finding(index, True)
    tool, path = pointer.get("tool"), str(pointer.get("field", ""))
    mine = [sent.answer for sent in answers if sent.tool == tool]
    if not mine:
        return Finding(index, False, f"the server sent no {tool} answer")
    if not any(True for answer in mine for _ in reached(answer, path.split("."))):
        return Finding(index, False, f"no {tool} answer has {path}")
    return Finding(index, False, f"{path} holds another value")


def _support(fault: str, pointers: list[dict[str, Any]], reached: list[list[Spot]]) -> list[str]:
    """Why ``fault`` is not grounded: pointers that cite it but whose value does not show it, or no
    re-found pointer that grounds it by itself."""
    table = MEANINGS.get(fault, ())
    problems, decisive = [], False
    for index, (pointer, spots) in enumerate(zip(pointers, reached, strict=True)):
        if pointer.get("supports") != fault or not spots:
            continue
        judged = [(meaning, spot) for spot in spots for meaning in _meaning(table, spot)]
        if not judged:
            continue  # not in the fault's table: context, it neither grounds nor refutes
        shown = [(meaning, spot) for meaning, spot in judged if meaning.holds(spot)]
        if shown:
            decisive = decisive or any(meaning.grounds(spot) for meaning, spot in shown)
            continue
        value = str(pointer.get("value"))
        value = value if len(value) <= 80 else value[:77] + "..."
        problems.append(
            f"fault {fault}: pointer #{index} ({pointer.get('tool')} {pointer.get('field')} = {value}) "
            f"does not show it: {judged[0][0].means}"
        )
    if not decisive:
        problems.append(f"fault {fault}: no re-found pointer supports it")
    return problems


def _meaning(table: tuple[Meaning, ...], spot: Spot) -> list[Meaning]:
    """The first entry of ``table`` that covers ``spot``, if any."""
    return next(([meaning] for meaning in table if meaning.covers(spot.tool, spot.path)), [])


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


# --- claims beyond pointers -------------------------------------------------------------------------------

_PLACEHOLDER: Final = re.compile(r"\[REDACTED:[^\]\s]*\]")


def _commands(diagnosis: dict[str, Any], function: str | None) -> list[str]:
    """Remediation commands that set a redacted placeholder, or that target another function."""
    problems = []
    for number, step in enumerate(diagnosis.get("remediation_plan") or []):
        command = step.get("command") if isinstance(step, dict) else None
        if not isinstance(command, str) or not command.strip():
            continue
        claim = f"remediation_plan.{number}.command"
        placeholder = _PLACEHOLDER.search(command)
        if placeholder:
            problems.append(f"{claim}: quotes the redacted placeholder {placeholder.group()}")
        if function is None:
            continue
        try:
            words = shlex.split(command)
        except ValueError as error:
            problems.append(f"{claim}: cannot be read as a shell command ({error})")
            continue
        strangers = sorted({name for name in _target_functions(words) if name != function})
        if strangers:
            problems.append(f"{claim}: targets {strangers}, not the incident's function {function}")
    return problems


def _target_functions(words: list[str]) -> Iterator[str]:
    """The function names a command's ``--function-name`` options give (an ARN or ``name:qualifier`` by
    its function name)."""
    for number, word in enumerate(words):
        if word == "--function-name" and number + 1 < len(words):
            yield _function_name(words[number + 1])
        elif word.startswith("--function-name="):
            yield _function_name(word.removeprefix("--function-name="))


def _function_name(target: str) -> str:
    if ":function:" in target:  # arn:aws:lambda:region:account:function:name[:qualifier], or a partial ARN
        target = target.split(":function:", 1)[1]
    return target.split(":", 1)[0]


def _trigger(diagnosis: dict[str, Any], answers: list[SentAnswer]) -> list[str]:
    """The trigger, when an invocation succeeded after it (by more than the slack) and before the first
    failure after it: the change did not break the function. With no failure after it, nothing is said."""
    trigger = diagnosis.get("trigger")
    if not isinstance(trigger, dict) or (when := _time(trigger.get("time"))) is None:
        return []
    after = sorted(
        (
            (started, invocation)
            for sent in answers
            if sent.tool == LOGS
            for invocation in sent.answer.get("invocations") or []
            if isinstance(invocation, dict)
            and invocation.get("outcome")
            and (started := _time(invocation.get("started"))) is not None
            and started > when
        ),
        key=lambda run: run[0],
    )
    failures = [started for started, invocation in after if invocation["outcome"] != SUCCESS]
    if not failures:
        return []
    for started, invocation in after:
        late = (started - when).total_seconds() > TRIGGER_SLACK_SECONDS
        if invocation["outcome"] == SUCCESS and late and started < failures[0]:
            return [
                f"trigger: {trigger.get('time')} lies before a success: invocation "
                f"{invocation.get('request_id')} started {invocation.get('started')} and succeeded, before "
                f"the first failure after it ({failures[0].isoformat()})"
            ]
    return []


def _recalled(diagnosis: dict[str, Any], answers: list[SentAnswer]) -> list[str]:
    """Precedents whose ``field`` does not hold their incident id, and a recurrence whose ``field`` does
    not hold its fault type, in the get_incident_history answers the server sent."""
    history = [sent.answer for sent in answers if sent.tool == HISTORY]
    cited = [
        (f"precedents.{n}", p.get("field"), "incident_id", p.get("incident_id"))
        for n, p in enumerate(diagnosis.get("precedents") or [])
        if isinstance(p, dict)
    ]
    recurrence = diagnosis.get("recurrence")
    if isinstance(recurrence, dict):
        cited.append(("recurrence", recurrence.get("field"), "fault_type", recurrence.get("fault_type")))
    problems = []
    for claim, where, key, value in cited:
        parts = [*str(where).split("."), key]
        if not any(found == value for answer in history for _, found in reached(answer, parts)):
            problems.append(
                f"{claim}: {where}.{key} holds no {value!r} in a {HISTORY} answer the server sent"
            )
    return problems


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
