"""The role no longer allows a call the function makes, or the function's policy a caller's call."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import IAM_CHANGE, PATH_REFUSED, POLICIES

PERMISSION_LOSS = FaultClass(
    name="permission_loss",
    description=(
        "the role, or the function's policy for a caller, does not allow a call (a statement removed or "
        "narrowed, a Deny, a boundary)"
    ),
    corroboration=((POLICIES, IAM_CHANGE, PATH_REFUSED),),
    check="supervisor.diagnosis.rules.permissions:check",
    order=10,
    precedence=20,
)
