"""Whether Lambda can decrypt a function's environment variables when it starts an execution environment.

A function whose ``KMSKeyArn`` names a customer managed key has its variables decrypted with that key.
The Invoke API answers HTTP 502 with one exception per way the key can fail
(https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html#API_Invoke_Errors): the key disabled
(``KMSDisabledException``), in a state Decrypt refuses, pending deletion among them
(``KMSInvalidStateException``; https://docs.aws.amazon.com/kms/latest/developerguide/key-state.html), gone
(``KMSNotFoundException``), or the execution role without a grant to decrypt with
(``KMSAccessDeniedException``). Such a request is an invocation error: no ``Invocations`` are recorded
(https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html) and the function's code
never runs, so its log group receives nothing.

When the decryption happens is not documented. The sandbox decrypts once per execution environment, at
its start, as it assumes the role: KMS says data already decrypted is unaffected by a key's later state
(https://docs.aws.amazon.com/kms/latest/developerguide/enabling-keys.html), so warm environments keep
working and the failures begin with the next cold start (a new version or setting, scaling out).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

_UNABLE = "Lambda was unable to decrypt the environment variables because"
_REFUSALS = {
    "Disabled": ("KMSDisabledException", f"{_UNABLE} the KMS key used is disabled."),
    "NotFound": ("KMSNotFoundException", f"{_UNABLE} the KMS key was not found."),
    "AccessDenied": ("KMSAccessDeniedException", f"{_UNABLE} KMS access was denied."),
}
_CHECK = " Please check the function's KMS key settings."


def refusal(kms: Any, key_arn: str | None, role_arn: str) -> tuple[str, str] | None:
    """``(error type, message)`` of the Invoke error, or None when the role can decrypt with the key.
    ``kms``: a KMS client of the Lambda service, which may describe the key and list its grants."""
    if not key_arn:
        return None  # Lambda's own key: nothing a customer can take away
    try:
        state = kms.describe_key(KeyId=key_arn)["KeyMetadata"]["KeyState"]
        pages = kms.get_paginator("list_grants").paginate(KeyId=key_arn)
        grants = [grant for page in pages for grant in page["Grants"]]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NotFoundException":
            raise
        return _refused("NotFound")
    if state == "Disabled":
        return _refused("Disabled")
    if state != "Enabled":
        invalid = f"{_UNABLE} the state of the KMS key used is not valid for Decrypt ({state}).{_CHECK}"
        return "KMSInvalidStateException", invalid
    if not any(g.get("GranteePrincipal") == role_arn and "Decrypt" in g["Operations"] for g in grants):
        return _refused("AccessDenied")
    return None


def _refused(kind: str) -> tuple[str, str]:
    error_type, message = _REFUSALS[kind]
    return error_type, message + _CHECK
