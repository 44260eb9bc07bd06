"""Requests refused for lack of concurrency."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import CONCURRENCY, CONCURRENCY_CHANGE, LIMIT, THROTTLES

THROTTLING = FaultClass(
    name="throttling",
    description=(
        "requests refused for lack of concurrency (reserved concurrency too low, or the account's limit)"
    ),
    corroboration=((THROTTLES,), (LIMIT, CONCURRENCY, CONCURRENCY_CHANGE)),
    check="supervisor.diagnosis.rules.throttling:check",
    order=20,
    precedence=50,
)
