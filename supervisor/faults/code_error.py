"""The function's own code fails, often after a deployment."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ERRORS

CODE_ERROR = FaultClass(
    name="code_error",
    description="an exception or init failure in the function's own code, including a bad deployment",
    corroboration=((ERRORS,),),
    check="supervisor.diagnosis.rules.code:check",
    order=60,
    precedence=80,
    unless=("configuration_error", "resource_exhausted"),
)
