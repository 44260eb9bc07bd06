"""The function fills its ephemeral storage."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ERRORS, STORAGE

RESOURCE_EXHAUSTED = FaultClass(
    name="resource_exhausted",
    description="writes fail on a full /tmp (EphemeralStorage)",
    corroboration=((ERRORS,), (STORAGE,)),
    check="supervisor.diagnosis.rules.storage:check",
    order=55,
    precedence=65,
)
