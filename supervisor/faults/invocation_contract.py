"""The function answers, and its caller cannot use the answer."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import ANSWER_UNUSABLE

INVOCATION_CONTRACT = FaultClass(
    name="invocation_contract",
    description=(
        "The function answers but API Gateway cannot use the answer: a malformed Lambda proxy response, or "
        "its integration stopped waiting first"
    ),
    corroboration=((ANSWER_UNUSABLE,),),
    check="supervisor.diagnosis.rules.callers:check",
    order=88,
    precedence=85,  # late: only when no failure of the function itself explains the callers' errors
)
