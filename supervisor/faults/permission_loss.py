"""The role no longer allows a call the function makes."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import IAM_CHANGE, PATH_REFUSED, POLICIES

PERMISSION_LOSS = FaultClass(
    name="permission_loss",
    description=(
        "the execution role does not allow an action the function calls, on that resource (a statement "
        "removed or narrowed, a Deny, a permissions boundary)"
    ),
    corroboration=((POLICIES, IAM_CHANGE, PATH_REFUSED),),
    check="supervisor.diagnosis.rules.permissions:check",
    order=10,
    precedence=20,
)
