"""The denied call an AWS error message shows: its action, resource, reason and the quoted words.

The message is IAM's (https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html:
"User: <arn> is not authorized to perform: <action> on resource: <arn> because no <type> policy allows the
<action> action"), whichever SDK carried it: boto3 prefixes it with "An error occurred (<code>) when calling
the <Op> operation: " (botocore/exceptions.py ClientError), the AWS SDK for JavaScript v3 gives the code as
the error's ``name`` (https://docs.aws.amazon.com/sdk-for-javascript/v3/developer-guide/the-response-object.html),
which the logs tool reads into the record's error detail and passes here as ``code``.
"""

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
    error_code: (
        str | None
    )  # "AccessDenied", "AccessDeniedException", ... from boto's prefix or the SDK's code
    quote: str  # the exact part of the message that shows the denial


_ACTION = r"[\w-]+:[\w*]+"
_POLICY_TYPE = r"[A-Za-z-]+(?: [A-Za-z-]+)*? (?:policy|boundary)"
_NOT_AUTHORIZED = re.compile(
    rf"(?:User: \S+ (?:is )?)?not authorized to perform: (?P<action>{_ACTION})"
    r'(?: on resource: (?:\\?"(?P<quoted>[^"\\]+)\\?"|(?P<bare>[^\s"]*[^\s".,;])))?'
    rf"(?: because no (?P<absent>{_POLICY_TYPE}) allows(?: the {_ACTION} action)?"
    rf"| with an explicit deny in (?:an? )?(?P<denier>{_POLICY_TYPE}))?"
)
DENIAL_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
_BOTO = re.compile(
    rf"(?:An error occurred )?\((?P<code>{'|'.join(sorted(DENIAL_CODES))})\) "
    r"when calling the (?P<operation>\w+) operation(?:: Access Denied\.?)?"
)


def parse_denial(message: str, code: str | None = None, operation: str | None = None) -> DeniedCall | None:
    """The denied call an AWS error message shows, or None when it shows none. Boto's "(AccessDenied) when
    calling the Op operation" alone gives the service-less action ``*:Op`` and no resource; so does an SDK
    error whose ``code`` is a denial's when its ``operation`` is known."""
    boto = _BOTO.search(message)
    denied = _NOT_AUTHORIZED.search(message)
    code = boto["code"] if boto is not None else code if code in DENIAL_CODES else None
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
            error_code=code,
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
    if code is not None and operation:
        return DeniedCall(f"*:{operation}", None, None, None, code, message.strip() or code)
    return None
