"""Reading a tool response at a dotted path, and whether a quoted value is what is there."""

from __future__ import annotations

import json
from typing import Any

MIN_QUOTE = 3  # a quoted part shorter than this (a letter, a digit) proves nothing by being contained


def resolve(data: Any, path: str) -> Any:
    """The value at ``path`` (dotted, list indices as segments) or raise ``LookupError`` saying where it
    stopped. Object keys may themselves contain dots (policy names can): the longest key that matches wins."""
    return walk(data, path)[1]


def walk(data: Any, path: str) -> tuple[list[str | int], Any]:
    """The keys and indices ``path`` names, step by step, and the value there; ``LookupError`` as for
    ``resolve``."""
    parts = path.split(".")
    position = 0
    current = data
    steps: list[str | int] = []
    while position < len(parts):
        if isinstance(current, list):
            segment = parts[position]
            if not segment.isdigit():
                raise LookupError(f"'{segment}' is not a list index (the list has {len(current)} items)")
            if int(segment) >= len(current):
                raise LookupError(f"index {segment} is out of range (the list has {len(current)} items)")
            current = current[int(segment)]
            steps.append(int(segment))
            position += 1
        elif isinstance(current, dict):
            for end in range(len(parts), position, -1):
                key = ".".join(parts[position:end])
                if key in current:
                    current = current[key]
                    steps.append(key)
                    position = end
                    break
            else:
                keys = ", ".join(sorted(current)[:12]) or "none"
                raise LookupError(f"no key '{parts[position]}' (keys there: {keys})")
        else:
            raise LookupError(f"'{parts[position]}' goes below a {type(current).__name__} value")
    return steps, current


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _same_number(left: Any, right: Any) -> bool:
    """'4' quotes 4.0: numbers (not booleans) compare by value."""
    numbers = (int, float)
    return all(isinstance(v, numbers) and not isinstance(v, bool) for v in (left, right)) and left == right


def value_matches(quoted: str, observed: Any) -> bool:
    """Equal (as text or as JSON: '0', 'false', 'null' and '[]' quote 0, False, None and an empty list;
    '4' quotes 4.0), or a verbatim part of its string form at least ``MIN_QUOTE`` characters long."""
    quoted = quoted.strip()
    text = observed if isinstance(observed, str) else canonical(observed)
    if quoted == text or (isinstance(observed, bool) and quoted.lower() == text):
        return True
    try:
        parsed = json.loads(quoted)
    except json.JSONDecodeError:
        parsed = None
    else:
        if canonical(parsed) == canonical(observed) or _same_number(parsed, observed):
            return True
    return len(quoted) >= MIN_QUOTE and quoted in text
