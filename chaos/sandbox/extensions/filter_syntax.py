"""What every CloudWatch Logs filter pattern form shares: how a pattern is refused, quoted strings and
``*`` wildcards. The forms themselves are in :mod:`filter_patterns` (terms) and :mod:`filter_json`.

Two refusals, both answered as ``InvalidParameterException``: a pattern CloudWatch Logs itself refuses
(with the wording AWS answers, as users have reported it), and documented syntax the sandbox does not
implement (saying so, so that a filtered read never silently returns every event).
"""

from __future__ import annotations

from collections.abc import Callable

Matcher = Callable[[str], bool]

INVALID = "Invalid filter pattern"
UNCLOSED_BRACE = "If a filter pattern starts with '{' it must end with '}'"


class PatternRefused(ValueError):
    """A filter pattern the emulator refuses; ``str(error)`` is the message the caller receives."""


class InvalidPattern(PatternRefused):
    """A pattern CloudWatch Logs refuses too."""


class UnsupportedPattern(PatternRefused):
    """Documented syntax the sandbox's emulator does not implement."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"Filter pattern not supported by the sandbox's CloudWatch Logs emulator: {what} "
            "(see docs/sandbox.md, 'Filter patterns')"
        )


def invalid_characters(term: str) -> InvalidPattern:
    return InvalidPattern(f"Invalid character(s) in term '{term}'")


def read_quoted(text: str, start: int) -> tuple[str, int]:
    """The string quoted at ``text[start] == '"'`` (a backslash escapes the next character) and the
    index after its closing quote."""
    out: list[str] = []
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            out.append(text[index + 1])
            index += 2
        elif char == '"':
            return "".join(out), index + 1
        else:
            out.append(char)
            index += 1
    raise InvalidPattern(INVALID)


def wildcard(value: str) -> Callable[[str], bool]:
    """CloudWatch's string match: ``*`` alone matches any value, a leading or trailing ``*`` any text
    before or after; a ``*`` elsewhere is itself ("Ev*ent will only match the actual string Ev*ent")."""
    if value == "*":
        return lambda _: True
    prefix, suffix = value.startswith("*"), value.endswith("*")
    core = value[1 if prefix else 0 : len(value) - 1 if suffix else len(value)]
    if prefix and suffix:
        return lambda text: core in text
    if prefix:
        return lambda text: text.endswith(core)
    if suffix:
        return lambda text: text.startswith(core)
    return lambda text: text == core
