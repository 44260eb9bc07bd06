"""Every fault class, found in this package's modules (each declares its class as a ``FaultClass``), and
what derives from them: the fault types a diagnosis may name and the order the rules brain checks them in.
Adding a class touches its declaration module, its rules check, its injector and scenario, and its tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

import supervisor.faults as faults_package
from mcp_server.contract.discovery import declarations
from supervisor.faults.declaration import FaultClass, FaultClassError

UNKNOWN: Final = "unknown"
UNKNOWN_DESCRIPTION: Final = "alone, when the evidence confirms no fault"


def _discover() -> Mapping[str, FaultClass]:
    found = declarations(faults_package, FaultClass, lambda fault: fault.name)
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
