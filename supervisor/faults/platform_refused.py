"""The platform will not start the function's code."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ENVIRONMENT_KEY

PLATFORM_REFUSED = FaultClass(
    name="platform_refused",
    description=(
        "Lambda will not start the code: the environment variables' KMS key is disabled, pending deletion "
        "or not granted to the role"
    ),
    corroboration=((ENVIRONMENT_KEY,),),
    check="supervisor.diagnosis.rules.platform:check",
    order=87,
    precedence=12,  # after configuration_error: a setting that cannot work is checked first
)
