"""What the templates show, computed in Python: the evidence highlight, the timeline chart's geometry,
ages and costs. Every value that came from a tool response or a log line is escaped before any markup
is added around it."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from markupsafe import Markup, escape
from pydantic import ValidationError

from supervisor.agent.prices import price_of
from supervisor.diagnosis.paths import quoted_span, resolve, value_matches, walk
from supervisor.incident.outgoing_text import shown_controls
from supervisor.schemas import TokenUsage

TIMELINE_ORDER: Final[dict[str, int]] = {
    "change": 0,
    "first_failure": 1,
    "failure": 2,
    "limit": 3,
    "observation": 4,
    "alarm": 5,
    "diagnosis": 6,
}


def parse_time(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def age(text: object, now: datetime) -> str:
    moment = parse_time(text)
    if moment is None:
        return "-"
    seconds = max(0, int((now - moment).total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def shown(text: str) -> Markup:
    """``text`` escaped, its bidirectional and other control characters shown as ``[U+XXXX]``."""
    return escape(shown_controls(text))


def _mark(text: str) -> Markup:
    return Markup("<mark>") + shown(text) + Markup("</mark>")


def _replaced(data: Any, steps: list[str | int], placeholder: str) -> Any:
    """``data`` with the value at ``steps`` replaced (the containers on the way copied, the rest shared)."""
    if not steps:
        return placeholder
    head, *rest = steps
    copy: Any = list(data) if isinstance(data, list) else dict(data)
    copy[head] = _replaced(data[head], rest, placeholder)
    return copy


def _marked_value(text: str, value: Any, quoted: str) -> Markup:
    """The value's JSON ``text`` marked: only the quoted part of a string the quote is a part of (where the
    code's check finds it), else all of it."""
    span = quoted_span(quoted, value) if isinstance(value, str) else None
    if span is None or span == (0, len(value)):
        return _mark(text)
    start, end = span
    before, part, after = (
        json.dumps(piece, ensure_ascii=False)[1:-1]
        for piece in (value[:start], value[start:end], value[end:])
    )
    return shown('"' + before) + _mark(part) + shown(after + '"')


def highlighted(response: Any, field: str, quoted: str) -> Markup:
    """``response`` as indented JSON text, escaped, with the value at ``field`` (the pointer's path, read
    as the code's check reads it) in ``<mark>``: nothing else, even where the same text occurs. Every
    piece is escaped on its own, so no markup from the data can survive; no mark when the path does not
    resolve."""
    try:
        steps, value = walk(response, field)
    except LookupError:
        return shown(_json(response))
    placeholder = uuid.uuid4().hex  # stands in for the value, so json.dumps places it
    before, after = _json(_replaced(response, steps, placeholder)).split(f'"{placeholder}"')
    line = before.rsplit("\n", 1)[-1]
    indent = line[: len(line) - len(line.lstrip(" "))]
    text = _json(value).replace("\n", "\n" + indent)
    return shown(before) + _marked_value(text, value, quoted) + shown(after)


def evidence_source(pointer: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The tool result a pointer quotes: the first answer of its tool whose field holds the quote (where
    the code's check finds it), else the first that has the field, else the tool's first answer."""
    candidates = [r for r in results if r.get("tool") == pointer.get("tool")]
    field, quoted = str(pointer.get("field", "")), str(pointer.get("value", ""))
    having = []
    for result in candidates:
        try:
            observed = resolve(result.get("result"), field)
        except LookupError:
            continue
        if value_matches(quoted, observed):
            return result
        having.append(result)
    first = having or candidates
    return first[0] if first else None


@dataclass(frozen=True)
class Mark:
    kind: str
    time: str
    description: str
    x: float
    y: float
    offset: str


WIDTH: Final = 760
_LEFT, _RIGHT, _ROW = 16.0, 300.0, 34.0


def timeline(
    diagnosis: dict[str, Any] | None, state: dict[str, Any], context: dict[str, Any] | None
) -> list[Mark]:
    """The chart's points: the diagnosis' timeline, the changes behind its resolved faults, the alarm (when
    the diagnosis has none) and the diagnosis itself, in time order, each placed on a time axis."""
    entries: list[tuple[str, str, str]] = [
        (str(e["kind"]), str(e["time"]), str(e["description"])) for e in (diagnosis or {}).get("timeline", [])
    ]
    entries += _resolved_changes(diagnosis, entries)
    if not any(kind == "alarm" for kind, _, _ in entries) and state.get("observed_at"):
        entries.append(("alarm", str(state["observed_at"]), f"{state.get('source', 'signal')} received"))
    if context is not None and context.get("recorded_at"):
        entries.append(("diagnosis", str(context["recorded_at"]), f"recorded ({state.get('status')})"))
    timed = [(parse_time(t), kind, t, d) for kind, t, d in entries]
    points = sorted(
        ((moment, kind, t, d) for moment, kind, t, d in timed if moment is not None),
        key=lambda p: (p[0], TIMELINE_ORDER.get(p[1], 9)),
    )
    if not points:
        return []
    first, last = points[0][0], points[-1][0]
    span = max((last - first).total_seconds(), 1e-9)
    marks = []
    for row, (moment, kind, text, description) in enumerate(points):
        seconds = (moment - first).total_seconds()
        x = _LEFT + (_RIGHT - _LEFT) * seconds / span
        marks.append(Mark(kind, text, description, round(x, 1), 24 + row * _ROW, f"+{seconds:.1f}s"))
    return marks


def _resolved_changes(
    diagnosis: dict[str, Any] | None, entries: list[tuple[str, str, str]]
) -> list[tuple[str, str, str]]:
    """The changes that caused and undid each resolved fault, as change points, but for those the
    diagnosis' timeline already has (a change at the same instant)."""
    placed = {parse_time(time) for kind, time, _ in entries if kind == "change"}
    added = []
    for fault in (diagnosis or {}).get("resolved") or []:
        for key, verb in (("caused_by", "caused"), ("undone_by", "undid")):
            change = fault.get(key) or {}
            if parse_time(change.get("time")) not in placed:
                description = f"{change.get('event_name')} {verb} {fault.get('fault_type')} (resolved)"
                added.append(("change", str(change.get("time")), description))
    return added


def timeline_height(marks: list[Mark]) -> int:
    return int(24 + len(marks) * _ROW)


def token_usage(context: dict[str, Any]) -> list[TokenUsage]:
    """Each model call's tokens as the audit record stored them; an older record's totals as one call."""
    stored = context.get("token_usage")
    if isinstance(stored, str):
        try:
            return [TokenUsage.model_validate(call) for call in json.loads(stored)]
        except (ValueError, ValidationError):
            pass
    prompt, completion = int(context.get("prompt_tokens", 0)), int(context.get("completion_tokens", 0))
    return [TokenUsage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)]


def cost(model: str | None, usage: list[TokenUsage]) -> str:
    """What the model calls cost, prompt-cache reads and writes at their prices."""
    price = price_of(model or "", {})
    if price is None:
        return "n/a (no price known for this model)"
    return f"${sum(price.cost_of(call) for call in usage):.4f}"
