"""Choosing scenarios or cases by name, for the stage's command lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


def select_by_name(items: Sequence[T], requested: list[str] | None, what: str, listed: str = "") -> list[T]:
    """The ``items`` named in ``requested``, in that order (all of them when none is named). ValueError
    names the unknown ones, then ``listed`` (where they are listed), else every name to choose from."""
    by_name = {item.name: item for item in items}
    unknown = [name for name in requested or [] if name not in by_name]
    if unknown:
        raise ValueError(f"unknown {what}(s) {unknown}; {listed or 'choose from: ' + ', '.join(by_name)}")
    return [by_name[name] for name in requested] if requested else list(items)
