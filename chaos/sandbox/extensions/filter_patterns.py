"""CloudWatch Logs filter patterns, as AWS documents them ("Filter pattern syntax for metric filters,
subscription filters, filter log events, and Live Tail"): which form a pattern is, and the term form.

- Empty (or blank): every event.
- ``{ ... }``: a JSON pattern (:mod:`filter_json`); a pattern that starts with ``{`` must end with ``}``.
- ``[ ... ]`` (space-delimited) and ``%...%`` (regular expressions): refused as not implemented.
- Anything else: terms, case-sensitive substrings of the message. A bare term is letters, digits and
  ``_``; anything else must be quoted (``"Task timed out"``, a backslash escapes ``"`` and ``\\``).
  Terms are AND-ed; ``-term`` excludes; ``?term`` starts an alternative, and the plain and ``-`` terms
  after it belong to it (``?ERROR ?WARN``; AWS's CDK writes a group of terms as ``?"A" "B" ?"C"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chaos.sandbox.extensions.filter_json import compile_json
from chaos.sandbox.extensions.filter_syntax import (
    UNCLOSED_BRACE,
    InvalidPattern,
    Matcher,
    UnsupportedPattern,
    invalid_characters,
    read_quoted,
)

_BARE_INVALID = re.compile(r"[^A-Za-z0-9_]")
REGEX = "regular expressions (%...%)"


@dataclass(frozen=True)
class _Term:
    prefix: str  # "", "?" or "-"
    text: str


def compile_pattern(pattern: str) -> Matcher:
    """The matcher of ``pattern``; raises :class:`~filter_syntax.PatternRefused` if it is refused."""
    text = pattern.strip()
    if not text:
        return lambda _: True
    if text.startswith("{"):
        if not text.endswith("}"):
            raise InvalidPattern(UNCLOSED_BRACE)
        return compile_json(text)
    if text.startswith("["):
        raise UnsupportedPattern("space-delimited patterns ([field, ...])")
    if text.startswith("%"):
        raise UnsupportedPattern(REGEX)
    return _compile_terms(_terms(text))


def _compile_terms(terms: list[_Term]) -> Matcher:
    if not any(term.prefix == "?" for term in terms):
        groups = [terms]
    elif terms[0].prefix != "?":
        raise UnsupportedPattern("plain or '-' terms before the first ?term")
    else:
        groups = []
        for term in terms:
            if term.prefix == "?":
                groups.append([])
            groups[-1].append(term)
    clauses = [
        (
            tuple(term.text for term in group if term.prefix != "-"),
            tuple(term.text for term in group if term.prefix == "-"),
        )
        for group in groups
    ]

    def matches(message: str) -> bool:
        return any(
            all(word in message for word in wanted) and not any(word in message for word in unwanted)
            for wanted, unwanted in clauses
        )

    return matches


def _terms(text: str) -> list[_Term]:
    terms: list[_Term] = []
    index = 0
    while index < len(text):
        if text[index].isspace():
            index += 1
            continue
        prefix = text[index] if text[index] in "?-" else ""
        index += len(prefix)
        if index == len(text) or text[index].isspace():
            raise UnsupportedPattern(f"a '{prefix}' apart from the term it applies to")
        word, index = _term(text, index)
        terms.append(_Term(prefix, word))
    return terms


def _term(text: str, index: int) -> tuple[str, int]:
    """The term at ``text[index]`` and the index after it."""
    if text[index] == '"':
        phrase, end = read_quoted(text, index)
        if not phrase:
            raise invalid_characters('""')
        if end < len(text) and not text[end].isspace():
            raise invalid_characters(text[end])
        return phrase, end
    if text[index] == "%":
        raise UnsupportedPattern(REGEX)
    end = index
    while end < len(text) and not text[end].isspace():
        end += 1
    word = text[index:end]
    if bad := _BARE_INVALID.search(word):
        raise invalid_characters(bad.group())
    return word, end
