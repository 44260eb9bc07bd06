"""Something the function calls is missing or failing."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ERRORS

DEPENDENCY_FAILURE = FaultClass(
    name="dependency_failure",
    description=(
        "a resource or service the function calls is missing or failing, while its role allows the call"
    ),
    corroboration=((ERRORS,),),
    check="supervisor.diagnosis.rules.dependencies:check",
    order=80,
    precedence=40,
)
