"""A fault class, declared once: the schema's fault types, the corroboration policy, the system prompt,
the docs and the rules brain's order of checks all read it.

The rules check is named by its import path, not imported: the schemas read the class names, and the
checks read the schemas.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from supervisor.faults.meanings import Meaning

_CLASS_NAME: Final = re.compile(r"[a-z][a-z_]{2,40}")
_REFERENCE: Final = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


class FaultClassError(ValueError):
    """A fault class declaration that cannot be used as it stands."""


@dataclass(frozen=True)
class Source:
    """Fields of one tool's answer that can back a fault class, and what their value must say to."""

    tool: str
    fields: re.Pattern[str]
    what: str  # the fields and what they must say, in words, for the prompt and the docs
    means: Meaning  # '' when the value cited says the fault, else why it does not
    services: frozenset[str] = frozenset()  # change events only: the event's service must be one of these


def source(tool: str, fields: str, what: str, means: Meaning, *services: str) -> Source:
    return Source(tool, re.compile(fields), what, means, frozenset(services))


Corroboration = tuple[tuple[Source, ...], ...]  # groups that must all be met; any source of a group meets it


@dataclass(frozen=True)
class FaultClass:
    name: str
    description: str  # one line for the model's system prompt and the docs
    corroboration: Corroboration
    check: str  # "module:function", the rules brain's check: function(Conversation) -> Verdict
    order: int  # its place in every listing: the schema's enum, the prompt, the docs
    precedence: int  # the rules brain checks in this order, and lists what it finds in it
    # Classes whose confirmed finding leaves this check out (a handler that cannot load is not a code error).
    unless: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problems = []
        if not _CLASS_NAME.fullmatch(self.name) or self.name == "unknown":
            problems.append(f"name {self.name!r} must be snake_case and not 'unknown'")
        if not self.description:
            problems.append("the description must not be empty")
        if not self.corroboration or not all(self.corroboration):
            problems.append("it needs at least one group of corroborating sources, none empty")
        if not _REFERENCE.fullmatch(self.check):
            problems.append(f"check {self.check!r} is not 'module:function'")
        if problems:
            raise FaultClassError(f"fault class {self.name!r}: {'; '.join(problems)}")

    def checker(self) -> Callable[[Any], Any]:
        module, _, name = self.check.partition(":")
        function: Callable[[Any], Any] = getattr(importlib.import_module(module), name)
        return function
