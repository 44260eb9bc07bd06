"""The platform will not start the function's code."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ENVIRONMENT_KEY, FUNCTION_STATE

PLATFORM_REFUSED = FaultClass(
    name="platform_refused",
    description=(
        "Lambda will not start the code: its environment variables' KMS key is unusable, or it cannot "
        "connect the function to its VPC"
    ),
    corroboration=((ENVIRONMENT_KEY, FUNCTION_STATE),),
    check="supervisor.diagnosis.rules.platform:check",
    order=87,
    precedence=12,  # after configuration_error: a setting that cannot work is checked first
)
