"""Declarations found by their type in the modules of a package: a new module holding one is all it takes
to add it (the tool registry here, the fault-class registry in ``supervisor.faults``)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

T = TypeVar("T")


def declarations(package: ModuleType, kind: type[T], name: Callable[[T], str]) -> dict[str, T]:
    """Every ``kind`` value the modules of ``package`` hold, by ``name``; the same name twice is refused."""
    found: dict[str, T] = {}
    for module in pkgutil.iter_modules(package.__path__):
        for value in vars(importlib.import_module(f"{package.__name__}.{module.name}")).values():
            if isinstance(value, kind) and found.setdefault(name(value), value) is not value:
                raise ValueError(
                    f"two {kind.__name__} values are named {name(value)!r} (one in {module.name})"
                )
    return found
