"""A setting the function cannot work with."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import LAMBDA_CHANGE, SETTINGS

CONFIGURATION_ERROR = FaultClass(
    name="configuration_error",
    description="a handler, environment variable, runtime or setting the function cannot work with",
    corroboration=((SETTINGS, LAMBDA_CHANGE),),
    check="supervisor.diagnosis.rules.configuration:check",
    order=70,
    precedence=10,
)
