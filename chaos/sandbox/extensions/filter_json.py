"""JSON filter patterns: ``{ $.level = "ERROR" && ($.latency > 500 || $.user.id = 1) }``.

As AWS documents them: a selector ``$.a.b[0]`` (properties of letters, digits, ``-`` and ``_``; an
index follows a property); ``=`` and ``!=`` with a string, quoted or not, whose leading or trailing
``*`` is a wildcard (``*`` alone: any value); ``= != < <= > >=`` with a number (sign, decimals,
exponent); ``IS TRUE``, ``IS FALSE``, ``IS NULL``, ``NOT EXISTS``; ``&&`` over ``||``, parentheses.
A comparison applies only where the selector reaches a string or a number ("if it points to an array
or object, the filter will not be applied"), so ``!=`` does not match a missing property. Only events
whose whole message is a JSON object are matched; a JSON pattern never matches any other event.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaos.sandbox.extensions.filter_syntax import (
    INVALID,
    InvalidPattern,
    Matcher,
    UnsupportedPattern,
    invalid_characters,
    read_quoted,
    wildcard,
)

Predicate = Callable[[dict[str, Any]], bool]
Step = str | int

_SELECTOR = re.compile(r"\$(?:\.[A-Za-z0-9_-]+(?:\[\d+\])*)+")
_SELECTOR_CHARS = re.compile(r"\$[.\[\]A-Za-z0-9_-]*")
_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d+)\]")
_WORD = re.compile(r"[A-Za-z0-9_.*+-]+")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_OPERATORS = ("!=", "<=", ">=", "=", "<", ">")  # longest first
_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_ENDS_SELECTOR = frozenset(" \t\r\n)=!<>&|")
_MISSING = object()


@dataclass(frozen=True)
class _Token:
    kind: str  # "(", ")", "&&", "||", "op", "selector", "word", "string"
    text: str


def compile_json(pattern: str) -> Matcher:
    """The matcher of ``pattern``, which starts with ``{`` and ends with ``}``."""
    parser = _Parser(_tokens(pattern[1:-1]))
    predicate = parser.expression()
    if parser.index != len(parser.tokens):
        raise InvalidPattern(INVALID)

    def matches(message: str) -> bool:
        if not message.lstrip().startswith("{"):
            return False
        try:
            root = json.loads(message)
        except ValueError:
            return False
        return isinstance(root, dict) and predicate(root)

    return matches


def _tokens(body: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char.isspace():
            index += 1
        elif char in "()":
            tokens.append(_Token(char, char))
            index += 1
        elif body.startswith(("&&", "||"), index):
            tokens.append(_Token(body[index : index + 2], body[index : index + 2]))
            index += 2
        elif char == '"':
            text, index = read_quoted(body, index)
            tokens.append(_Token("string", text))
        elif char == "$":
            token, index = _selector(body, index)
            tokens.append(token)
        elif char == "%":
            raise UnsupportedPattern("regular expressions (%...%)")
        elif op := next((o for o in _OPERATORS if body.startswith(o, index)), None):
            tokens.append(_Token("op", op))
            index += len(op)
        elif word := _WORD.match(body, index):
            tokens.append(_Token("word", word.group()))
            index = word.end()
        else:
            raise invalid_characters(char)
    return tokens


def _selector(body: str, index: int) -> tuple[_Token, int]:
    raw = _SELECTOR_CHARS.match(body, index)
    assert raw is not None  # the pattern matches "$" at least
    end = raw.end()
    if end < len(body) and body[end] not in _ENDS_SELECTOR:
        raise invalid_characters(raw.group() + body[end])
    if not _SELECTOR.fullmatch(raw.group()):
        raise InvalidPattern(INVALID)
    return _Token("selector", raw.group()), end


class _Parser:
    """Recursive descent: expression := conjunction ('||' conjunction)*; conjunction := operand
    ('&&' operand)*; operand := '(' expression ')' | condition."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens, self.index = tokens, 0

    def _peek(self) -> str | None:
        return self.tokens[self.index].kind if self.index < len(self.tokens) else None

    def _take(self, *kinds: str) -> _Token:
        if self._peek() not in kinds:
            raise InvalidPattern(INVALID)
        self.index += 1
        return self.tokens[self.index - 1]

    def expression(self) -> Predicate:
        terms = [self._conjunction()]
        while self._peek() == "||":
            self._take("||")
            terms.append(self._conjunction())
        return terms[0] if len(terms) == 1 else lambda root: any(term(root) for term in terms)

    def _conjunction(self) -> Predicate:
        factors = [self._operand()]
        while self._peek() == "&&":
            self._take("&&")
            factors.append(self._operand())
        return factors[0] if len(factors) == 1 else lambda root: all(factor(root) for factor in factors)

    def _operand(self) -> Predicate:
        if self._peek() == "(":
            self._take("(")
            inner = self.expression()
            self._take(")")
            return inner
        return self._condition()

    def _condition(self) -> Predicate:
        path = _path(self._take("selector").text)
        after = self._take("op", "word")
        if after.kind == "op":
            return _comparison(path, after.text, self._take("word", "string"))
        keyword = (after.text, self._take("word").text)
        tests: dict[tuple[str, str], Callable[[object], bool]] = {
            ("IS", "TRUE"): lambda value: value is True,
            ("IS", "FALSE"): lambda value: value is False,
            ("IS", "NULL"): lambda value: value is None,
            ("NOT", "EXISTS"): lambda value: value is _MISSING,
        }
        if keyword not in tests:
            raise InvalidPattern(INVALID)
        test = tests[keyword]
        return lambda root: test(_resolve(root, path))


def _comparison(path: list[Step], op: str, value: _Token) -> Predicate:
    number = float(value.text) if value.kind == "word" and _NUMBER.fullmatch(value.text) else None
    if op in _NUMERIC:
        if number is None:
            raise InvalidPattern(INVALID)
        compare, bound = _NUMERIC[op], number

        def compared(root: dict[str, Any]) -> bool:
            found = _number(_resolve(root, path))
            return found is not None and compare(found, bound)

        return compared
    text_matches = wildcard(value.text)

    def equal(found: object) -> bool:
        if number is not None and (found_number := _number(found)) is not None:
            return found_number == number
        return text_matches(found if isinstance(found, str) else json.dumps(found))

    if op == "=":
        return lambda root: _is_value(found := _resolve(root, path)) and equal(found)
    return lambda root: _is_value(found := _resolve(root, path)) and not equal(found)


def _path(selector: str) -> list[Step]:
    return [int(index) if index else name for name, index in _STEP.findall(selector)]


def _resolve(root: dict[str, Any], path: list[Step]) -> object:
    node: object = root
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return _MISSING
            node = node[step]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return _MISSING
    return node


def _number(value: object) -> float | None:
    """``value`` if it is a JSON number (booleans are not); an integer too large for a float is infinite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _is_value(value: object) -> bool:
    """A value node: a string or a number (not an object, array, boolean or null)."""
    return isinstance(value, str) or _number(value) is not None
