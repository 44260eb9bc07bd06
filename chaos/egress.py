"""Which security-group egress rules carry HTTPS: shared by the network fault and the local runtime."""

from __future__ import annotations

from typing import Any

HTTPS_PORT = 443


def carries_https(rule: dict[str, Any]) -> bool:
    """An egress rule (as EC2 describes it) covering tcp/443 towards some destination."""
    protocol = str(rule.get("IpProtocol"))
    covers_443 = protocol == "-1" or (
        protocol in ("tcp", "6") and rule.get("FromPort", 0) <= HTTPS_PORT <= rule.get("ToPort", 65535)
    )
    has_destination = (
        rule.get("IpRanges")
        or rule.get("Ipv6Ranges")
        or rule.get("PrefixListIds")
        or rule.get("UserIdGroupPairs")
    )
    return covers_443 and bool(has_destination)


def allows_https_egress(group: dict[str, Any]) -> bool:
    return any(carries_https(rule) for rule in group.get("IpPermissionsEgress", []))
