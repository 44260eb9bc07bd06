"""Every fault class, found in this package's modules (each declares its class as a ``FaultClass``), and
what derives from them: the fault types a diagnosis may name and the order the rules brain checks them in.
Adding a class touches its declaration module, its rules check, its injector and scenario, and its tests.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

import supervisor.faults as faults_package
from supervisor.faults.declaration import FaultClass, FaultClassError

UNKNOWN: Final = "unknown"
UNKNOWN_DESCRIPTION: Final = "alone, when the evidence confirms no fault"


def _discover() -> Mapping[str, FaultClass]:
    found: dict[str, FaultClass] = {}
    for module in pkgutil.iter_modules(faults_package.__path__):
        if module.name == __name__.rpartition(".")[2]:
            continue
        namespace = vars(importlib.import_module(f"{faults_package.__name__}.{module.name}"))
        for fault in (value for value in namespace.values() if isinstance(value, FaultClass)):
            if found.setdefault(fault.name, fault) is not fault:
                raise FaultClassError(f"two fault classes are named {fault.name!r} (one in {module.name})")
    unknown = {name for fault in found.values() for name in fault.unless} - set(found)
    if unknown:
        raise FaultClassError(f"'unless' names classes that do not exist: {', '.join(sorted(unknown))}")
    ordered = sorted(found.values(), key=lambda fault: (fault.order, fault.name))
    return MappingProxyType({fault.name: fault for fault in ordered})


FAULT_CLASSES: Final[Mapping[str, FaultClass]] = _discover()
FAULT_TYPES: Final[tuple[str, ...]] = (*FAULT_CLASSES, UNKNOWN)
BY_PRECEDENCE: Final[tuple[FaultClass, ...]] = tuple(
    sorted(FAULT_CLASSES.values(), key=lambda fault: (fault.precedence, fault.name))
)

if TYPE_CHECKING:
    FaultType = str
else:
    FaultType = Literal[FAULT_TYPES]
