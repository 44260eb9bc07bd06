"""What the templates show, computed in Python: the evidence highlight, the timeline chart's geometry,
ages and costs. Every value that came from a tool response or a log line is escaped before any markup
is added around it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from markupsafe import Markup, escape

from supervisor.agent.prices import price_of

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


def highlighted(response: Any, value: str) -> Markup:
    """``response`` as indented JSON text, escaped, with every occurrence of ``value`` (as it appears
    inside the JSON text) wrapped in ``<mark>``. The split happens on the raw text and each piece is
    escaped on its own, so no markup from the data can survive."""
    text = json.dumps(response, indent=2, ensure_ascii=False, sort_keys=True)
    needles = [json.dumps(value, ensure_ascii=False)[1:-1], value]
    needle = next((n for n in needles if n and n in text), None)
    if needle is None:
        return escape(text)
    pieces = text.split(needle)
    mark = Markup("<mark>") + escape(needle) + Markup("</mark>")
    return mark.join(escape(piece) for piece in pieces)


def evidence_source(pointer: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The tool result a pointer quotes: the first answer of its tool whose text holds the value."""
    candidates = [r for r in results if r.get("tool") == pointer.get("tool")]
    value = str(pointer.get("value", ""))
    for result in candidates:
        text = json.dumps(result.get("result"), ensure_ascii=False)
        if value in text or json.dumps(value, ensure_ascii=False)[1:-1] in text:
            return result
    return candidates[0] if candidates else None


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
    """The chart's points: the diagnosis' timeline, the alarm (when the diagnosis has none) and the
    diagnosis itself, in time order, each placed on a time axis."""
    entries: list[tuple[str, str, str]] = [
        (str(e["kind"]), str(e["time"]), str(e["description"])) for e in (diagnosis or {}).get("timeline", [])
    ]
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


def timeline_height(marks: list[Mark]) -> int:
    return int(24 + len(marks) * _ROW)


def cost(model: str | None, prompt_tokens: int, completion_tokens: int) -> str:
    price = price_of(model or "", {})
    if price is None:
        return "n/a (no price known for this model)"
    return f"${price.cost(prompt_tokens, completion_tokens):.4f}"
