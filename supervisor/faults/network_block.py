"""The VPC path cannot carry the function's traffic."""

from __future__ import annotations

from supervisor.faults.declaration import FaultClass
from supervisor.faults.sources import NETWORK_CHANGE, VERDICT

NETWORK_BLOCK = FaultClass(
    name="network_block",
    description=(
        "the VPC path (security groups, routes, NAT, network ACLs) cannot carry the function's traffic"
    ),
    corroboration=((VERDICT, NETWORK_CHANGE),),
    check="supervisor.diagnosis.rules.network:check",
    order=30,
    precedence=30,
)
