"""Invocations killed at the configured memory size."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import MEMORY

OUT_OF_MEMORY = FaultClass(
    name="out_of_memory",
    description="invocations use all the configured memory and the runtime is killed",
    corroboration=((MEMORY,),),
    check="supervisor.diagnosis.rules.memory:check",
    order=50,
    precedence=60,
)
