"""The subset of CloudWatch metric math that sandbox alarms evaluate, parsed without ``eval``.

Supported: numbers, query ids, ``+ - * /``, unary ``-``, comparisons ``> >= < <= == !=`` (1 or 0),
``AND``/``&&``, ``OR``/``||``, ``NOT``/``!``, ``IF(condition, a[, b])``, ``FILL(series, value)`` and
parentheses. A time series is a mapping from period start (epoch seconds) to value. As in CloudWatch,
an operation on two series yields a value only where both have one; a series with a scalar applies the
scalar at every point; ``FILL`` supplies a value at every period of the query range. Division by zero
yields no value. Anything else is rejected with :class:`MetricMathError`.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Series = dict[int, float]
Value = float | Series


class MetricMathError(ValueError):
    """An expression outside the supported subset, or one that cannot be evaluated."""


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]


Node = Number | Ref | Unary | Binary | Call

_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>>=|<=|==|!=|&&|\|\||[-+*/()<>!,]))"
)
_FUNCTIONS = {"IF": (2, 3), "FILL": (2, 2)}
_KEYWORDS = {"AND": "&&", "OR": "||", "NOT": "!"}
_COMPARISONS = ("==", "!=", ">=", "<=", ">", "<")
_BINARY: dict[str, Callable[[float, float], float | None]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": lambda a, b: None if b == 0 else a / b,
    "==": lambda a, b: float(a == b),
    "!=": lambda a, b: float(a != b),
    ">=": lambda a, b: float(a >= b),
    "<=": lambda a, b: float(a <= b),
    ">": lambda a, b: float(a > b),
    "<": lambda a, b: float(a < b),
    "&&": lambda a, b: float(bool(a) and bool(b)),
    "||": lambda a, b: float(bool(a) or bool(b)),
}


def _tokenize(expression: str) -> list[tuple[str, str, int]]:
    tokens: list[tuple[str, str, int]] = []
    position = 0
    while expression[position:].strip():
        match = _TOKEN.match(expression, position)
        if match is None:
            where = len(expression) - len(expression[position:].lstrip())
            raise MetricMathError(
                f"unsupported syntax {expression[where]!r} at position {where} of {expression!r}"
            )
        kind = match.lastgroup or ""
        text = match.group(kind)
        if kind == "name" and text in _KEYWORDS:
            kind, text = "op", _KEYWORDS[text]
        tokens.append((kind, text, match.start(kind)))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tokens = _tokenize(expression)
        self.index = 0

    def _peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def _fail(self, what: str) -> MetricMathError:
        where = self.tokens[self.index][2] if self.index < len(self.tokens) else len(self.expression)
        return MetricMathError(f"{what} at position {where} of {self.expression!r}")

    def _take(self, expected: str | None = None) -> tuple[str, str, int]:
        if self.index >= len(self.tokens) or (expected and self.tokens[self.index][1] != expected):
            raise self._fail(f"expected {expected!r}" if expected else "unexpected end")
        self.index += 1
        return self.tokens[self.index - 1]

    def parse(self) -> Node:
        node = self._binary(0)
        if self.index < len(self.tokens):
            raise self._fail(f"unexpected {self._peek()!r}")
        return node

    _LEVELS: tuple[tuple[str, ...], ...] = (("||",), ("&&",), _COMPARISONS, ("+", "-"), ("*", "/"))

    def _binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self._unary()
        if self._LEVELS[level] == _COMPARISONS and self._peek() == "!":  # NOT binds looser than comparisons
            self._take()
            return Unary("!", self._binary(level))
        node = self._binary(level + 1)
        while self._peek() in self._LEVELS[level]:
            op = self._take()[1]
            node = Binary(op, node, self._binary(level + 1))
        return node

    def _unary(self) -> Node:
        if self._peek() == "-":
            self._take()
            return Unary("-", self._unary())
        return self._primary()

    def _primary(self) -> Node:
        kind, text, _ = self._take()
        if kind == "number":
            return Number(float(text))
        if text == "(":
            node = self._binary(0)
            self._take(")")
            return node
        if kind != "name":
            self.index -= 1
            raise self._fail(f"unexpected {text!r}")
        if self._peek() != "(":
            return Ref(text)
        if text not in _FUNCTIONS:
            self.index -= 1
            raise self._fail(f"unsupported function {text} (supported: {', '.join(_FUNCTIONS)})")
        self._take("(")
        args = [self._binary(0)]
        while self._peek() == ",":
            self._take()
            args.append(self._binary(0))
        self._take(")")
        low, high = _FUNCTIONS[text]
        if not low <= len(args) <= high:
            raise MetricMathError(f"{text} takes {low} to {high} arguments, got {len(args)}")
        return Call(text, tuple(args))


@functools.lru_cache(maxsize=256)  # every alarm pass reads the same few expressions again
def parse(expression: str) -> Node:
    """The syntax tree of ``expression``; :class:`MetricMathError` says what is unsupported and where."""
    return _Parser(expression).parse()


def references(node: Node) -> set[str]:
    """The query ids an expression reads."""
    if isinstance(node, Ref):
        return {node.name}
    if isinstance(node, Unary):
        return references(node.operand)
    if isinstance(node, Binary):
        return references(node.left) | references(node.right)
    if isinstance(node, Call):
        return set().union(*(references(arg) for arg in node.args))
    return set()


def _combine(left: Value, right: Value, function: Callable[[float, float], float | None]) -> Value:
    if isinstance(left, float):
        if isinstance(right, float):
            result = function(left, right)
            if result is None:
                raise MetricMathError("division by zero between constants")
            return result
        pairs = {t: (left, v) for t, v in right.items()}
    elif isinstance(right, float):
        pairs = {t: (v, right) for t, v in left.items()}
    else:
        pairs = {t: (v, right[t]) for t, v in left.items() if t in right}
    results = {t: function(a, b) for t, (a, b) in pairs.items()}
    return {t: v for t, v in results.items() if v is not None}


def _at(value: Value | None, timestamp: int) -> float | None:
    if value is None or isinstance(value, float):
        return value
    return value.get(timestamp)


def _if(condition: Value, then: Value, otherwise: Value | None) -> Value:
    if isinstance(condition, float):
        return then if condition else (otherwise if otherwise is not None else {})
    chosen = {t: _at(then if c else otherwise, t) for t, c in condition.items()}
    return {t: v for t, v in chosen.items() if v is not None}


def evaluate(node: Node, data: Mapping[str, Value], periods: Sequence[int]) -> Value:
    """Evaluate ``node`` over ``periods`` (the query range) with query ids bound by ``data``."""
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Ref):
        if node.name not in data:
            raise MetricMathError(f"unknown id {node.name!r}")
        return data[node.name]
    if isinstance(node, Unary):
        operand = evaluate(node.operand, data, periods)
        negate: Callable[[float], float] = operator.neg if node.op == "-" else (lambda v: float(not v))
        return negate(operand) if isinstance(operand, float) else {t: negate(v) for t, v in operand.items()}
    if isinstance(node, Binary):
        left, right = evaluate(node.left, data, periods), evaluate(node.right, data, periods)
        return _combine(left, right, _BINARY[node.op])
    args = [evaluate(arg, data, periods) for arg in node.args]
    if node.function == "IF":
        return _if(args[0], args[1], args[2] if len(args) == 3 else None)
    series, filler = args
    if isinstance(series, float):
        return series
    filled = {t: series[t] if t in series else _at(filler, t) for t in periods}
    return {t: v for t, v in filled.items() if v is not None}


def evaluate_queries(
    expressions: Mapping[str, str], metrics: Mapping[str, Series], target: str, periods: Sequence[int]
) -> Series:
    """The series of query ``target``: a metric, or an expression over metrics and other expressions."""
    values: dict[str, Value] = dict(metrics)

    def resolve(query_id: str, chain: tuple[str, ...]) -> None:
        if query_id in values:
            return
        if query_id in chain:
            raise MetricMathError(f"expressions refer to each other in a cycle: {' -> '.join(chain)}")
        if query_id not in expressions:
            raise MetricMathError(f"unknown id {query_id!r}")
        node = parse(expressions[query_id])
        for name in sorted(references(node)):
            resolve(name, (*chain, query_id))
        values[query_id] = evaluate(node, values, periods)

    resolve(target, ())
    result = values[target]
    return dict.fromkeys(periods, result) if isinstance(result, float) else result
