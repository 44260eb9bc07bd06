"""The denied call an AWS error message shows: its action, resource, reason and the quoted words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class DeniedCall:
    action: str  # "s3:GetObject", or "*:GetObject" when only the operation is known
    resource: str | None
    reason: Literal["explicit_deny", "no_allow"] | None
    policy_type: str | None  # "identity-based policy", "permissions boundary", ... as the message says
    error_code: str | None  # "AccessDenied", "AccessDeniedException", ... when boto's prefix is there
    quote: str  # the exact part of the message that shows the denial


_ACTION = r"[\w-]+:[\w*]+"
_POLICY_TYPE = r"[A-Za-z-]+(?: [A-Za-z-]+)*? (?:policy|boundary)"
_NOT_AUTHORIZED = re.compile(
    rf"(?:User: \S+ (?:is )?)?not authorized to perform: (?P<action>{_ACTION})"
    r'(?: on resource: (?:\\?"(?P<quoted>[^"\\]+)\\?"|(?P<bare>[^\s"]*[^\s".,;])))?'
    rf"(?: because no (?P<absent>{_POLICY_TYPE}) allows(?: the {_ACTION} action)?"
    rf"| with an explicit deny in (?:an? )?(?P<denier>{_POLICY_TYPE}))?"
)
_BOTO = re.compile(
    r"(?:An error occurred )?\((?P<code>AccessDenied|AccessDeniedException|UnauthorizedOperation)\) "
    r"when calling the (?P<operation>\w+) operation(?:: Access Denied\.?)?"
)


def parse_denial(message: str) -> DeniedCall | None:
    """The denied call an AWS error message shows, or None when it shows none. Boto's "(AccessDenied) when
    calling the Op operation" alone gives the service-less action ``*:Op`` and no resource."""
    boto = _BOTO.search(message)
    denied = _NOT_AUTHORIZED.search(message)
    if denied is not None:
        start = denied.start()
        if boto is not None and boto.end() <= start and not message[boto.end() : start].strip(": "):
            start = boto.start()
        absent, denier = denied["absent"], denied["denier"]
        return DeniedCall(
            action=denied["action"],
            resource=denied["quoted"] or denied["bare"],
            reason="explicit_deny" if denier else "no_allow" if absent else None,
            policy_type=denier or absent,
            error_code=boto["code"] if boto is not None else None,
            quote=message[start : denied.end()],
        )
    if boto is not None:
        return DeniedCall(
            action=f"*:{boto['operation']}",
            resource=None,
            reason=None,
            policy_type=None,
            error_code=boto["code"],
            quote=boto[0],
        )
    return None
