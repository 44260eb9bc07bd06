"""Invocations stopped by the configured timeout."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import DURATIONS

TIMEOUT = FaultClass(
    name="timeout",
    description="invocations run until the configured timeout stops them",
    corroboration=((DURATIONS,),),
    check="supervisor.diagnosis.rules.timeout:check",
    order=40,
    precedence=70,
)
