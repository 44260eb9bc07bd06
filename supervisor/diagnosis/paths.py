"""Reading a tool response at a dotted path, and whether a quoted value is what is there.

A pointer quotes a whole value. A number, boolean, null, list or object is quoted whole and compared by
value: ``4`` quotes ``4.0``, ``true`` a boolean true, ``[]`` an empty list, and a run of digits inside a
number quotes nothing (``139`` is not 1392). A string is quoted whole, or by a part of it at least
``MIN_PART`` characters long that starts and ends on token boundaries: an error code, an ARN, a request
id, a sentence of a log line. A token is a run of letters, digits and ``_``, a ``.`` or ``,`` between two
digits joining them (``1392.5``, ``1,392``), so a part never cuts a word, a number or an identifier. Any
one bounded occurrence will do; the comparison is case-sensitive.
"""

from __future__ import annotations

import json
from typing import Any

MIN_PART = 8  # a shorter part of a string ('Err', 'ion', '200') proves nothing by being in it


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


def _token_char(text: str, index: int) -> bool:
    char = text[index]
    if char.isalnum() or char == "_":
        return True
    return (
        char in ".," and 0 < index < len(text) - 1 and text[index - 1].isdigit() and text[index + 1].isdigit()
    )


def _inside_token(text: str, position: int) -> bool:
    """Whether ``position`` (between two characters) falls inside a token."""
    return 0 < position < len(text) and _token_char(text, position - 1) and _token_char(text, position)


def quoted_span(quoted: str, text: str) -> tuple[int, int] | None:
    """Where ``quoted`` stands in the string ``text`` as the rule reads it: the whole string, or its
    first part on token boundaries at least ``MIN_PART`` characters long; None when it does not."""
    part = quoted.strip()
    if not part:
        return None
    if part == text.strip():
        start = text.index(part)
        return start, start + len(part)
    if len(part) < MIN_PART:
        return None
    start = text.find(part)
    while start >= 0:
        end = start + len(part)
        if not _inside_token(text, start) and not _inside_token(text, end):
            return start, end
        start = text.find(part, start + 1)
    return None


def excerpt(text: str, limit: int) -> str:
    """The start of ``text`` that quotes it, at most ``limit`` characters: all of it when it fits, else
    cut back to a token boundary (empty when that leaves less than ``MIN_PART`` characters)."""
    whole = text.strip()
    if len(whole) <= limit:
        return whole
    end = limit
    while end > 0 and _inside_token(whole, end):
        end -= 1
    cut = whole[:end].rstrip()
    return cut if len(cut) >= MIN_PART else ""


def _same(left: Any, right: Any) -> bool:
    """Equal by value: numbers numerically (a boolean is not a number), lists and objects member by member."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    return type(left) is type(right) and bool(left == right)


_PYTHON_LITERALS = {"True": True, "False": False, "None": None}


def _parsed(quoted: str) -> tuple[bool, Any]:
    """(True, the value) when the quote reads as JSON (or a Python-style True, False, None)."""
    text = quoted.strip()
    if text in _PYTHON_LITERALS:
        return True, _PYTHON_LITERALS[text]
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def value_matches(quoted: str, observed: Any) -> bool:
    """Whether ``quoted`` quotes ``observed`` under the rule of this module's docstring."""
    if isinstance(observed, str):
        if quoted_span(quoted, observed) is not None:
            return True
        readable, parsed = _parsed(quoted)
        return readable and isinstance(parsed, str) and parsed == observed
    readable, parsed = _parsed(quoted)
    return readable and _same(parsed, observed)
