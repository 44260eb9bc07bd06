"""A setting the function cannot work with."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ASYNC_SETTINGS, CONFIGURATION_CHANGE, QUEUE_CHANGE, SETTINGS

CONFIGURATION_ERROR = FaultClass(
    name="configuration_error",
    description="a handler, environment variable, runtime or setting the function cannot work with",
    corroboration=((SETTINGS, CONFIGURATION_CHANGE, ASYNC_SETTINGS, QUEUE_CHANGE),),
    check="supervisor.diagnosis.rules.configuration:check",
    order=70,
    precedence=10,
)
