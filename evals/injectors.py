"""The fault injectors a case can name: every ``Fault`` defined in a ``chaos.faults`` module (by its
``name``), and ``logs`` (hostile or flooding lines). New injector modules are found without a change here."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Protocol

import chaos.faults
from chaos.faults.calls import ApiCall
from chaos.faults.chaos import Chaos, Fault
from chaos.faults.logs import KINDS, inject_lines


class Injector(Protocol):
    @property
    def name(self) -> str: ...

    def inject(self, chaos: Chaos, function: str, params: dict[str, Any]) -> list[ApiCall]:
        """Break ``function``; returns the changing calls CloudTrail should list (data writes excluded)."""
        ...

    def restore(self, chaos: Chaos, function: str) -> bool:
        """Undo the injection; False when there was nothing saved to restore."""
        ...


@dataclass(frozen=True)
class FaultInjector:
    fault: Fault

    @property
    def name(self) -> str:
        return self.fault.name

    def inject(self, chaos: Chaos, function: str, params: dict[str, Any]) -> list[ApiCall]:
        first = len(chaos.calls)
        chaos.inject(self.fault, function, **params)
        return [call for call in chaos.calls[first:] if call.management]

    def restore(self, chaos: Chaos, function: str) -> bool:
        return chaos.restore(self.fault, function)


@dataclass(frozen=True)
class LogLinesInjector:
    """Lines written into the log group: data events (no CloudTrail entry) and nothing to restore."""

    name: str = "logs"

    def inject(self, chaos: Chaos, function: str, params: dict[str, Any]) -> list[ApiCall]:
        kind = params.get("kind", "prompt-injection")
        if kind not in KINDS:
            raise ValueError(f"logs: kind must be one of {', '.join(KINDS)}, not {kind!r}")
        inject_lines(chaos, function, kind, count=int(params.get("count", 2000)))
        return []

    def restore(self, chaos: Chaos, function: str) -> bool:
        return True


@dataclass
class Injectors:
    found: dict[str, Injector] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)  # module -> why it could not be imported

    def get(self, name: str) -> Injector:
        if name in self.found:
            return self.found[name]
        hint = f"; modules that failed to import: {self.broken}" if self.broken else ""
        raise LookupError(f"no injector named {name!r} (available: {', '.join(sorted(self.found))}){hint}")


def discover() -> Injectors:
    """Every injector in ``chaos.faults``, by name."""
    injectors = Injectors(found={"logs": LogLinesInjector()})
    for module_info in pkgutil.iter_modules(chaos.faults.__path__):
        module_name = f"{chaos.faults.__name__}.{module_info.name}"
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # another engineer's module mid-edit must not stop the others
            injectors.broken[module_name] = f"{type(error).__name__}: {error}"
            continue
        for value in vars(module).values():
            if isinstance(value, Fault):
                injectors.found.setdefault(value.name, FaultInjector(value))
    return injectors
