"""The source no longer delivers to the function while it backs up."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import BACKLOG, MAPPING_CHANGE, PATH_STOPPED, SUBSCRIPTION_CHANGE

EVENT_SOURCE_STOPPED = FaultClass(
    name="event_source_stopped",
    description=(
        "the event source no longer delivers to the function while work backs up (its event source "
        "mapping disabled or deleted, a caller's subscription or notification removed)"
    ),
    corroboration=((PATH_STOPPED,), (BACKLOG, MAPPING_CHANGE, SUBSCRIPTION_CHANGE)),
    check="supervisor.diagnosis.rules.event_sources:check",
    order=85,
    precedence=15,
)
